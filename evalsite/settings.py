"""Settings for evalsite, read from environment variables.

Every knob has a safe default for a laptop (SQLite in the project folder, DEBUG on only when
asked); a bad value raises ImproperlyConfigured naming the variable. Variables may also be
kept in the project's `.env` file (`quickstart` writes one with a generated SECRET_KEY), so
every command works in a new shell and from cron; a variable set in the environment wins.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured
from django.utils.functional import lazy

from evalsite.cache import redis_cache
from runs import pricing as _pricing

BASE_DIR = Path(__file__).resolve().parent.parent


def read_env_file(path: Path) -> dict[str, str]:
    """`KEY=value` lines of an env file (blank lines, `#` comments and `export ` allowed;
    one pair of surrounding quotes stripped). A line that is none of these is an error."""
    found: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key.replace("_", "").isalnum():
            raise ImproperlyConfigured(f"{path}, line {number}: expected KEY=value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found[key] = value
    return found


# EVALSITE_ENV_FILE names another file, or "" for none (the test settings read none).
_env_file = os.environ.get("EVALSITE_ENV_FILE", str(BASE_DIR / ".env"))
EVALSITE_ENV_FILE = Path(_env_file) if _env_file else None
if EVALSITE_ENV_FILE is not None and EVALSITE_ENV_FILE.is_file():
    for _key, _value in read_env_file(EVALSITE_ENV_FILE).items():
        os.environ.setdefault(_key, _value)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for local development)"
        )
    SECRET_KEY = "evalsite-insecure-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Behind HTTPS (directly or via a proxy that sets X-Forwarded-Proto): cookies only over HTTPS.
EVALSITE_HTTPS = env_bool("EVALSITE_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = EVALSITE_HTTPS
if EVALSITE_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # HSTS: once a browser has seen the site over HTTPS it never tries plain HTTP again.
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a promise to browser vendors about every subdomain, for the owner
        # of the domain to make; not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

# Content-Security-Policy on every response: scripts only from this server (pages have no
# inline script; a template that needs one gives it `nonce="{{ request.csp_nonce }}"`).
# Inline styles stay allowed: plotly.js and the API's Swagger UI set them.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",  # serves the API docs' Swagger UI from static files, not a CDN
    "template_partials",
    "runs",
    "runs.search",  # app label "search": full-text search over the runs
    "grading.campaigns",
    "grading.alerts",
    "grading",
    "accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Near the outside, so its response step comes last, after every page (404s included)
    # is written: agents' bidirectional controls shown as <U+202E>, never obeyed.
    "evalsite.bidi.VisibleBidiControlsMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Login required for every page, except what a share link or EVALSITE_PUBLIC_READ opens.
    # Before CsrfViewMiddleware, which parses (and spools to disk) a body to find its token:
    # a visitor without an account is turned away unread.
    "accounts.middleware.AccessMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A number whose results answer to another number now: a 301 there (runs/views/moved.py).
    "runs.views.moved.MovedNumberMiddleware",
    # Only with DEBUG and EVALSITE_STYLED_404 (quickstart): the site's 404 page, not Django's.
    "evalsite.errors.StyledNotFoundMiddleware",
]
EVALSITE_STYLED_404 = env_bool("EVALSITE_STYLED_404", False)

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"
ASGI_APPLICATION = "evalsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.access",
                "runs.context_processors.generation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Persistent connections: a new PostgreSQL connection (and its SCRAM handshake) costs
        # 8-14 ms a request, more than a cached page takes to render (bench/README.md).
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
SUPPORTED_ENGINES = {"django.db.backends.sqlite3", "django.db.backends.postgresql"}
if DATABASES["default"]["ENGINE"] not in SUPPORTED_ENGINES:
    raise ImproperlyConfigured(
        f"DATABASE_URL names {DATABASES['default']['ENGINE']}; evalsite runs on SQLite "
        "(sqlite:///path) or PostgreSQL (postgres://user:password@host/name)"
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the dashboard read while an import or runevals writes.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The covering index's INCLUDE columns are for PostgreSQL; SQLite ignores them, which is
    # what W040 says on every command. Nothing to act on.
    SILENCED_SYSTEM_CHECKS = [*globals().get("SILENCED_SYSTEM_CHECKS", []), "models.W040"]

# Page data and the login throttle live in the cache: per process by default; with REDIS_URL
# in Redis, shared by every worker and replica (what several web replicas need).
# EVALSITE_CACHE=off turns caching off, e.g. to measure the uncached path.
REDIS_URL = os.environ.get("REDIS_URL", "")
if os.environ.get("EVALSITE_CACHE", "").lower() in {"off", "0", "false"}:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
elif REDIS_URL:
    # JSON, not Django's pickle: what Redis holds is never run (evalsite/cache.py).
    CACHES = {"default": redis_cache(REDIS_URL)}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("EVALSITE_STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js from the installed plotly package, so it always matches the figures we build.
    "evalsite.staticfinders.PlotlyJsFinder",
]

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "accounts:login"

# Anyone who can reach the site may read the dashboard (for a private network); writing still
# needs an account, and the API still needs a token or a session for writes.
EVALSITE_PUBLIC_READ = env_bool("EVALSITE_PUBLIC_READ", False)

# The site's address as people open it ("https://evals.example.com", a path prefix allowed):
# what the pull-request summaries written outside a request (runevals, importworkspace
# --summary) link to. Empty: those links are paths; the API's summaries use the request's host.
EVALSITE_SITE_URL = os.environ.get("EVALSITE_SITE_URL", "").strip().rstrip("/")
if EVALSITE_SITE_URL and not EVALSITE_SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"EVALSITE_SITE_URL must start with http:// or https://, got {EVALSITE_SITE_URL!r}"
    )

# Where `manage.py installharnesses` installs the agent CLIs of the npm registry (OpenCode,
# Codex, Cline, Gemini CLI) and where runevals looks for them.
EVALSITE_HARNESS_DIR = Path(
    os.environ.get("EVALSITE_HARNESS_DIR") or BASE_DIR / ".harnesses"
).resolve()

# Where runevals writes iteration folders (and where the sample lives once copied).
EVALSITE_WORKSPACE_DIR = Path(
    os.environ.get("EVALSITE_WORKSPACE_DIR") or BASE_DIR / "workspace"
).resolve()


def env_at_use(name: str) -> str:
    """`name` from the environment each time the setting is used, not once at start-up, as
    the Anthropic SDK reads it: code that sets it after Django is configured (a script or
    test driving call_command) is heard. A lazy string: read it with `str()`."""
    return lazy(lambda: os.environ.get(name, ""), str)()


# The Anthropic API runevals and regrade call (grading/anthropic_client.py builds the client;
# the claude-code harness's proxy holds the key). Nothing else reads these variables.
ANTHROPIC_API_KEY = env_at_use("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_at_use("ANTHROPIC_BASE_URL")

# The other APIs an agent CLI may speak (runevals --harness codex, cline: OpenAI's Responses
# and chat completions; gemini: Google's Gemini API). Only the API proxy reads them: the CLI
# gets a placeholder key. Unset base URLs mean the providers' own.
OPENAI_API_KEY = env_at_use("OPENAI_API_KEY")
OPENAI_BASE_URL = env_at_use("OPENAI_BASE_URL")
GEMINI_API_KEY = env_at_use("GEMINI_API_KEY")
GOOGLE_GEMINI_BASE_URL = env_at_use("GOOGLE_GEMINI_BASE_URL")

# runevals: default models, and how hard the Anthropic client retries before a run errors.
EVALSITE_AGENT_MODEL = os.environ.get("EVALSITE_AGENT_MODEL", "claude-sonnet-5-5")
EVALSITE_JUDGE_MODEL = os.environ.get("EVALSITE_JUDGE_MODEL", "claude-sonnet-5-5")
EVALSITE_API_MAX_RETRIES = env_int("EVALSITE_API_MAX_RETRIES", 6)
# Prices per million tokens over the shipped table (runs/pricing.py), as JSON:
# {"model": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}.
try:
    EVALSITE_PRICES = _pricing.parse_prices(os.environ.get("EVALSITE_PRICES", ""))
except _pricing.PriceError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# A run's disk quota: what its task folder (and the CLI's home) may hold in all, and in how
# many files; a command that grows it past either is stopped and the run is errored.
EVALSITE_RUN_DISK_BYTES = env_int("EVALSITE_RUN_DISK_BYTES", 2 * 1024**3)
EVALSITE_RUN_DISK_FILES = env_int("EVALSITE_RUN_DISK_FILES", 200_000)
EVALSITE_API_TIMEOUT = env_float("EVALSITE_API_TIMEOUT", 300.0)

# Where a run's files are kept for every machine: the `runs` storage. By default the
# workspace folder itself (one machine); EVALSITE_RUN_STORE names a shared directory (NFS…),
# or EVALSITE_RUN_STORE_BACKEND another Django storage, e.g. django-storages' S3Storage with
# its OPTIONS as JSON in EVALSITE_RUN_STORE_OPTIONS.
EVALSITE_RUN_STORE = os.environ.get("EVALSITE_RUN_STORE", "")
_run_store_backend = os.environ.get("EVALSITE_RUN_STORE_BACKEND", "")
if _run_store_backend:
    import json as _json

    try:
        _run_store_options = _json.loads(os.environ.get("EVALSITE_RUN_STORE_OPTIONS") or "{}")
    except ValueError as _exc:
        raise ImproperlyConfigured(f"EVALSITE_RUN_STORE_OPTIONS must be JSON: {_exc}") from None
    if not isinstance(_run_store_options, dict):
        raise ImproperlyConfigured("EVALSITE_RUN_STORE_OPTIONS must be a JSON object")
    STORAGES["runs"] = {"BACKEND": _run_store_backend, "OPTIONS": _run_store_options}
else:
    STORAGES["runs"] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(Path(EVALSITE_RUN_STORE or EVALSITE_WORKSPACE_DIR).resolve())},
    }

# runevals --queue: Celery over Redis. Late acknowledgement, so a run whose worker dies is
# delivered again (at once when a pool process dies; when the whole worker is lost, the sweep
# below sends it first), and one run at a time per worker slot, so runs spread over workers.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# An unacknowledged task is delivered again after this long: the broker's safety net, as a
# lost worker's run is sent again sooner by the sweep. Longer than the longest run, so that
# a run still playing is not delivered twice.
EVALSITE_QUEUE_VISIBILITY_TIMEOUT = env_int("EVALSITE_QUEUE_VISIBILITY_TIMEOUT", 4 * 3600)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": EVALSITE_QUEUE_VISIBILITY_TIMEOUT,
    # How often a worker looks for runs a lost worker left unacknowledged.
    "unacked_restore_interval": min(10, max(1, EVALSITE_QUEUE_VISIBILITY_TIMEOUT // 2)),
    "unacked_restore_throttle": 1,
}
# A running run's worker signals every EVALSITE_QUEUE_HEARTBEAT seconds, and every worker
# and `runevals --queue --wait` sweeps as often: a run silent for three signals is sent again
# and taken over by the worker it reaches (about 3 beats + a sweep: 2 minutes by default).
# A campaign with no run activity for EVALSITE_QUEUE_STALE_AFTER seconds no longer holds its
# skills' locks.
EVALSITE_QUEUE_HEARTBEAT = env_float("EVALSITE_QUEUE_HEARTBEAT", 30.0)
EVALSITE_QUEUE_STALE_AFTER = env_float("EVALSITE_QUEUE_STALE_AFTER", 3600.0)

# Limits on uploaded or imported archives (.zip / .tar.gz); exceeding one rejects the import.
EVALSITE_ARCHIVE_MAX_BYTES = env_int("EVALSITE_ARCHIVE_MAX_BYTES", 1024 * 1024 * 1024)
EVALSITE_ARCHIVE_MAX_FILES = env_int("EVALSITE_ARCHIVE_MAX_FILES", 200_000)
# Most entries git objects may hold for us from an untrusted repository (a skill folder's
# git baseline, a clone given to --history): in one tree, in one walk of a folder, in the
# folders a history changes. More stops that read with one line instead of growing memory.
EVALSITE_GIT_MAX_TREE_ENTRIES = env_int("EVALSITE_GIT_MAX_TREE_ENTRIES", 200_000)
# Largest archive POST /api/imports accepts, before it is even opened.
EVALSITE_UPLOAD_MAX_BYTES = env_int("EVALSITE_UPLOAD_MAX_BYTES", 512 * 1024 * 1024)
#: Where the import page keeps an uploaded archive between its preview and the import
#: (a folder all web servers share, behind several); the system's temporary folder if empty.
EVALSITE_UPLOAD_STAGING_DIR = os.environ.get("EVALSITE_UPLOAD_STAGING_DIR", "")
EVALSITE_UPLOAD_STAGING_SECONDS = env_int("EVALSITE_UPLOAD_STAGING_SECONDS", 3600)

# Alerts (grading/alerts/): when a runevals campaign regresses, fails or is stopped by its
# budget. Site-wide destinations here, a skill's own on /skills/<skill>/alerts/ (staff).
# Webhooks: comma-separated `slack:URL` or `json:URL` (a bare URL is Slack's if its host is
# hooks.slack.com); their URLs are secrets, shown as their host only. Links in messages are
# made from EVALSITE_SITE_URL. A link-local host (169.254.x.x: cloud metadata) is refused
# unless EVALSITE_ALERT_ALLOW_LINK_LOCAL.
EVALSITE_ALERT_WEBHOOKS = env_list("EVALSITE_ALERT_WEBHOOKS", [])
EVALSITE_ALERT_EMAILS = env_list("EVALSITE_ALERT_EMAILS", [])
EVALSITE_ALERT_TIMEOUT = env_float("EVALSITE_ALERT_TIMEOUT", 5.0)
EVALSITE_ALERT_ATTEMPTS = env_int("EVALSITE_ALERT_ATTEMPTS", 3)
EVALSITE_ALERT_ALLOW_LINK_LOCAL = env_bool("EVALSITE_ALERT_ALLOW_LINK_LOCAL", False)
# E-mail (alerts) through Django's mail settings: an SMTP server, or another EMAIL_BACKEND.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "evalsite@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
