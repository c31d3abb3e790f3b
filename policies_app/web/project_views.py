"""Pages of the project tree and of environments."""

from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from .. import access
from ..environments import masked
from ..models import ApprovalPolicy, Environment, Project
from ..tree import InheritedPolicy, ProjectTree, tree_for

RECENT_DEPLOYMENTS = 20


@dataclass
class ProjectNode:
    project: Project
    own_policies: list[ApprovalPolicy]
    inherited_policies: list[InheritedPolicy]
    environments: list[Environment] = field(default_factory=list)
    children: list["ProjectNode"] = field(default_factory=list)


@login_required
@require_GET
def project_tree(request: HttpRequest) -> HttpResponse:
    visible = list(access.visible_projects(request.user))
    # Loaded around the visible projects, because they inherit from ancestors the user may not see.
    tree = ProjectTree.around(visible)
    environments: dict[int, list[Environment]] = {}
    for environment in access.visible_environments(request.user):
        environments.setdefault(environment.project_id, []).append(environment)
    nodes = {
        project.pk: ProjectNode(
            project,
            [attachment.policy for attachment in tree.own_attachments(project)],
            tree.inherited_policies(project),
            environments.get(project.pk, []),
        )
        for project in sorted(visible, key=lambda project: project.name.lower())
    }
    roots: list[ProjectNode] = []
    for node in nodes.values():
        parent = nodes.get(node.project.parent_id)
        (parent.children if parent is not None else roots).append(node)
    return render(request, "web/project_tree.html", {"roots": roots})


@login_required
@require_GET
def environment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    environment = get_object_or_404(
        access.visible_environments(request.user).prefetch_related("template__approval_policies"), pk=pk
    )
    deployments = access.visible_deployments(request.user).filter(environment=environment)[
        :RECENT_DEPLOYMENTS
    ]
    tree = tree_for(environment.project)
    context = {
        "environment": environment,
        "environment_variables": masked(
            environment.environment_variables, environment.sensitive_names("environment")
        ),
        "terraform_variables": masked(
            environment.terraform_variables, environment.sensitive_names("terraform")
        ),
        "project_name": tree.full_name(environment.project),
        "policies": tree.policy_sources(environment),
        "deployments": deployments,
        "current_state": environment.current_state,
    }
    return render(request, "web/environment_detail.html", context)
