from django.conf import settings
from django.db import models

from ..choices import RegoVersion


class ApprovalPolicy(models.Model):
    """A named policy; what it says lives in immutable revisions, the newest being the one in force."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "approval policies"

    def __str__(self) -> str:
        return self.name

    @property
    def latest_revision(self) -> "PolicyRevision | None":
        return self.revisions.order_by("-number").first()


class PolicyRevision(models.Model):
    """An immutable version of a policy. Editing a policy creates revision N+1."""

    # Revisions are evidence of what judged past deployments and rule pending ones: never deleted.
    policy = models.ForeignKey(ApprovalPolicy, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    rego_version = models.CharField(max_length=2, choices=RegoVersion.choices, default=RegoVersion.V1)
    data = models.JSONField(null=True, blank=True, help_text="Becomes data.* for this policy.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["policy", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="policy_revision_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.policy.name} r{self.number}"


class PolicyModule(models.Model):
    revision = models.ForeignKey(PolicyRevision, on_delete=models.PROTECT, related_name="modules")
    filename = models.CharField(max_length=200)
    source = models.TextField()

    class Meta:
        ordering = ["filename"]
        constraints = [
            models.UniqueConstraint(fields=["revision", "filename"], name="policy_module_filename_unique")
        ]

    def __str__(self) -> str:
        return self.filename
