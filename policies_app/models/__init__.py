from policies_app.models.audit import AuditCheckpoint, AuditEntry, AuditStreamCursor
from policies_app.models.deployments import (
    Approval,
    Deployment,
    DeploymentComment,
    DeploymentEvent,
    Evaluation,
    InputPiece,
    StoredDocument,
)
from policies_app.models.environments import Environment, EnvironmentState
from policies_app.models.identity import GroupTeamMapping, ScimGroup, ScimUser, SsoIdentity
from policies_app.models.notifications import (
    ApprovalRequestEmail,
    InvitationEmail,
    NotificationPreference,
    SlackApprovalMessage,
)
from policies_app.models.policies import ApprovalPolicy, PolicyModule, PolicyRevision
from policies_app.models.policy_branch_checks import PolicyBranchCheck
from policies_app.models.policy_replays import PolicyReplay
from policies_app.models.policy_repositories import PolicyRepository
from policies_app.models.projects import (
    OrganisationMembership,
    Project,
    ProjectMembership,
    ProjectPolicy,
    Team,
    TeamMembership,
)
from policies_app.models.templates import ConfigurationView, Template
from policies_app.models.tokens import ApiToken, LegacyApiToken, ServiceAccount
from policies_app.models.waivers import Waiver
from policies_app.models.webhooks import Webhook, WebhookDelivery

__all__ = [
    "ApiToken",
    "LegacyApiToken",
    "ServiceAccount",
    "ApprovalRequestEmail",
    "InvitationEmail",
    "NotificationPreference",
    "SlackApprovalMessage",
    "Webhook",
    "WebhookDelivery",
    "Approval",
    "ConfigurationView",
    "ApprovalPolicy",
    "AuditCheckpoint",
    "AuditEntry",
    "AuditStreamCursor",
    "Deployment",
    "DeploymentComment",
    "DeploymentEvent",
    "Environment",
    "EnvironmentState",
    "OrganisationMembership",
    "Evaluation",
    "InputPiece",
    "StoredDocument",
    "PolicyBranchCheck",
    "PolicyModule",
    "PolicyReplay",
    "PolicyRepository",
    "PolicyRevision",
    "Project",
    "ProjectMembership",
    "ProjectPolicy",
    "Team",
    "TeamMembership",
    "GroupTeamMapping",
    "SsoIdentity",
    "ScimGroup",
    "ScimUser",
    "Template",
    "Waiver",
]
