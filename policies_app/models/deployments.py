from django.conf import settings
from django.db import models
from django.db.models import Q

from policies_app.choices import (
    ApprovalDecision,
    Decision,
    DeploymentStatus,
    DeploymentType,
    EventKind,
    RequestType,
    TriggerName,
)


def empty_messages() -> dict:
    return {"deny": [], "pending": [], "warn": [], "allow": []}


class Deployment(models.Model):
    """One deploy or destroy of an environment, waiting for the policies' verdict.

    Its statuses and the allowed changes between them are written once, in choices.ALLOWED_TRANSITIONS.

    ``evaluation_due_at`` is the platform's own to-do list: set whenever the deployment needs an
    evaluation (on trigger, on each approval), cleared when a verdict covering it is recorded. A task
    message can be lost (the broker down, a worker killed); the sweeper finds such deployments by this
    field and enqueues them again, so no fault leaves a deployment unevaluated.
    """

    environment = models.ForeignKey("Environment", on_delete=models.PROTECT, related_name="deployments")
    type = models.CharField(max_length=10, choices=DeploymentType.choices, default=DeploymentType.DEPLOY)
    trigger_name = models.CharField(max_length=30, choices=TriggerName.choices, default=TriggerName.USER)
    revision = models.CharField(max_length=200, blank=True)
    template_commit = models.CharField(
        max_length=64,
        blank=True,
        help_text="The commit of the template's repository its first evaluation read: later evaluations "
        "(after each approval) read the same files, however the branch moved meanwhile.",
    )
    # Links to the change that caused it, as the pipeline tells them (policy_gate fills them from CI).
    commit_sha = models.CharField(max_length=64, blank=True, help_text="The commit the pipeline ran on.")
    pull_request_url = models.URLField(max_length=500, blank=True, help_text="The pull or merge request.")
    ci_run_url = models.URLField(max_length=500, blank=True, help_text="The CI run that triggered it.")
    # The plan is kept once, compressed (StoredDocument); read it with stored_inputs.plan_of.
    plan_document = models.ForeignKey(
        "StoredDocument", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The plan as ``terraform show`` prints it, when the pipeline sends it: kept once, compressed, like the
    # plan; read it with stored_inputs.plan_text_of, show it through the plan view (masked, escaped).
    plan_text_document = models.ForeignKey(
        "StoredDocument", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # How many resources the plan creates, updates, replaces, deletes, reads and leaves alone
    # (plan_summary.plan_counts), counted once at trigger for the queue: None without a plan.
    plan_counts = models.JSONField(null=True, blank=True)
    plan_purged_at = models.DateTimeField(
        null=True, blank=True, help_text="When the retention period removed its plan (purge_inputs)."
    )
    total_monthly_cost = models.FloatField(null=True, blank=True)
    monthly_cost_diff = models.FloatField(null=True, blank=True)
    variables = models.JSONField(default=dict, blank=True, help_text="{environment: {...}, terraform: {...}}")
    policy_data = models.JSONField(null=True, blank=True)
    deployer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="deployments"
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=20, choices=DeploymentStatus.choices, default=DeploymentStatus.QUEUED
    )
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True)
    messages = models.JSONField(default=empty_messages, blank=True)
    error = models.TextField(blank=True)
    # Pinned at the first evaluation, so that a resume judges by the rules the deployment started under.
    policy_revisions = models.ManyToManyField("PolicyRevision", blank=True, related_name="deployments")
    policies_pinned = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    evaluation_due_at = models.DateTimeField(null=True, blank=True, db_index=True)
    evaluation_enqueued_at = models.DateTimeField(null=True, blank=True)
    evaluation_started_at = models.DateTimeField(null=True, blank=True)
    pending_since = models.DateTimeField(
        null=True, blank=True, help_text="When it started waiting for approvers."
    )
    released_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Set when it starts waiting for approvers, from its project's pending expiry, and again when it is
    # released, from its project's release expiry (each inherited, or the platform's default).
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded"
    )
    # While set (and the deployment queued), it waits for this released deployment to complete.
    queued_behind = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="queued_after"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="deployment_idempotency_key_unique_per_environment",
            )
        ]
        indexes = [
            models.Index(fields=["status", "environment"]),
            models.Index(fields=["created_at", "id"], name="deployment_created"),
            # The queues: deployments in one status, newest first, a page at a time. Without it a queue
            # over every environment reads and sorts all deployments in that status for each page.
            models.Index(fields=["status", "-created_at", "-id"], name="deployment_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk} of {self.environment}"


class StoredDocument(models.Model):
    """A large piece of policy inputs kept once: a plan, a state or configuration view. Addressed by the
    SHA-256 of its text, so a deployment's evaluations and identical plans share one row; the text is
    zstandard-compressed (deployments/input_codec.py)."""

    key = models.CharField(max_length=64, primary_key=True)
    body = models.BinaryField()
    size = models.PositiveBigIntegerField(help_text="Characters of the text, before compression.")
    # Set again whenever a new reference is made: the purge removes only documents unused since its
    # cut-off, so a document being referenced concurrently is never removed.
    last_used_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"stored document {self.key[:12]} ({self.size} characters)"


class Evaluation(models.Model):
    """One evaluation of a deployment's policies, with the exact input it saw (until a retention period
    purges it: ``input_purged_at``). Read the input with stored_inputs.input_of, never this row alone."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="evaluations")
    request_type = models.CharField(max_length=20, choices=RequestType.choices)
    input_json = models.TextField(
        help_text="The policy input as given to the engine, without its shared pieces (input_pieces), "
        '"null" when the evaluation failed before building one, "" once purged.'
    )
    input_purged_at = models.DateTimeField(null=True, blank=True)
    policy_revisions = models.ManyToManyField("PolicyRevision", blank=True, related_name="evaluations")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    messages = models.JSONField(default=empty_messages)
    outcomes = models.JSONField(default=list, help_text="Each policy's decision and messages.")
    error = models.TextField(blank=True)
    engine = models.CharField(max_length=20)
    sensitive_variables = models.JSONField(
        default=dict,
        blank=True,
        help_text="Names of the input's variables to mask wherever the input is shown.",
    )
    sensitive_paths = models.JSONField(
        default=list,
        blank=True,
        help_text="Paths into the input of values to mask wherever it is shown, beyond what the input marks "
        "itself: values derived from sensitive variables, state attributes Terraform marked.",
    )
    duration_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    explanations_due_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set while the explanations of its outcomes are still to be computed (by a worker, after "
        "the decision: deployments/explanations.py); when the task was last sent.",
    )

    class Meta:
        ordering = ["created_at", "id"]
        # Partial: only the few evaluations whose explanations are still due, which the sweeper looks for.
        indexes = [
            models.Index(
                fields=["explanations_due_at"],
                name="evaluation_explanations_due",
                condition=Q(explanations_due_at__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"{self.request_type} evaluation of deployment #{self.deployment_id}: {self.decision}"


class InputPiece(models.Model):
    """A shared piece of an evaluation's input: the document to put back at ``offset`` of its skeleton."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="input_pieces")
    offset = models.PositiveBigIntegerField()
    document = models.ForeignKey(StoredDocument, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["evaluation", "offset"]

    def __str__(self) -> str:
        return f"piece of evaluation #{self.evaluation_id} at {self.offset}"


class Approval(models.Model):
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="approvals")
    decision = models.CharField(max_length=10, choices=ApprovalDecision.choices)
    comment = models.TextField(blank=True)
    # When it was given (a carried-over approval keeps the time of the original).
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when the approval was given to an earlier deployment of the environment with the same plan,
    # policy revisions and policy data, and carried over to this one (deployments/carry_over.py).
    carried_over_from = models.ForeignKey(
        Deployment, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["deployment", "user"], name="approval_one_per_user")]

    def __str__(self) -> str:
        return f"{self.user} {self.decision}d deployment #{self.deployment_id}"


class DeploymentEvent(models.Model):
    """The audit trail: everything that happened to a deployment, by whom."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=EventKind.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"deployment #{self.deployment_id} {self.kind}"


class DeploymentComment(models.Model):
    """A note in a deployment's thread (deployments/comments.py holds who may write and remove one).

    Plain text, shown escaped. A removed comment keeps its row (who removed it and when, shown in the
    thread) and loses its text: a comment removed because it held something it should not is gone."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(null=True, blank=True)
    removed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["deployment", "created_at"], name="comment_thread")]

    def __str__(self) -> str:
        return f"comment #{self.pk} on deployment #{self.deployment_id}"
