"""Enumerations of the domain, and the one place where a deployment's allowed status changes are written."""

from django.db import models


class TemplateType(models.TextChoices):
    OPENTOFU = "opentofu", "OpenTofu"
    TERRAFORM = "terraform", "Terraform"
    TERRAGRUNT = "terragrunt", "Terragrunt"
    PULUMI = "pulumi", "Pulumi"
    CLOUDFORMATION = "cloudformation", "CloudFormation"
    K8S = "k8s", "Kubernetes"
    HELM = "helm", "Helm"


TERRAFORM_LIKE_TYPES = frozenset({TemplateType.OPENTOFU, TemplateType.TERRAFORM})


class Capability(models.TextChoices):
    """What a role lets its holder do on a project and every sub-project."""

    READ = "read", "Read"
    DEPLOY = "deploy", "Deploy"
    APPROVE = "approve", "Approve"
    ADMINISTER = "administer", "Administer"


class Role(models.TextChoices):
    """A role on a project, given to a user or a team and inherited by sub-projects."""

    VIEWER = "viewer", "Viewer"
    DEPLOYER = "deployer", "Deployer"
    APPROVER = "approver", "Approver"
    ADMIN = "admin", "Admin"


class OrganisationRole(models.TextChoices):
    """A role over the whole organisation: every project, policy and template."""

    AUDITOR = "auditor", "Auditor (reads everything, changes nothing)"
    ADMIN = "admin", "Organisation admin"


C = Capability
ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    Role.VIEWER: frozenset({C.READ}),
    Role.DEPLOYER: frozenset({C.READ, C.DEPLOY}),
    Role.APPROVER: frozenset({C.READ, C.DEPLOY, C.APPROVE}),
    Role.ADMIN: frozenset(C.values),
}
ORGANISATION_ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    OrganisationRole.AUDITOR: frozenset({C.READ}),
    OrganisationRole.ADMIN: frozenset(C.values),
}
del C


class RegoVersion(models.TextChoices):
    V1 = "v1", "Rego v1 (OPA 1.0 and later)"
    V0 = "v0", "Rego v0 (before OPA 1.0)"


class DeploymentType(models.TextChoices):
    DEPLOY = "deploy", "Deploy"
    DESTROY = "destroy", "Destroy"


class RequestType(models.TextChoices):
    """What caused an evaluation; the value of input.deploymentRequest.type."""

    DEPLOY = "deploy", "Deploy"
    DESTROY = "destroy", "Destroy"
    DEPLOY_RESUME = "deployResume", "Deploy resume"
    DESTROY_RESUME = "destroyResume", "Destroy resume"

    @classmethod
    def for_deployment(cls, deployment_type: str, resume: bool) -> "RequestType":
        if deployment_type == DeploymentType.DESTROY:
            return cls.DESTROY_RESUME if resume else cls.DESTROY
        return cls.DEPLOY_RESUME if resume else cls.DEPLOY


class TriggerName(models.TextChoices):
    CD = "cd", "Continuous deployment"
    USER = "user", "User"
    TTL = "ttl", "TTL"
    SCHEDULED = "scheduled", "Scheduled"
    WORKFLOW = "workflow", "Workflow"
    DRIFT_REMEDIATION = "driftRemediation", "Drift remediation"
    TERRAFORM_CLI = "terraform-cli", "Terraform CLI"
    COMMENT = "comment", "Comment"


class Decision(models.TextChoices):
    """A policy decision, strictest first. ``error`` means the evaluation failed closed."""

    ERROR = "error", "Error"
    DENY = "deny", "Deny"
    PENDING = "pending", "Pending"
    WARN = "warn", "Warn"
    ALLOW = "allow", "Allow"


DECISION_TONES: dict[str, str] = {
    Decision.ERROR: "bad",
    Decision.DENY: "bad",
    Decision.PENDING: "waiting",
    Decision.WARN: "warn",
    Decision.ALLOW: "good",
}


class ApprovalDecision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


APPROVAL_TONES: dict[str, str] = {ApprovalDecision.APPROVE: "good", ApprovalDecision.REJECT: "bad"}


class DeploymentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    EVALUATING = "evaluating", "Evaluating"
    PENDING_APPROVAL = "pending_approval", "Pending approval"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    ERROR = "error", "Error"
    REJECTED = "rejected", "Rejected"
    CANCELLED = "cancelled", "Cancelled"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    EXPIRED = "expired", "Expired"
    SUPERSEDED = "superseded", "Superseded"


S = DeploymentStatus
# The status diagram; every other list of statuses below is derived from it or checked against it.
# queued -> evaluating | cancelled | superseded
#   (a deployment also stays queued, without an evaluation, while an earlier one of its environment is
#   released and not yet completed: at most one released deployment per environment at a time)
# evaluating -> pending_approval | approved | denied | error | cancelled | superseded
# pending_approval -> approved | denied | rejected | cancelled | error (a resume that fails closed)
#                     | expired (nobody decided in time) | superseded (a newer deployment of the environment)
# approved -> succeeded | failed (reported by the pipeline) | cancelled (the pipeline will not apply it)
#             | expired (the pipeline did not complete it in time: a stale release frees its environment)
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.EVALUATING, S.CANCELLED, S.SUPERSEDED}),
    S.EVALUATING: frozenset({S.PENDING_APPROVAL, S.APPROVED, S.DENIED, S.ERROR, S.CANCELLED, S.SUPERSEDED}),
    S.PENDING_APPROVAL: frozenset(
        {S.APPROVED, S.DENIED, S.REJECTED, S.CANCELLED, S.ERROR, S.EXPIRED, S.SUPERSEDED}
    ),
    S.APPROVED: frozenset({S.SUCCEEDED, S.FAILED, S.CANCELLED, S.EXPIRED}),
    S.DENIED: frozenset(),
    S.ERROR: frozenset(),
    S.REJECTED: frozenset(),
    S.CANCELLED: frozenset(),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.EXPIRED: frozenset(),
    S.SUPERSEDED: frozenset(),
}
# Nothing happens to a deployment in a final status any more.
FINAL_STATUSES = frozenset(status for status, targets in ALLOWED_TRANSITIONS.items() if not targets)
# The pipeline may apply: the gate opened (and the pipeline may since have reported how it went).
RELEASED_STATUSES = frozenset({S.APPROVED, S.SUCCEEDED})
# The platform or a person has yet to decide.
WAITING_STATUSES = frozenset({S.QUEUED, S.EVALUATING, S.PENDING_APPROVAL})
# Closed without being released: the pipeline must not apply.
STOPPED_STATUSES = FINAL_STATUSES - RELEASED_STATUSES
CANCELLABLE_STATUSES = frozenset(
    status for status, targets in ALLOWED_TRANSITIONS.items() if S.CANCELLED in targets
)
# A newer deployment of the same environment replaces these: nobody should approve an outdated plan.
SUPERSEDABLE_STATUSES = frozenset(
    status for status, targets in ALLOWED_TRANSITIONS.items() if S.SUPERSEDED in targets
)
# Released and not yet reported back by the pipeline: holds its environment until it completes.
UNFINISHED_RELEASE_STATUSES = RELEASED_STATUSES - FINAL_STATUSES

# How the UI colours a status: every status has exactly one tone (a test keeps it complete).
STATUS_TONES: dict[str, str] = {
    S.QUEUED: "waiting",
    S.EVALUATING: "waiting",
    S.PENDING_APPROVAL: "waiting",
    S.APPROVED: "good",
    S.SUCCEEDED: "good",
    S.DENIED: "bad",
    S.ERROR: "bad",
    S.REJECTED: "bad",
    S.FAILED: "bad",
    S.CANCELLED: "neutral",
    S.EXPIRED: "neutral",
    S.SUPERSEDED: "neutral",
}
del S


class EventKind(models.TextChoices):
    TRIGGERED = "triggered", "Triggered"
    EVALUATED = "evaluated", "Evaluated"
    APPROVED = "approved", "Approved by a user"
    REJECTED = "rejected", "Rejected by a user"
    RELEASED = "released", "Released"
    DENIED = "denied", "Denied"
    FAILED_CLOSED = "error", "Failed closed"
    CANCELLED = "cancelled", "Cancelled"
    COMPLETED = "completed", "Completed"
    EXPIRED = "expired", "Expired"
    SUPERSEDED = "superseded", "Superseded"
    QUEUED_BEHIND = "queued_behind", "Waits for an earlier release"
    STARTED = "started", "Started after the earlier release"
    CARRIED_OVER = "carried_over", "Approvals carried over from an identical deployment"


class EmailMode(models.TextChoices):
    """How a user hears that a deployment waits for them."""

    IMMEDIATELY = "immediately", "An email for each deployment, at once"
    DAILY_DIGEST = "daily_digest", "One email a day listing what waits"
    OFF = "off", "No email"


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON (the deployment and its change of status)"
    CHAT = "chat", "Chat message (Slack and Microsoft Teams incoming webhooks)"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed (gave up)"


class Enforcement(models.TextChoices):
    """How much a policy's decision counts (Scalr's levels). A policy that fails to evaluate always
    fails closed, whatever its level."""

    HARD_MANDATORY = "hard-mandatory", "Hard mandatory: decides as written"
    SOFT_MANDATORY = "soft-mandatory", "Soft mandatory: a deny waits for an approver instead"
    ADVISORY = "advisory", "Advisory: a deny or pending is only a warning"


class RevisionTestsStatus(models.TextChoices):
    NONE = "none", "No tests"
    PASSED = "passed", "Tests passed"
    FAILED = "failed", "Tests failed"
    ERROR = "error", "Tests could not run"


class ReplayStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ReviewApi(models.TextChoices):
    """Where a policy repository's pull requests live, for the reports of branch checks."""

    NONE = "", "None"
    GITHUB = "github", "GitHub"
    GITLAB = "gitlab", "GitLab"


class ReportState(models.TextChoices):
    """Whether a branch check's report reached the pull request: pending -> sending -> sent | failed
    (``none``: the check has nothing to report to)."""

    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


# How a waived policy's message starts (deployments/waivers.py): "waived by alice until 2026-... UTC: ...".
WAIVED_MARK = "waived by "
