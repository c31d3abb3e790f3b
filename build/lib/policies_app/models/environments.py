from django.db import models


class Environment(models.Model):
    """A template deployed in a project."""

    name = models.CharField(max_length=200)
    project = models.ForeignKey("Project", on_delete=models.PROTECT, related_name="environments")
    template = models.ForeignKey("Template", on_delete=models.PROTECT, related_name="environments")
    approve_plans_automatically = models.BooleanField(
        default=False, help_text="Ignored while any approval policy applies to the environment."
    )
    environment_variables = models.JSONField(default=dict, blank=True)
    terraform_variables = models.JSONField(default=dict, blank=True)
    # {"environment": [names], "terraform": [names]}: given to policies, masked wherever they are shown.
    sensitive_variables = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="environment_unique_name_in_project")
        ]

    def __str__(self) -> str:
        return f"{self.project.name} / {self.name}"

    @property
    def current_state(self) -> "EnvironmentState | None":
        return self.states.order_by("-created_at", "-id").first()

    def sensitive_names(self, kind: str) -> set[str]:
        return set(self.sensitive_variables.get(kind, []))


class EnvironmentState(models.Model):
    """One version of an environment's Terraform state; the newest is the current one, older are history."""

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="states")
    document = models.JSONField()
    serial = models.BigIntegerField(null=True, blank=True)
    lineage = models.CharField(max_length=100, blank=True)
    deployment = models.ForeignKey(
        "Deployment", null=True, blank=True, on_delete=models.SET_NULL, related_name="states"
    )
    uploaded_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    forced = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"state of {self.environment} (serial {self.serial})"
