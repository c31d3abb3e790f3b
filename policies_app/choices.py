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


S = DeploymentStatus
# The status diagram; every other list of statuses below is derived from it or checked against it.
# queued -> evaluating | cancelled
# evaluating -> pending_approval | approved | denied | error | cancelled
# pending_approval -> approved | denied | rejected | cancelled | error (a resume that fails closed)
# approved -> succeeded | failed (reported by the pipeline)
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.EVALUATING, S.CANCELLED}),
    S.EVALUATING: frozenset({S.PENDING_APPROVAL, S.APPROVED, S.DENIED, S.ERROR, S.CANCELLED}),
    S.PENDING_APPROVAL: frozenset({S.APPROVED, S.DENIED, S.REJECTED, S.CANCELLED, S.ERROR}),
    S.APPROVED: frozenset({S.SUCCEEDED, S.FAILED}),
    S.DENIED: frozenset(),
    S.ERROR: frozenset(),
    S.REJECTED: frozenset(),
    S.CANCELLED: frozenset(),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
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
