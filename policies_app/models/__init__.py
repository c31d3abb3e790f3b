from .deployments import Approval, Deployment, DeploymentEvent, Evaluation
from .environments import Environment, EnvironmentState
from .policies import ApprovalPolicy, PolicyModule, PolicyRevision
from .projects import Project, ProjectMembership, Team
from .templates import Template

__all__ = [
    "Approval",
    "ApprovalPolicy",
    "Deployment",
    "DeploymentEvent",
    "Environment",
    "EnvironmentState",
    "Evaluation",
    "PolicyModule",
    "PolicyRevision",
    "Project",
    "ProjectMembership",
    "Team",
    "Template",
]
