"""Settings, all from environment variables.

With nothing configured the platform runs on SQLite with Celery tasks executed in-process; production
sets DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis) and runs worker processes.
"""

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


DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-local-runs"
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
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "policies_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

if not DEBUG:
    # Serves the collected static files (admin, API docs) from gunicorn, with no separate web server;
    # in development runserver serves them itself.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

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
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Approvals lock the deployment row; on SQLite that means waiting for the single writer.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"

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
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Approval policy platform API",
    "DESCRIPTION": "Gate infrastructure deployments with approval policies written in Rego.",
    "VERSION": "1",
    # Swagger UI served from our own static files: no CDN, works on a closed network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
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
CELERY_RESULT_BACKEND = None

# Policy evaluation
# regorus decides as OPA and is fast; opa is OPA 1.20 itself, slower on large plans (docs/opa-fidelity.md).
POLICY_ENGINE = os.environ.get("POLICY_ENGINE", "regorus")
if POLICY_ENGINE not in ("regorus", "opa"):
    raise ImproperlyConfigured(f"POLICY_ENGINE must be regorus or opa, not {POLICY_ENGINE!r}")
POLICY_EVALUATION_TIMEOUT_SECONDS = env_number("POLICY_EVALUATION_TIMEOUT_SECONDS", 10)
POLICY_ENGINE_MEMORY_MB = int(env_number("POLICY_ENGINE_MEMORY_MB", 2048))
# What one evaluation keeps of the policies' messages (cut in the engine worker, with a visible marker).
POLICY_MESSAGE_MAX_COUNT = int(env_number("POLICY_MESSAGE_MAX_COUNT", 100))  # per policy
POLICY_MESSAGE_MAX_LENGTH = int(env_number("POLICY_MESSAGE_MAX_LENGTH", 10_000))  # characters
POLICY_MESSAGE_MAX_TOTAL = int(env_number("POLICY_MESSAGE_MAX_TOTAL", 1_000))  # per evaluation
PLAN_SIZE_LIMIT_BYTES = int(env_number("PLAN_SIZE_LIMIT_BYTES", 50 * 1024 * 1024))
# Django must let a request up to the plan limit through so that the API can answer 413 itself.
DATA_UPLOAD_MAX_MEMORY_SIZE = PLAN_SIZE_LIMIT_BYTES + 1024 * 1024

# The IaC engine's caches: parsed files by content hash, template checkouts by commit.
IAC_PARSE_CACHE_DIR = os.environ.get("IAC_PARSE_CACHE_DIR", str(VAR_DIR / "cache" / "parse"))
# Bound on evaluating a template's configuration for the policy input (it runs in a child process).
IAC_EVALUATION_TIMEOUT_SECONDS = env_number("IAC_EVALUATION_TIMEOUT_SECONDS", 60)
TEMPLATE_CHECKOUT_DIR = os.environ.get("TEMPLATE_CHECKOUT_DIR", str(VAR_DIR / "cache" / "templates"))
MEDIA_ROOT = VAR_DIR / "media"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
