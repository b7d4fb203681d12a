from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
application = get_wsgi_application()
# Everything loaded so far (Django, the apps, plotly's and the SDK's modules) lives as long as
# the process: out of the collector's sight, a full collection no longer walks it. The first
# view of a 6,000-run iteration allocates enough to set off such collections; without this
# its p95 was 268-312 ms at a p50 of 113-119 ms, with it 140 ms (bench/pages_bench.py).
gc.freeze()
