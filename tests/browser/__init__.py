"""Pages in a real browser: Playwright driving Debian's Chromium against the live server."""

from __future__ import annotations

import os
from pathlib import Path

#: Playwright's own browser download does not work here, so the tests drive the system
#: Chromium; EVALSITE_CHROMIUM points them at another build.
CHROMIUM = Path(os.environ.get("EVALSITE_CHROMIUM") or "/usr/bin/chromium")
