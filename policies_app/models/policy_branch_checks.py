from django.db import models
from django.utils import timezone

from policies_app.choices import ReplayStatus, ReportState


class PolicyBranchCheck(models.Model):
    """The check a push to a branch other than the one policies follow asks for: the policies of that
    commit tested and replayed over recent deployments, then reported on the pull request
    (policies/git/branch_checks.py).

    The row is the due work: queued -> running -> done | failed, each change a conditional update (a task
    delivered twice checks once); ``report_state`` pending -> sending -> sent | failed likewise. A check
    still queued, or done with its report pending, long after its task was sent is sent again."""

    repository = models.ForeignKey("PolicyRepository", on_delete=models.CASCADE, related_name="branch_checks")
    branch = models.CharField(max_length=255)
    commit = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED)
    passed = models.BooleanField(null=True, blank=True, help_text="Empty until the check is done.")
    summary = models.JSONField(
        null=True, blank=True, help_text="Per policy: test counts, replay counts, changed deployment ids."
    )
    error = models.TextField(blank=True, help_text="Why the check could not run.")
    report_state = models.CharField(max_length=10, choices=ReportState.choices, default=ReportState.PENDING)
    report_error = models.TextField(blank=True)
    change_request = models.PositiveIntegerField(
        null=True, blank=True, help_text="The pull request's number (GitLab: the merge request's iid)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    reported_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One webhook per policy may deliver the same push several times: one check per commit.
            models.UniqueConstraint(fields=["repository", "commit"], name="one_branch_check_per_commit")
        ]

    def __str__(self) -> str:
        return f"check of {self.branch}@{self.commit[:12]}: {self.status}"
