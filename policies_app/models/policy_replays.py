from django.conf import settings
from django.db import models
from django.utils import timezone

from policies_app.choices import ReplayStatus


class PolicyReplay(models.Model):
    """A revision (usually a draft) replayed over the recorded inputs of recent deployments, without
    being published: which decisions it would have changed. Kept with the revision.

    queued -> running -> done | failed (each change a conditional update on the status: a task
    delivered twice runs the replay once)."""

    revision = models.ForeignKey("PolicyRevision", on_delete=models.PROTECT, related_name="replays")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    limit = models.PositiveIntegerField(help_text="At most this many of the most recent deployments.")
    # Replayed over these environments instead of those the policy applies to (a policy attached
    # nowhere yet); empty: the environments it applies to.
    environment_ids = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED)
    total = models.PositiveIntegerField(default=0, help_text="Deployments to replay.")
    replayed = models.PositiveIntegerField(default=0, help_text="Deployments replayed so far.")
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When a worker was last woken for it: a replay still queued long after is resent (replay.py).
    enqueued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay of {self.revision} over {self.limit} deployments: {self.status}"
