from django.conf import settings
from django.db import models
from django.db.models import Q


class Waiver(models.Model):
    """For a while, one policy's ``deny`` and ``pending`` count as ``warn`` in one environment, or in a
    project and every project and environment below it (deployments/waivers.py says who may grant one
    and how evaluations read it). Exactly one of ``environment`` and ``project`` is set."""

    policy = models.ForeignKey("ApprovalPolicy", on_delete=models.CASCADE, related_name="waivers")
    environment = models.ForeignKey(
        "Environment", null=True, blank=True, on_delete=models.CASCADE, related_name="waivers"
    )
    project = models.ForeignKey(
        "Project", null=True, blank=True, on_delete=models.CASCADE, related_name="waivers"
    )
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    # One line (guards/names.py refuses control characters on save): it is quoted in messages and chats.
    reason = models.CharField(max_length=500)
    starts_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-starts_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(environment__isnull=True, project__isnull=False)
                | Q(environment__isnull=False, project__isnull=True),
                name="waiver_one_scope",
            ),
            models.CheckConstraint(condition=Q(expires_at__gt=models.F("starts_at")), name="waiver_ends"),
        ]

    def __str__(self) -> str:
        return f"waiver of {self.policy.name} #{self.pk}"
