"""Settings for the test suite: production settings with a throwaway secret key."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key")

from evalsite.settings import *  # noqa: E402, F403
