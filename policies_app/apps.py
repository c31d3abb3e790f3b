from django.apps import AppConfig
from django.core import checks


class PoliciesAppConfig(AppConfig):
    name = "policies_app"
    verbose_name = "Approval policies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the Celery tasks in every process (web, worker, beat, management commands):
        # wakeups.wake finds them by name, so no service has to import the tasks module.
        from policies_app import tasks  # noqa: F401
        from policies_app.guards import encryption, names
        from policies_app.ops import metrics, request_ids

        metrics.observe_engine()
        request_ids.carry_into_tasks()
        checks.register(encryption.check_keys)
        names.refuse_control_characters_on_save()
