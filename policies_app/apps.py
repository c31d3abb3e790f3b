from django.apps import AppConfig
from django.core import checks


class PoliciesAppConfig(AppConfig):
    name = "policies_app"
    verbose_name = "Approval policies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from policies_app.guards import encryption, names

        checks.register(encryption.check_keys)
        names.refuse_control_characters_on_save()
