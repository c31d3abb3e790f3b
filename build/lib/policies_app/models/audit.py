from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One change to what governs deployments: policies, roles, attachments, settings, approvals.

    Written by the use cases in the same transaction as the change itself, so the log can never miss a
    change that happened nor record one that did not."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=60, db_index=True)
    target_type = models.CharField(max_length=40)
    target_id = models.CharField(max_length=40)
    target_repr = models.CharField(max_length=300)
    # The project the change happened in (for filtering and for who may read it); empty: organisation-wide.
    project = models.ForeignKey("Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target_repr}"
