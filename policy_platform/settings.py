"""Settings, all from environment variables.

With nothing configured the platform runs on SQLite with Celery tasks executed in-process; production
sets DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis) and runs worker processes.
"""

import base64
import hashlib
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PLATFORM_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be greater than zero, not {raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """A comma-separated list of IP networks (``10.0.0.0/8``) or addresses, checked here: a typo stops
    the start instead of silently allowing or trusting nothing."""
    import ipaddress

    networks = env_list(name, [])
    for item in networks:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP network or address") from None
    return networks


DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-local-runs"
# Secrets the platform stores and must read back (repository passwords and SSH keys, webhook secrets) are
# encrypted with these Fernet keys (policies_app/guards/encryption.py): the first encrypts, every one
# decrypts; `manage.py rotate_secret_keys` re-encrypts everything with the first. Production sets them (a
# system check stops migrate without them); debug runs derive one from the secret key.
SECRET_ENCRYPTION_KEYS = env_list("SECRET_ENCRYPTION_KEYS", [])
if not SECRET_ENCRYPTION_KEYS and DEBUG:
    SECRET_ENCRYPTION_KEYS = [
        base64.urlsafe_b64encode(hashlib.sha256(f"secret-encryption:{SECRET_KEY}".encode()).digest()).decode()
    ]
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_prometheus",
    "policies_app",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "policies_app.ops.request_ids.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "policies_app.middleware.ContentSecurityPolicyMiddleware",
    "policies_app.middleware.RequestBodyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "policies_app.access.GrantsPerRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

if not DEBUG:
    # Serves the collected static files (admin, API docs) from gunicorn, with no separate web server;
    # in development runserver serves them itself.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "whitenoise.middleware.WhiteNoiseMiddleware",
    )

ROOT_URLCONF = "policy_platform.urls"
WSGI_APPLICATION = "policy_platform.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=int(env_number("DATABASE_CONN_MAX_AGE", 60)),
        # A connection kept from before a database restart is tested before use, not failed on.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check that costs no round trip (policy_platform/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "policy_platform.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Approvals lock the deployment row; on SQLite that means waiting for the single writer.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # Readers do not wait for the writer (the web and the periodic process share the file).
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    # A file, not memory: tests that start a real server or worker process share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "web:deployment-queue"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "policies_app.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["policies_app.api.authentication.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "policies_app.api.parsers.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["policies_app.api.filters.ListFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "policies_app.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "policies_app.api.exceptions.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "policies_app.api.authentication.AnonRateThrottle",
        "policies_app.api.authentication.UserRateThrottle",
        "policies_app.api.authentication.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("API_THROTTLE_USER", "6000/minute"),
        "dry_run": os.environ.get("API_THROTTLE_DRY_RUN", "30/minute"),
    },
}

# Throttling counts and login lockouts need one store shared by every web process: Redis in production
# (CACHE_URL, e.g. redis://localhost:6379/1), this process's memory in the embedded default.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "policy_platform.redis_cache.KeptClientRedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# After this many wrong passwords for one user name (or from one address) within the window, signing in
# is refused for the rest of the window, even with the right password.
LOGIN_FAILURE_LIMIT = int(env_number("LOGIN_FAILURE_LIMIT", 10))
LOGIN_FAILURE_WINDOW_SECONDS = int(env_number("LOGIN_FAILURE_WINDOW_SECONDS", 900))

# Production hardening, switched by environment variables. Secure cookies and HSTS are on when debug is
# off; redirecting HTTP to HTTPS is opt-in, since behind a TLS-terminating proxy it needs the proxy header.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = int(env_number("DJANGO_SECURE_HSTS_SECONDS", 31536000)) if not DEBUG else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
# Behind a proxy that terminates TLS, tell Django how the proxy marks a request that came in over HTTPS.
if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The liveness probe is asked over plain HTTP from inside the host or container.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CONTENT_SECURITY_POLICY = os.environ.get(
    "DJANGO_CONTENT_SECURITY_POLICY",
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'self'",
)
SPECTACULAR_SETTINGS = {
    "TITLE": "Approval policy platform API",
    "DESCRIPTION": "Gate infrastructure deployments with approval policies written in Rego.",
    "VERSION": "1",
    # Swagger UI served from our own static files: no CDN, works on a closed network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "DeploymentStatusEnum": "policies_app.choices.DeploymentStatus",
        "DecisionEnum": "policies_app.choices.Decision",
        "DeploymentTypeEnum": "policies_app.choices.DeploymentType",
        "TemplateTypeEnum": "policies_app.choices.TemplateType",
        "PolicySourceKindEnum": [("inline", "inline"), ("repository", "repository")],
    },
}

# Celery: without a broker, tasks run in the calling process (the embedded default).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
# A worker killed mid-evaluation gives its task back, so the deployment is evaluated by another worker.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django integration closes the database connection around every task unless told to reuse
# it: a new PostgreSQL connection per evaluation costs several ms and a server process. Reused for this
# many tasks, and checked around each one as Django checks them around requests (policy_platform/celery.py).
CELERY_DB_REUSE_MAX = int(env_number("CELERY_DB_REUSE_MAX", 1000))
CELERY_RESULT_BACKEND = None
# A publish to a broker that is down fails fast: the deployment's row keeps the work, the sweeper resends.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Evaluations one worker runs at once (its prefork processes); by default one per core.
CELERY_WORKER_CONCURRENCY = int(env_number("CELERY_WORKER_CONCURRENCY", os.cpu_count() or 1))
# Beat remembers when each periodic task last ran in this file (not in the working directory).
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Periodic work, run by Celery beat in production and by `manage.py run_periodic` in the embedded setup.
EVALUATION_SWEEP_INTERVAL_SECONDS = env_number("EVALUATION_SWEEP_INTERVAL_SECONDS", 30)
CELERY_BEAT_SCHEDULE = {
    "resend-lost-evaluations": {
        "task": "policies_app.tasks.resend_lost_evaluations_task",
        "schedule": EVALUATION_SWEEP_INTERVAL_SECONDS,
    },
}

# Notifications and expiry (deployments that wait, emails, webhooks, one release at a time), owned by
# the product pages; every value from an environment variable (README, "Configuration").
# The platform's address as people reach it: links in emails and chat messages, the gate's default --url.
PLATFORM_URL = os.environ.get(
    "PLATFORM_URL", f"http://{os.environ.get('PLATFORM_ADDRESS') or '127.0.0.1:8000'}"
).rstrip("/")
# A deployment waiting for approval this long expires (a project may set its own, inherited below it).
DEPLOYMENT_PENDING_EXPIRY_HOURS = env_number("DEPLOYMENT_PENDING_EXPIRY_HOURS", 72)
# A released deployment the pipeline has not completed this long expires and frees its environment (a
# project may set its own, inherited below it).
DEPLOYMENT_RELEASE_EXPIRY_HOURS = env_number("DEPLOYMENT_RELEASE_EXPIRY_HOURS", 24)
# How long the approvals of a released deployment carry over to a new deployment of its environment with
# the same plan, policy revisions and policy data (0: never; a project may set its own, inherited below it).
APPROVAL_CARRY_OVER_HOURS = env_number("APPROVAL_CARRY_OVER_HOURS", 0)
# The longest a waiver may hold (deployments/waivers.py): a policy set aside for an emergency comes back.
WAIVER_MAX_HOURS = env_number("WAIVER_MAX_HOURS", 24)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
# Without an SMTP server the emails are printed on the console (the embedded default).
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = int(env_number("EMAIL_PORT", 25))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "policy-platform@localhost")
# The hour (UTC, 0-23) after which each day's digest is sent to users who chose one.
EMAIL_DIGEST_HOUR = int(os.environ.get("EMAIL_DIGEST_HOUR") or 8)
if not 0 <= EMAIL_DIGEST_HOUR <= 23:
    raise ImproperlyConfigured(f"EMAIL_DIGEST_HOUR must be an hour from 0 to 23, not {EMAIL_DIGEST_HOUR}")
# Bound on one delivery in all: connecting, sending and the receiver's answer.
WEBHOOK_TIMEOUT_SECONDS = env_number("WEBHOOK_TIMEOUT_SECONDS", 5)
# A failed delivery is retried after 10 s, 20 s, 40 s... (doubling), WEBHOOK_MAX_ATTEMPTS attempts in all.
WEBHOOK_RETRY_BASE_SECONDS = env_number("WEBHOOK_RETRY_BASE_SECONDS", 10)
WEBHOOK_MAX_ATTEMPTS = int(env_number("WEBHOOK_MAX_ATTEMPTS", 8))
# Approve from Slack (policies_app/notifications/slack.py): a Slack app's bot token (xoxb-..., scopes
# chat:write, users:read, users:read.email), its signing secret (verifies the interactions Slack posts to
# /integrations/slack/interactions/) and the channel the approval requests go to. Without all three, off.
SLACK_BOT_TOKEN = os.environ.get("SLACK_BOT_TOKEN", "")
SLACK_SIGNING_SECRET = os.environ.get("SLACK_SIGNING_SECRET", "")
SLACK_CHANNEL = os.environ.get("SLACK_CHANNEL", "")
# The workspace (team id, T...) whose members may decide; empty: any workspace the channel holds.
SLACK_TEAM_ID = os.environ.get("SLACK_TEAM_ID", "")
# The Web API's base address (Slack's own; tests point it at a local server).
SLACK_API_URL = os.environ.get("SLACK_API_URL", "https://slack.com/api/")
SLACK_TIMEOUT_SECONDS = env_number("SLACK_TIMEOUT_SECONDS", 5)
# Uploaded template archives are served at this path, to those who may see the template.
MEDIA_URL = "/media/"
NOTIFICATION_SWEEP_INTERVAL_SECONDS = env_number("NOTIFICATION_SWEEP_INTERVAL_SECONDS", 30)
# How often an open deployment page asks whether the deployment changed.
DEPLOYMENT_PAGE_POLL_SECONDS = env_number("DEPLOYMENT_PAGE_POLL_SECONDS", 3)
CELERY_BEAT_SCHEDULE.update(
    {
        "sweep-waiting-deployments": {
            "task": "policies_app.tasks.sweep_waiting_deployments_task",
            "schedule": NOTIFICATION_SWEEP_INTERVAL_SECONDS,
        },
        "resend-lost-notifications": {
            "task": "policies_app.tasks.resend_lost_notifications_task",
            "schedule": NOTIFICATION_SWEEP_INTERVAL_SECONDS,
        },
        "send-daily-digests": {
            "task": "policies_app.tasks.send_daily_digests_task",
            "schedule": 600,
        },
    }
)

# Policy evaluation
# regorus decides as OPA and is fast; opa is OPA 1.20 itself, slower on large plans (docs/opa-fidelity.md).
POLICY_ENGINE = os.environ.get("POLICY_ENGINE", "regorus")
if POLICY_ENGINE not in ("regorus", "opa"):
    raise ImproperlyConfigured(f"POLICY_ENGINE must be regorus or opa, not {POLICY_ENGINE!r}")
POLICY_EVALUATION_TIMEOUT_SECONDS = env_number("POLICY_EVALUATION_TIMEOUT_SECONDS", 10)
# The extra evaluation, on OPA, that names the rules that fired and the input values they read
# (deployments/explanations.py); past it the decision is recorded without an explanation.
POLICY_EXPLANATION_TIMEOUT_SECONDS = env_number("POLICY_EXPLANATION_TIMEOUT_SECONDS", 5)
POLICY_ENGINE_MEMORY_MB = int(env_number("POLICY_ENGINE_MEMORY_MB", 2048))
# An evaluation that is due and whose task was sent this long ago without a worker starting on it is
# sent again; one started longer ago than the lease is taken to belong to a dead worker.
EVALUATION_RESEND_AFTER_SECONDS = env_number("EVALUATION_RESEND_AFTER_SECONDS", 60)
IAC_EVALUATION_TIMEOUT_SECONDS = env_number("IAC_EVALUATION_TIMEOUT_SECONDS", 60)
EVALUATION_LEASE_SECONDS = env_number(
    "EVALUATION_LEASE_SECONDS", POLICY_EVALUATION_TIMEOUT_SECONDS + IAC_EVALUATION_TIMEOUT_SECONDS + 30
)
EVALUATION_RESEND_BATCH = 500
# Every request body (a deployment with its plan, a state, an archive) is refused with 413 above this.
REQUEST_SIZE_LIMIT_BYTES = int(env_number("REQUEST_SIZE_LIMIT_BYTES", 50 * 1024 * 1024))
# The middleware answers 413 itself; Django must not refuse first with a less helpful error.
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_SIZE_LIMIT_BYTES + 1024 * 1024
# The plan's text (`terraform show` output) a pipeline may send beside the plan: refused above this.
PLAN_TEXT_MAX_CHARACTERS = int(env_number("PLAN_TEXT_MAX_CHARACTERS", 2 * 1024 * 1024))
# JSON documents from outside (plans, states, inputs) nest at most this deep (json_limits.py).
JSON_MAX_DEPTH = int(env_number("JSON_MAX_DEPTH", 100))
# What one evaluation keeps of the policies' messages (cut in the engine worker, with a visible marker).
POLICY_MESSAGE_MAX_COUNT = int(env_number("POLICY_MESSAGE_MAX_COUNT", 100))  # per policy
POLICY_MESSAGE_MAX_LENGTH = int(env_number("POLICY_MESSAGE_MAX_LENGTH", 10_000))  # characters
POLICY_MESSAGE_MAX_TOTAL = int(env_number("POLICY_MESSAGE_MAX_TOTAL", 1_000))  # per evaluation

# Policies as code (docs/policies-as-code.md): policies synced from git repositories, their tests, and
# replays of drafts over recorded deployments.
POLICY_REPOSITORY_CACHE_DIR = os.environ.get(
    "POLICY_REPOSITORY_CACHE_DIR", str(VAR_DIR / "cache" / "policy-repositories")
)
POLICY_SYNC_INTERVAL_SECONDS = env_number("POLICY_SYNC_INTERVAL_SECONDS", 300)
POLICY_GIT_TIMEOUT_SECONDS = env_number("POLICY_GIT_TIMEOUT_SECONDS", 120)
POLICY_TEST_TIMEOUT_SECONDS = env_number("POLICY_TEST_TIMEOUT_SECONDS", 60)
# One sync of a folder (fetching, reading, checking and testing each policy that follows it): the sync
# stops between steps past it, git gets no more than what is left, and a Celery worker's soft time limit
# interrupts any step (its hard limit, 30 s later, ends the worker process).
POLICY_SYNC_TIME_LIMIT_SECONDS = env_number("POLICY_SYNC_TIME_LIMIT_SECONDS", 300)
POLICY_REPLAY_LIMIT = int(env_number("POLICY_REPLAY_LIMIT", 500))  # deployments replayed by default
POLICY_REPLAY_MAX_LIMIT = int(env_number("POLICY_REPLAY_MAX_LIMIT", 5000))
# Evaluations a replay runs at once, each in an engine worker: at most POLICY_ENGINE_WORKERS.
POLICY_REPLAY_CONCURRENCY = int(
    env_number("POLICY_REPLAY_CONCURRENCY", env_number("POLICY_ENGINE_WORKERS", 2))
)
# Retention of policy inputs (the plan, variables and views each evaluation saw): `manage.py purge_inputs`
# removes those older than this many days, keeping decisions, messages and the audit trail. Unset: kept
# forever.
EVALUATION_INPUT_RETENTION_DAYS = (
    env_number("EVALUATION_INPUT_RETENTION_DAYS", 1)
    if os.environ.get("EVALUATION_INPUT_RETENTION_DAYS")
    else None
)
EVALUATION_INPUT_PURGE_BATCH = int(env_number("EVALUATION_INPUT_PURGE_BATCH", 500))
# The policy editor checks the modules as one types (debounced): its own, generous, rate.
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["editor_check"] = os.environ.get(
    "API_THROTTLE_EDITOR_CHECK", "240/minute"
)
# The scheduled sync also makes good a push webhook's sync whose wake-up was lost (policies/git/push_webhooks.py).
CELERY_BEAT_SCHEDULE["sync-policy-repositories"] = {
    "task": "policies_app.tasks.sync_policy_repositories_task",
    "schedule": POLICY_SYNC_INTERVAL_SECONDS,
}
# A push to a branch other than the one policies follow is checked on its pull request: its changed
# policies replayed over this many recent deployments (policies/git/branch_checks.py).
POLICY_BRANCH_CHECK_REPLAY_LIMIT = int(env_number("POLICY_BRANCH_CHECK_REPLAY_LIMIT", 200))
# A branch check still queued (or its report still pending) that long after its task was sent is resent.
CELERY_BEAT_SCHEDULE["resend-lost-branch-checks"] = {
    "task": "policies_app.tasks.resend_lost_branch_checks_task",
    "schedule": EVALUATION_SWEEP_INTERVAL_SECONDS,
}
# Explanations of an evaluation still due EVALUATION_RESEND_AFTER_SECONDS after their task was sent are
# sent again (policies_app/deployments/explanations.py).
CELERY_BEAT_SCHEDULE["resend-due-explanations"] = {
    "task": "policies_app.tasks.resend_due_explanations_task",
    "schedule": EVALUATION_SWEEP_INTERVAL_SECONDS,
}
# A replay still queued EVALUATION_RESEND_AFTER_SECONDS after its task was sent is sent again.
CELERY_BEAT_SCHEDULE["resend-lost-replays"] = {
    "task": "policies_app.tasks.resend_lost_replays_task",
    "schedule": EVALUATION_SWEEP_INTERVAL_SECONDS,
}

# A template whose configuration views are still due EVALUATION_RESEND_AFTER_SECONDS after its task was
# sent is sent again (policies_app/projects/template_views.py).
CELERY_BEAT_SCHEDULE["resend-due-template-views"] = {
    "task": "policies_app.tasks.resend_due_template_views_task",
    "schedule": EVALUATION_SWEEP_INTERVAL_SECONDS,
}
# How often template repositories are looked at for a new commit on their revision (its views are then
# computed ahead of the next deployment).
TEMPLATE_SYNC_INTERVAL_SECONDS = env_number("TEMPLATE_SYNC_INTERVAL_SECONDS", 300)
CELERY_BEAT_SCHEDULE["sync-template-views"] = {
    "task": "policies_app.tasks.sync_template_views_task",
    "schedule": TEMPLATE_SYNC_INTERVAL_SECONDS,
}

# Outbound connections (policies_app/guards/egress.py): only public internet addresses, unless the
# operator allows more networks here (e.g. 10.0.0.0/8 for an internal Git server). Empty by default.
EGRESS_ALLOWED_NETWORKS = env_networks("EGRESS_ALLOWED_NETWORKS")
# Answers larger than this are failures (a webhook reads far less: it needs only the status).
EGRESS_MAX_RESPONSE_BYTES = int(env_number("EGRESS_MAX_RESPONSE_BYTES", 1024 * 1024))
# The proxies in front of the platform: only a request arriving from one of these has its
# X-Forwarded-For believed (throttles and sign-in lockouts count per client address). Empty by default:
# the address of the connection is the client's.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")

# The IaC engine's caches: parsed files by content hash, template checkouts by commit.
IAC_PARSE_CACHE_DIR = os.environ.get("IAC_PARSE_CACHE_DIR", str(VAR_DIR / "cache" / "parse"))
TEMPLATE_CHECKOUT_DIR = os.environ.get("TEMPLATE_CHECKOUT_DIR", str(VAR_DIR / "cache" / "templates"))
# Directories of this server under which a template's (or a policy repository's) files may be read in
# place, instead of from a remote git repository or an uploaded archive; by default none. The platform's
# own directories stay out of reach even under a listed root (policies_app/guards/file_sandbox.py).
LOCAL_REPOSITORY_ROOTS = env_list("LOCAL_REPOSITORY_ROOTS", [])
for _root in LOCAL_REPOSITORY_ROOTS:
    if not os.path.isabs(_root) or os.path.normpath(_root) == os.sep:
        raise ImproperlyConfigured(
            f"LOCAL_REPOSITORY_ROOTS lists absolute directories other than /, not {_root!r}"
        )
MEDIA_ROOT = VAR_DIR / "media"

# API tokens (users' and service accounts') expire: after API_TOKEN_DEFAULT_DAYS unless their maker asks
# for another lifetime, never after more than API_TOKEN_MAX_DAYS (accounts/tokens.py).
API_TOKEN_DEFAULT_DAYS = int(env_number("API_TOKEN_DEFAULT_DAYS", 90))
API_TOKEN_MAX_DAYS = int(env_number("API_TOKEN_MAX_DAYS", 365))
if API_TOKEN_DEFAULT_DAYS > API_TOKEN_MAX_DAYS:
    raise ImproperlyConfigured("API_TOKEN_DEFAULT_DAYS must not exceed API_TOKEN_MAX_DAYS")

# LOG_FORMAT=json: one JSON object per line (time, level, logger, message, request_id and the record's
# fields: deployment_id, decision, status...), one line per request and per task (policies_app/ops/request_ids.py).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "policies_app.ops.request_ids.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "policies_app.ops.request_ids.JsonFormatter"},
        "plain": {"format": "%(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": LOG_FORMAT}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# Single sign-on with the organisation's OpenID Connect provider (policies_app/accounts/sso.py), off
# unless OIDC_ISSUER and OIDC_CLIENT_ID are set: then passwords are the only way in (the embedded default).
# The endpoints come from the provider's discovery document unless set here. The provider is reached
# through the egress guard: a provider on a private network needs its network in EGRESS_ALLOWED_NETWORKS.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_USERINFO_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_JWKS_ENDPOINT", "")
OIDC_OP_LOGOUT_ENDPOINT = os.environ.get("OIDC_END_SESSION_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile groups")
# The claim that lists the user's groups at the provider (Okta: groups; Azure AD: groups, as ids).
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
# The name on the sign-in button.
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "your organisation's sign-in")
OIDC_TIMEOUT = env_number("OIDC_TIMEOUT_SECONDS", 10)
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
# Kept in the session for the provider's sign-out (id_token_hint); never shown.
OIDC_STORE_ID_TOKEN = True
OIDC_CREATE_USER = True
OIDC_AUTHENTICATE_CLASS = "policies_app.accounts.sso.SsoRequestView"
OIDC_CALLBACK_CLASS = "policies_app.accounts.sso.SsoCallbackView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
# SSO_REQUIRED: password sign-in is refused to everyone but superusers (the break-glass accounts).
SSO_REQUIRED = env_bool("SSO_REQUIRED", False)
if SSO_REQUIRED and not (OIDC_ISSUER and OIDC_RP_CLIENT_ID):
    raise ImproperlyConfigured("SSO_REQUIRED needs OIDC_ISSUER and OIDC_CLIENT_ID")
AUTHENTICATION_BACKENDS = [
    "policies_app.accounts.sso.PasswordBackend",
    "policies_app.accounts.sso.SsoBackend",
]

# SCIM 2.0 provisioning at /scim/v2/ (policies_app/accounts/scim.py): the identity provider calls it with
# "Authorization: Bearer <SCIM_BEARER_TOKEN>"; unset, it answers 404.
SCIM_BEARER_TOKEN = os.environ.get("SCIM_BEARER_TOKEN", "")
_PLATFORM_URL_PARTS = PLATFORM_URL.split("://", 1)
SCIM_SERVICE_PROVIDER = {
    "SCHEME": _PLATFORM_URL_PARTS[0],
    "NETLOC": _PLATFORM_URL_PARTS[-1].split("/", 1)[0],
    "AUTHENTICATION_SCHEMES": [
        {
            "type": "oauthbearertoken",
            "name": "OAuth Bearer Token",
            "description": "The SCIM_BEARER_TOKEN the operator gave the identity provider",
        }
    ],
    "USER_MODEL_GETTER": "policies_app.accounts.scim.scim_user_model",
    "USER_ADAPTER": "policies_app.accounts.scim.ScimUserAdapter",
    "GROUP_MODEL": "policies_app.models.identity.ScimGroup",
    "GROUP_ADAPTER": "policies_app.accounts.scim.ScimGroupAdapter",
    "USER_FILTER_PARSER": "policies_app.accounts.scim_filters.ScimUserFilter",
    "GROUP_FILTER_PARSER": "policies_app.accounts.scim_filters.ScimGroupFilter",
    "AUTH_CHECK_MIDDLEWARE": "policies_app.accounts.scim.ScimBearerAuth",
    "WWW_AUTHENTICATE_HEADER": 'Bearer realm="scim"',
}

# /metrics (policies_app/ops/metrics_view.py): readable with "Authorization: Bearer METRICS_TOKEN" or from
# METRICS_ALLOWED_NETWORKS; with neither, by nobody.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS")
# /readyz: how long each of its checks (database, broker, engine worker) may take.
READINESS_TIMEOUT_SECONDS = env_number("READINESS_TIMEOUT_SECONDS", 3)
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

# The audit log's hash chain (policies_app/accounts/audit_chain.py): its head is signed periodically with
# this Ed25519 private key (PEM, or the base64 of its 32 raw bytes); unset, no checkpoint is written.
# `manage.py audit_public_key` prints the public key to hand to whoever verifies an export.
AUDIT_SIGNING_KEY = os.environ.get("AUDIT_SIGNING_KEY", "")
AUDIT_CHECKPOINT_INTERVAL_SECONDS = env_number("AUDIT_CHECKPOINT_INTERVAL_SECONDS", 3600)
CELERY_BEAT_SCHEDULE["sign-audit-checkpoint"] = {
    "task": "policies_app.tasks.write_audit_checkpoint_task",
    "schedule": AUDIT_CHECKPOINT_INTERVAL_SECONDS,
}

# The audit log streamed to a SIEM (policies_app/accounts/audit_stream.py): every entry, with the decision
# record of each decision, as JSON signed with AUDIT_STREAM_SECRET (a Standard Webhooks "whsec_" secret),
# POSTed to AUDIT_STREAM_URL and/or written as RFC 5424 lines to AUDIT_STREAM_SYSLOG (udp://host:514 or
# tcp://host:601, octet-counted framing). Both go through the egress guard: a collector on an internal
# address needs its network in EGRESS_ALLOWED_NETWORKS. Unset: off, nothing is sent.
AUDIT_STREAM_URL = os.environ.get("AUDIT_STREAM_URL", "")
AUDIT_STREAM_SYSLOG = os.environ.get("AUDIT_STREAM_SYSLOG", "")
AUDIT_STREAM_SECRET = os.environ.get("AUDIT_STREAM_SECRET", "")
if (AUDIT_STREAM_URL or AUDIT_STREAM_SYSLOG) and not AUDIT_STREAM_SECRET:
    raise ImproperlyConfigured(
        "AUDIT_STREAM_URL or AUDIT_STREAM_SYSLOG is set: AUDIT_STREAM_SECRET must be too"
    )
# Entries one sender streams at a time (a sweep or a wake-up); a backlog goes out in such batches.
AUDIT_STREAM_BATCH = int(env_number("AUDIT_STREAM_BATCH", 200))
# The host name the syslog lines carry (RFC 5424 HOSTNAME); empty: this machine's name.
AUDIT_STREAM_HOSTNAME = os.environ.get("AUDIT_STREAM_HOSTNAME", "")
