from django.apps import AppConfig


class PoliciesAppConfig(AppConfig):
    name = "policies_app"
    verbose_name = "Approval policies"
    default_auto_field = "django.db.models.BigAutoField"
