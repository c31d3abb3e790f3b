import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "policy_platform.settings")

app = Celery("policy_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def start_policy_engine(**_: object) -> None:
    """Start the engine's worker processes with the Celery process, not on its first evaluation."""
    from django.conf import settings

    from policies_app.rego.supervisor import warm_up

    warm_up(settings.POLICY_ENGINE)
