from .audit import AuditEntry
from .deployments import Approval, Deployment, DeploymentEvent, Evaluation
from .environments import Environment, EnvironmentState
from .notifications import ApprovalRequestEmail, NotificationPreference
from .policies import ApprovalPolicy, PolicyModule, PolicyRevision
from .policy_replays import PolicyReplay
from .policy_repositories import PolicyRepository
from .projects import OrganisationMembership, Project, ProjectMembership, ProjectPolicy, Team
from .templates import ConfigurationView, Template
from .tokens import ApiToken
from .webhooks import Webhook, WebhookDelivery

__all__ = [
    "ApiToken",
    "ApprovalRequestEmail",
    "NotificationPreference",
    "Webhook",
    "WebhookDelivery",
    "Approval",
    "ConfigurationView",
    "ApprovalPolicy",
    "AuditEntry",
    "Deployment",
    "DeploymentEvent",
    "Environment",
    "EnvironmentState",
    "OrganisationMembership",
    "Evaluation",
    "PolicyModule",
    "PolicyReplay",
    "PolicyRepository",
    "PolicyRevision",
    "Project",
    "ProjectMembership",
    "ProjectPolicy",
    "Team",
    "Template",
]
