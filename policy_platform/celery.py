import os

from celery import Celery
from celery.signals import setup_logging, task_postrun, task_prerun, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "policy_platform.settings")

app = Celery("policy_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


if os.environ.get("LOG_FORMAT") == "json":

    @setup_logging.connect
    def use_the_platforms_logging(**_: object) -> None:
        """JSON logs: the worker logs through settings.LOGGING (one JSON line per record, with the request
        id) instead of Celery's own format."""
        from logging.config import dictConfig

        from django.conf import settings

        dictConfig(settings.LOGGING)


@worker_process_init.connect
def start_policy_engine(**_: object) -> None:
    """Start the engine's worker processes with the Celery process, not on its first evaluation."""
    from django.conf import settings

    from policies_app.rego.supervisor import warm_up

    warm_up(settings.POLICY_ENGINE)


@task_prerun.connect
@task_postrun.connect
def check_database_connections(sender: object = None, **_: object) -> None:
    """Around each task, as Django does around each request: a connection past CONN_MAX_AGE, or broken
    (a restarted database), is closed and the task opens a fresh one; a sound one is kept, checked
    before its first use. Celery would otherwise reconnect for every task (CELERY_DB_REUSE_MAX)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # run inside the caller's transaction, whose connection is the caller's business
    from django.db import close_old_connections

    close_old_connections()
