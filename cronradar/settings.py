"""CronRadar settings, read from environment variables (django-environ).

With no environment at all this is the *embedded default*: SQLite in ``data/``,
Celery tasks run eagerly, and ``manage.py serve`` runs the evaluator in-process.
Setting ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` gives the production shape:
web + Celery worker + Celery beat sharing one database. ``CRONRADAR_ENV=production``
is the one switch for a deployment: the SSRF guard on by default, secure cookies,
and a system check (``core.checks``) that refuses to start with the default
secret key, ``ALLOWED_HOSTS=*`` or the guard off.

Booleans are read strictly (true/false, yes/no, on/off, 1/0; anything else stops
the start with a message). Nothing here touches the disk.
"""
import math
import os
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ
from csp import constants as csp
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """A boolean environment variable; raises ImproperlyConfigured for anything
    that is not clearly true or false (a typo must not silently mean false)."""
    raw = env.str(name, default=str(default)).strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: use true or false")


def _env_number(name: str, default, cast):
    """A number from the environment, read strictly: ASCII, the whole value, finite
    (django-environ's casts drop characters they do not expect: ``3e2`` became 32).
    Raises ImproperlyConfigured naming the variable."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    text = raw.strip()
    try:
        if not text.isascii():
            raise ValueError
        value = cast(text)
    except ValueError:
        what = "a whole number" if cast is int else "a number"
        raise ImproperlyConfigured(f"{name}={raw!r}: not {what}") from None
    if cast is float and not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r}: not a finite number")
    return value


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int)


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float)


def env_rate(name: str, default: str) -> str:
    """A rate limit like ``600/min`` (``/s``, ``/min``, ``/hour``, ``/day``), or ""
    for none; raises ImproperlyConfigured for anything else."""
    raw = env.str(name, default=default).strip()
    count, _, period = raw.partition("/")
    if raw and not (count.isascii() and count.isdigit() and int(count) > 0
                    and period in ("s", "sec", "second", "m", "min", "minute", "h", "hour",
                                   "d", "day")):
        raise ImproperlyConfigured(f"{name}={raw!r}: use a rate like 600/min (or empty: none)")
    return raw


CRONRADAR_ENV = env.str("CRONRADAR_ENV", default="embedded")
if CRONRADAR_ENV not in ("embedded", "production"):
    raise ImproperlyConfigured(f"CRONRADAR_ENV={CRONRADAR_ENV!r}: use embedded or production")
PRODUCTION = CRONRADAR_ENV == "production"
DEFAULT_SECRET_KEY = "cronradar-embedded-insecure-key-change-me"
SECRET_KEY = env("SECRET_KEY", default=DEFAULT_SECRET_KEY)
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])  # old keys, while rotating
DEBUG = env_bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CRONRADAR_SECURE_COOKIES",
                                                      default=PRODUCTION)

INSTALLED_APPS = [
    "django.contrib.admin",
    "drf_spectacular_sidecar",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "cronradar",  # the `serve` command: the embedded default, both apps in one process
    "accounts",
    "monitors",
    "alerts",
    "insights",
]

MIDDLEWARE = [
    "monitors.views.PingHostMiddleware",  # CRONRADAR_PING_HOST's pings, before anything
    "core.edge.EdgeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.audit.ActorMiddleware",  # who acts, for the audit log; reset per request
    "django.contrib.messages.middleware.MessageMiddleware",
    # X-Frame-Options and the Content-Security-Policy on every answer of Django's views
    # (not WhiteNoise's static files, above; not the probes or pings, which go around
    # Django's middleware); docs/multi-tenant.md
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "cronradar.headers.NoncedCSPMiddleware",
]

ROOT_URLCONF = "cronradar.urls"
WSGI_APPLICATION = "cronradar.wsgi.application"

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
                "cronradar.dashboard.common.navigation",
            ],
        },
    },
]

DATA_DIR = Path(env("CRONRADAR_DATA_DIR", default=str(BASE_DIR / "data")))
if "DATABASE_URL" in env:
    DATABASES = {"default": env.db("DATABASE_URL")}
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    # A persistent connection broken by a database restart is replaced at the
    # start of the next request instead of failing it.
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    # psycopg prepares a statement once a connection has run it this many times,
    # for cursors that bind on the server: only core.sql's (the ping path);
    # Django's own cursors bind on the client and never prepare.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)
    # Nothing waits forever for a server that does not answer the connection
    # (libpq's connect_timeout, seconds; ?connect_timeout= in the URL overrides it).
    DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "cronradar.sqlite3",
            # Concurrent pings: WAL lets readers run beside the writer, IMMEDIATE
            # takes the write lock at BEGIN (no upgrade deadlocks), and writers
            # queue on the busy timeout instead of failing with "database is locked".
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # Tests use a file too (not shared-cache memory, which has table
            # locks and no busy timeout), so threads see production behaviour.
            "TEST": {"NAME": DATA_DIR / "test-cronradar.sqlite3"},
            # A connection per server thread, kept: opening one (and its PRAGMAs)
            # costs more than a ping.
            "CONN_MAX_AGE": 600,
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
# whitenoise serves the admin's static files: collected ones in production
# (docker/ runs collectstatic), straight from the apps otherwise.
WHITENOISE_USE_FINDERS = True

# No site may frame a page (above all the signed acknowledge link, which needs no
# sign-in): X-Frame-Options for old browsers, frame-ancestors for the others.
X_FRAME_OPTIONS = "DENY"
# The Content-Security-Policy (django-csp): everything from this origin only; scripts
# are static files (cronradar/static/) or carry the response's nonce
# (``{{ request.csp_nonce }}``), styles are static files only (no style="...", no
# <style>); images may also be data: URLs (Swagger UI's icons). docs/multi-tenant.md.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp.SELF],
        "script-src": [csp.SELF, csp.NONCE],
        "style-src": [csp.SELF],
        "img-src": [csp.SELF, "data:"],
        "object-src": [csp.NONE],
        "base-uri": [csp.NONE],
        "form-action": [csp.SELF],
        "frame-ancestors": [csp.NONE],
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.auth.ApiKeyAuthentication",
                                       "rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.tenancy.Access"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["accounts.auth.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "cronradar.schema.AutoSchema",
    "DEFAULT_METADATA_CLASS": "cronradar.metadata.Metadata",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
}
# the exact username first; then an email-shaped one without letter case (accounts.auth)
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend",
                           "accounts.auth.EmailCaseBackend"]
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "dashboard:login"
AUTH_PASSWORD_VALIDATORS = [{"NAME": f"django.contrib.auth.password_validation.{name}"} for name in
                            ("UserAttributeSimilarityValidator", "MinimumLengthValidator",
                             "CommonPasswordValidator", "NumericPasswordValidator")]
SPECTACULAR_SETTINGS = {
    "TITLE": "CronRadar API",
    "DESCRIPTION": "Monitors, runs, pings, channels and incidents. Durations are whole "
                   "seconds. Authenticate with `Authorization: Bearer <project API key>`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # drf-spectacular-sidecar: the docs page's assets, local
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,  # read-only fields stay out of request bodies
    # one name for each choice set used by several fields (the advisor's answer)
    "ENUM_NAME_OVERRIDES": {"ConcurrencyEnum": "monitors.models.Monitor.Concurrency",
                            "OverlapPolicyEnum": "insights.advisor.POLICIES"},
}

# --- Celery -----------------------------------------------------------------
REDIS_URL = env("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# A broker that hangs (accepts, never answers) or refuses must cost a publish
# seconds, not forever: without socket_timeout a publish waits on a dead
# connection for good. Beat and the worker keep retrying their connection (Celery's
# defaults); the deliver nudge after a commit is sent off the request thread
# without publish retries (alerts.senders), so pings never wait for Redis.
CELERY_BROKER_CONNECTION_TIMEOUT = 2  # seconds for one connection attempt
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 5}
# Two queues: "celery" (evaluator ticks, retention) and "deliveries" (the delivery
# engine's task). A worker started without -Q takes both; at scale, run one worker
# per queue (`-Q celery` and `-Q deliveries`) so a burst of notifications never
# delays evaluator ticks (docs/production.md).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {"celery": {}, "deliveries": {}}
CELERY_TASK_ROUTES = {"alerts.tasks.deliver": {"queue": "deliveries"}}

# --- Cache and rate limits ---------------------------------------------------
# The cache holds the rate-limit counters: Redis when REDIS_URL is set (shared by
# every process), else this process's memory (the embedded default is one process).
# Short socket timeouts: a Redis that hangs must cost a ping a fraction of a second
# (the ping rate limit then lets pings through: monitors.ratelimit.cache_down).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                      "LOCATION": REDIS_URL, "KEY_PREFIX": "cronradar",
                      "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}
          } if REDIS_URL else {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Requests per API key (or signed-in person), and pings per ping URL (off by
# default); over the limit: 429 with Retry-After. E.g. "600/min"; "" turns one off.
CRONRADAR_API_RATE = env_rate("CRONRADAR_API_RATE", "1200/min")
CRONRADAR_PING_RATE = env_rate("CRONRADAR_PING_RATE", "")
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["accounts.auth.CallerRateThrottle"]

# --- CronRadar --------------------------------------------------------------
# Seconds between evaluator ticks (Celery beat in production, a loop in `serve`).
CRONRADAR_TICK_SECONDS = env_float("CRONRADAR_TICK_SECONDS", default=0.5)
CELERY_BEAT_SCHEDULE = {
    "evaluate": {
        "task": "monitors.tasks.evaluate",
        "schedule": timedelta(seconds=CRONRADAR_TICK_SECONDS),
        "options": {"expires": max(CRONRADAR_TICK_SECONDS * 4, 2)},
    },
    # The ping counters (pings accepted and refused per monitor, in Redis) into the
    # database (monitors.usage).
    "flush-ping-usage": {
        "task": "monitors.tasks.flush_ping_usage",
        "schedule": timedelta(seconds=60),
        "options": {"expires": 60},
    },
    # Claim and send due deliveries (alerts.delivery): new ones, retries, and
    # ones whose sender died.
    "deliver": {
        "task": "alerts.tasks.deliver",
        "schedule": timedelta(seconds=CRONRADAR_TICK_SECONDS),
        "options": {"expires": max(CRONRADAR_TICK_SECONDS * 4, 2)},
    },
}
# Retention (monitors.retention, alerts.retention): each monitor keeps its newest
# CRONRADAR_KEEP_PINGS pings and CRONRADAR_KEEP_RUNS runs (older runs go once they
# are CRONRADAR_RUN_RETENTION_DAYS old); resolved incidents, with their events and
# notifications, go CRONRADAR_INCIDENT_RETENTION_DAYS after resolving. Pruned every
# CRONRADAR_PRUNE_INTERVAL seconds (0: never), at most CRONRADAR_PRUNE_BATCH rows a
# statement.
CRONRADAR_KEEP_PINGS = env_int("CRONRADAR_KEEP_PINGS", default=100)
CRONRADAR_KEEP_RUNS = env_int("CRONRADAR_KEEP_RUNS", default=100)
CRONRADAR_RUN_RETENTION_DAYS = env_float("CRONRADAR_RUN_RETENTION_DAYS", default=90)
CRONRADAR_INCIDENT_RETENTION_DAYS = env_float("CRONRADAR_INCIDENT_RETENTION_DAYS", default=365)
CRONRADAR_PRUNE_INTERVAL = env_float("CRONRADAR_PRUNE_INTERVAL", default=60)
CRONRADAR_PRUNE_BATCH = env_int("CRONRADAR_PRUNE_BATCH", default=500)
for _name, _low in (("CRONRADAR_KEEP_PINGS", 1), ("CRONRADAR_KEEP_RUNS", 1),
                    ("CRONRADAR_RUN_RETENTION_DAYS", 0), ("CRONRADAR_INCIDENT_RETENTION_DAYS", 0),
                    ("CRONRADAR_PRUNE_INTERVAL", 0), ("CRONRADAR_PRUNE_BATCH", 1)):
    if globals()[_name] < _low:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]}: use {_low} or more")
if CRONRADAR_PRUNE_INTERVAL:
    CELERY_BEAT_SCHEDULE["prune"] = {
        "task": "monitors.tasks.prune",
        "schedule": timedelta(seconds=CRONRADAR_PRUNE_INTERVAL),
        "options": {"expires": CRONRADAR_PRUNE_INTERVAL},
    }
# Public base URL used to build ping URLs shown in the API.
CRONRADAR_BASE_URL = env("CRONRADAR_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# A host name whose requests are all pings at the root path (/<uuid>, /<key>/<slug>,
# as hc-ping.com's URLs): monitors.views.PingRoute. Empty: none.
CRONRADAR_PING_HOST = env("CRONRADAR_PING_HOST", default="").strip().rstrip(".").lower()
if CRONRADAR_PING_HOST and not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?",
                                            CRONRADAR_PING_HOST):
    raise ImproperlyConfigured(f"CRONRADAR_PING_HOST={CRONRADAR_PING_HOST!r}: a host name, "
                               "like hc-ping.com (no scheme, port or path)")
if CRONRADAR_PING_HOST and urlsplit(CRONRADAR_BASE_URL).hostname == CRONRADAR_PING_HOST:
    raise ImproperlyConfigured(f"CRONRADAR_PING_HOST={CRONRADAR_PING_HOST!r} is the host of "
                               "CRONRADAR_BASE_URL: it answers only pings, so give it a name "
                               "of its own")
# Bytes of a ping's POST body that are stored; the rest is dropped and marked truncated.
CRONRADAR_PING_BODY_LIMIT = env_int("CRONRADAR_PING_BODY_LIMIT", default=100 * 1024)
# Behind a reverse proxy that sets X-Forwarded-For (docker/compose.yaml's nginx), a
# ping's client address is the last entry of that header. Only turn it on when
# clients cannot reach the web server except through that proxy.
CRONRADAR_TRUST_X_FORWARDED_FOR = env_bool("CRONRADAR_TRUST_X_FORWARDED_FOR", default=False)
if CRONRADAR_TRUST_X_FORWARDED_FOR:  # the same proxy says whether the client used https
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Outgoing notifications (webhooks, Slack, PagerDuty): see alerts.delivery.
# Seconds each HTTP operation of an attempt may take (connect, write, read).
CRONRADAR_DELIVERY_TIMEOUT = env_float("CRONRADAR_DELIVERY_TIMEOUT", default=5.0)
# Retryable failures are retried until a delivery is this many seconds old (6 h).
CRONRADAR_DELIVERY_MAX_AGE = env_float("CRONRADAR_DELIVERY_MAX_AGE", default=6 * 3600)
# An extra bound on attempts; 0: none (the age bounds retries).
CRONRADAR_DELIVERY_MAX_ATTEMPTS = env_int("CRONRADAR_DELIVERY_MAX_ATTEMPTS", default=0)
# Backoff between attempts: BACKOFF ** attempts seconds (jittered, at most 600).
CRONRADAR_DELIVERY_BACKOFF = env_float("CRONRADAR_DELIVERY_BACKOFF", default=2.0)
# A receiver's Retry-After is honoured up to this many seconds.
CRONRADAR_DELIVERY_RETRY_AFTER_CAP = env_float("CRONRADAR_DELIVERY_RETRY_AFTER_CAP",
                                               default=600.0)
# Attempts in flight per channel at most, and sender threads per process.
CRONRADAR_CHANNEL_CONCURRENCY = env_int("CRONRADAR_CHANNEL_CONCURRENCY", default=4)
CRONRADAR_DELIVERY_THREADS = env_int("CRONRADAR_DELIVERY_THREADS", default=32)
# Seconds a channel fails before it is announced (channel.failing to the project's
# other channels, an email to the organisation's admins): see alerts.health.
CRONRADAR_CHANNEL_FAILING_AFTER = env_int("CRONRADAR_CHANNEL_FAILING_AFTER", default=600)
# The SSRF guard (core.destinations): notifications reach public addresses only.
# On under CRONRADAR_ENV=production; off in the embedded default so local
# receivers work. CRONRADAR_ALLOWED_DESTINATIONS: hosts and networks (CIDR)
# allowed anyway, comma-separated.
CRONRADAR_BLOCK_PRIVATE_ADDRESSES = env_bool("CRONRADAR_BLOCK_PRIVATE_ADDRESSES",
                                             default=PRODUCTION)
CRONRADAR_ALLOWED_DESTINATIONS = env.list("CRONRADAR_ALLOWED_DESTINATIONS", default=[])
# Email notifications: EMAIL_URL (django-environ: smtp://user:pass@host:587,
# submission://… for TLS); the console by default, so the embedded default shows them.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
CRONRADAR_EMAIL_FROM = env("CRONRADAR_EMAIL_FROM", default="cronradar@localhost")
# Who may sign up at /signup/: closed (invitations only), open, or
# domain:example.com,other.org. A plain string (trimmed, lowercase: "Closed" reads
# == "closed"), parsed by accounts.signup (a malformed value stops the start: the
# check cronradar.E004).
CRONRADAR_SIGNUP = env.str("CRONRADAR_SIGNUP", default="closed").strip().lower()
# Flapping (alerts.flapping): more than this many incidents of a monitor in an hour,
# and the quiet time (seconds) after which it is stable again.
CRONRADAR_FLAPPING_INCIDENTS = env_int("CRONRADAR_FLAPPING_INCIDENTS", default=5)
CRONRADAR_FLAPPING_QUIET = env_int("CRONRADAR_FLAPPING_QUIET", default=3600)
# GET /api/v1/monitors/<id>/stats/ covers this many of the newest runs unless the
# request says otherwise (?runs=, 1-10000; insights.stats).
CRONRADAR_STATS_RUNS = env_int("CRONRADAR_STATS_RUNS", default=100)
if not 1 <= CRONRADAR_STATS_RUNS <= 10000:
    raise ImproperlyConfigured(f"CRONRADAR_STATS_RUNS={CRONRADAR_STATS_RUNS}: use 1 to 10000")
# Signed acknowledge/resolve links in notifications stay valid this many seconds.
CRONRADAR_LINK_MAX_AGE = env_int("CRONRADAR_LINK_MAX_AGE", default=24 * 3600)
# CronRadar's own liveness (monitors.liveness): every web process and the evaluator
# record that they are alive every CRONRADAR_LIVENESS_INTERVAL seconds (0: off);
# a silence of the web tier longer than CRONRADAR_OUTAGE_THRESHOLD seconds is an
# outage, and slots whose grace ended in it are recorded unknown, not missed.
CRONRADAR_LIVENESS_INTERVAL = env_float("CRONRADAR_LIVENESS_INTERVAL", default=1.0)
CRONRADAR_OUTAGE_THRESHOLD = env_float("CRONRADAR_OUTAGE_THRESHOLD", default=10.0)
CRONRADAR_PAGERDUTY_EVENTS_URL = env(
    "CRONRADAR_PAGERDUTY_EVENTS_URL", default="https://events.pagerduty.com/v2/enqueue"
)
# The overlap-policy advisor (GET /api/v1/monitors/<id>/advice/, insights.advisor):
# it replays the monitor's last CRONRADAR_ADVICE_RUNS finished runs and advises
# only from CRONRADAR_ADVICE_MIN_RUNS of them on.
CRONRADAR_ADVICE_RUNS = env_int("CRONRADAR_ADVICE_RUNS", default=100)
CRONRADAR_ADVICE_MIN_RUNS = env_int("CRONRADAR_ADVICE_MIN_RUNS", default=20)
if not 1 <= CRONRADAR_ADVICE_RUNS <= 10000:
    raise ImproperlyConfigured(f"CRONRADAR_ADVICE_RUNS={CRONRADAR_ADVICE_RUNS}: use 1 to 10000")
if not 1 <= CRONRADAR_ADVICE_MIN_RUNS <= CRONRADAR_ADVICE_RUNS:
    raise ImproperlyConfigured(f"CRONRADAR_ADVICE_MIN_RUNS={CRONRADAR_ADVICE_MIN_RUNS}: use 1 "
                               f"to CRONRADAR_ADVICE_RUNS ({CRONRADAR_ADVICE_RUNS})")

# --- Watching the watcher (docs/operations.md) -------------------------------
# GET /readyz (cronradar.health) fails the evaluator part when its last tick is
# older than CRONRADAR_READY_EVALUATOR_LAG seconds, and the deliveries part when the
# oldest delivery that could be claimed now has waited longer than
# CRONRADAR_READY_DELIVERY_LAG seconds. The watchdog uses the same two limits.
CRONRADAR_READY_EVALUATOR_LAG = env_float("CRONRADAR_READY_EVALUATOR_LAG", default=30.0)
CRONRADAR_READY_DELIVERY_LAG = env_float("CRONRADAR_READY_DELIVERY_LAG", default=300.0)
# /readyz and /metrics wait at most this many seconds for their database reads
# (run on a background thread, cronradar.guard); later: the database is
# "unreachable". 0: the reads run inline, unbounded (the tests do).
CRONRADAR_READY_TIMEOUT = env_float("CRONRADAR_READY_TIMEOUT", default=1.0)
# GET /metrics (cronradar.selfmetrics): readable with Authorization: Bearer
# <CRONRADAR_METRICS_TOKEN> (empty: no token works), or from the addresses and
# networks in CRONRADAR_METRICS_ALLOWED (comma-separated; loopback by default).
CRONRADAR_METRICS_TOKEN = env.str("CRONRADAR_METRICS_TOKEN", default="")
CRONRADAR_METRICS_ALLOWED = env.list("CRONRADAR_METRICS_ALLOWED",
                                     default=["127.0.0.0/8", "::1/128"])
# A Celery worker's own metrics on this port (prometheus_client's HTTP server);
# 0: off. Processes of one host share PROMETHEUS_MULTIPROC_DIR (the library's own
# variable) so that one scrape sees them all.
CRONRADAR_METRICS_PORT = env_int("CRONRADAR_METRICS_PORT", default=0)
# The outbound dead-man's switch (cronradar.watchdog): a Healthchecks-compatible
# ping URL, pinged every CRONRADAR_WATCHDOG_INTERVAL seconds while the evaluator is
# healthy, and <url>/fail with the reason when it is not. Empty: off.
CRONRADAR_WATCHDOG_URL = env.str("CRONRADAR_WATCHDOG_URL", default="").strip()
CRONRADAR_WATCHDOG_INTERVAL = env_float("CRONRADAR_WATCHDOG_INTERVAL", default=60.0)
if CRONRADAR_WATCHDOG_URL and not (urlsplit(CRONRADAR_WATCHDOG_URL).scheme in ("http", "https")
                                   and urlsplit(CRONRADAR_WATCHDOG_URL).hostname):
    raise ImproperlyConfigured(f"CRONRADAR_WATCHDOG_URL={CRONRADAR_WATCHDOG_URL!r}: use an "
                               "http:// or https:// ping URL, like https://hc-ping.com/<uuid> "
                               "(empty: off)")
for _name, _low in (("CRONRADAR_READY_EVALUATOR_LAG", 1), ("CRONRADAR_READY_DELIVERY_LAG", 1),
                    ("CRONRADAR_READY_TIMEOUT", 0),
                    ("CRONRADAR_METRICS_PORT", 0), ("CRONRADAR_WATCHDOG_INTERVAL", 1)):
    if globals()[_name] < _low:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]}: use {_low} or more")
# Log lines: "plain" (one escaped line each) or "json" (one JSON object a line with
# time, level, logger, message and the request / monitor / incident / delivery ids:
# core.logs).
CRONRADAR_LOG_FORMAT = env.str("CRONRADAR_LOG_FORMAT", default="plain").strip().lower()
if CRONRADAR_LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"CRONRADAR_LOG_FORMAT={CRONRADAR_LOG_FORMAT!r}: use plain or json")
# One access line per request through the application's own escaped logger
# ("cronradar.access": method, path, status, duration, request id) instead of the
# web server's (granian's --access-log writes client-controlled text unescaped).
CRONRADAR_ACCESS_LOG = env_bool("CRONRADAR_ACCESS_LOG", default=False)
# Optional error reporting and tracing (cronradar.observability; the
# "observability" extra): sentry-sdk when SENTRY_DSN is set, OpenTelemetry when
# OTEL_EXPORTER_OTLP_ENDPOINT is (the OTEL_* variables are the SDK's own).
SENTRY_DSN = env.str("SENTRY_DSN", default="").strip()
OTEL_EXPORTER_OTLP_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="").strip()

# --- Many tenants (docs/multi-tenant.md) -------------------------------------
# The plan (accounts.models.Plan, by name) of organisations made from now on;
# empty: none, so no plan limits (a self-hosted install). The plan must exist
# when an organisation is made (manage.py plan NAME ... creates it).
CRONRADAR_DEFAULT_PLAN = env.str("CRONRADAR_DEFAULT_PLAN", default="").strip()
# Audit entries (accounts.audit) go this many days after they were written, with
# the retention job's other rows.
CRONRADAR_AUDIT_RETENTION_DAYS = env_float("CRONRADAR_AUDIT_RETENTION_DAYS", default=90)
if CRONRADAR_AUDIT_RETENTION_DAYS < 1:
    raise ImproperlyConfigured(f"CRONRADAR_AUDIT_RETENTION_DAYS={CRONRADAR_AUDIT_RETENTION_DAYS}"
                               ": use 1 or more")
# HSTS when CRONRADAR_BASE_URL is https: its includeSubDomains and preload parts
# are opt-in, since both bind more than this service's own host name.
CRONRADAR_HSTS_INCLUDE_SUBDOMAINS = env_bool("CRONRADAR_HSTS_INCLUDE_SUBDOMAINS", default=False)
CRONRADAR_HSTS_PRELOAD = env_bool("CRONRADAR_HSTS_PRELOAD", default=False)
HTTPS = urlsplit(CRONRADAR_BASE_URL).scheme == "https"
# Served over https (behind a proxy: it says so in X-Forwarded-Proto, trusted with
# CRONRADAR_TRUST_X_FORWARDED_FOR): browsers are told to keep to https for a year,
# plain http is redirected (never a ping: a redirected ping is a lost one; the
# probes and /metrics answer ahead of Django), cookies go over https only.
CRONRADAR_SSL_REDIRECT = env_bool("CRONRADAR_SSL_REDIRECT", default=HTTPS)
SECURE_SSL_REDIRECT = CRONRADAR_SSL_REDIRECT
SECURE_HSTS_SECONDS = 365 * 24 * 3600 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS and CRONRADAR_HSTS_INCLUDE_SUBDOMAINS
SECURE_HSTS_PRELOAD = HTTPS and CRONRADAR_HSTS_PRELOAD
if HTTPS:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
# Off by choice (docs/multi-tenant.md, "HTTPS and HSTS"): check --deploy need not say so.
SILENCED_SYSTEM_CHECKS = [check for check, on in (
    ("security.W005", SECURE_HSTS_INCLUDE_SUBDOMAINS), ("security.W021", SECURE_HSTS_PRELOAD))
    if HTTPS and not on]
SECURE_REDIRECT_EXEMPT = [r"^ping/"]

# Every process (web, serve, Celery worker and beat) logs to stderr through one
# handler: the ids of core.logs on each record, CRONRADAR_LOG_FORMAT's formatter.
# Celery keeps its hands off (cronradar.celery: its setup_logging signal).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"ids": {"()": "core.logs.ContextFilter"},
                "no_traceback": {"()": "core.logs.NoTraceback"}},
    "formatters": {"plain": {"()": "core.logs.PlainFormatter"},
                   "json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["ids"],
                             "formatter": CRONRADAR_LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"},
                # a line each request, with the full URL: a webhook's or the
                # watchdog's path is a secret (a Slack hook URL, a check's UUID)
                "httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"},
                # the sender's connections (core.transport): a request line at DEBUG
                # and a header warning quote the path too
                "urllib3": {"level": "ERROR"},
                # any client can send a Host ALLOWED_HOSTS does not list: a line, not
                # a traceback, each
                "django.security.DisallowedHost": {"filters": ["no_traceback"]}},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
