"""Settings for the test suite: production settings with a throwaway secret key."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key")
# The project's .env (written by quickstart) is for commands, not for the test suite.
os.environ.setdefault("EVALSITE_ENV_FILE", "")

from evalsite.settings import *  # noqa: E402, F403

# The manifest storage needs collectstatic; tests render templates without it.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Serve static files from the finders, as in development: there is no collectstatic output.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# The cache users hit, so every view test exercises it: a test that shows a stale page
# fails. tests/conftest.py empties it before each test.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "evalsite-tests",
    }
}

# Hashing a password with the production hasher takes ~0.3 s by design; tests log in
# hundreds of times, and what they test is the login, not the hash's cost.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
