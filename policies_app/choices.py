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


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    DEPLOYER = "deployer", "Deployer"
    APPROVER = "approver", "Approver"
    ADMIN = "admin", "Admin"


# A role grants everything the roles before it grant.
ROLE_RANK = {Role.VIEWER: 1, Role.DEPLOYER: 2, Role.APPROVER: 3, Role.ADMIN: 4}


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
# queued -> evaluating -> pending_approval | approved | denied | error
# pending_approval -> approved | denied | rejected | cancelled | error (a resume that fails closed)
# approved -> succeeded | failed (reported by the pipeline)
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.EVALUATING, S.CANCELLED}),
    S.EVALUATING: frozenset({S.PENDING_APPROVAL, S.APPROVED, S.DENIED, S.ERROR}),
    S.PENDING_APPROVAL: frozenset({S.APPROVED, S.DENIED, S.REJECTED, S.CANCELLED, S.ERROR}),
    S.APPROVED: frozenset({S.SUCCEEDED, S.FAILED}),
    S.DENIED: frozenset(),
    S.ERROR: frozenset(),
    S.REJECTED: frozenset(),
    S.CANCELLED: frozenset(),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
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
