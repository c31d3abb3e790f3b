from .audit import AuditEntry
from .deployments import Approval, Deployment, DeploymentEvent, Evaluation
from .environments import Environment, EnvironmentState
from .policies import ApprovalPolicy, PolicyModule, PolicyRevision
from .projects import OrganisationMembership, Project, ProjectMembership, ProjectPolicy, Team
from .templates import ConfigurationView, Template

__all__ = [
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
    "PolicyRevision",
    "Project",
    "ProjectMembership",
    "ProjectPolicy",
    "Team",
    "Template",
]
