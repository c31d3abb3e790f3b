"""Who may see and do what. Roles are given on a project (to a user or a team) and hold in every
sub-project; a role grants everything the weaker roles grant; superusers are admins everywhere."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from .choices import ROLE_RANK, Role
from .models import ApprovalPolicy, Deployment, Environment, Project, ProjectMembership, Team


def _direct_roles(user: AbstractBaseUser) -> dict[int, str]:
    """The strongest role given directly on each project, to the user or to one of their teams."""
    memberships = ProjectMembership.objects.filter(Q(user=user) | Q(team__members=user)).values_list(
        "project_id", "role"
    )
    roles: dict[int, str] = {}
    for project_id, role in memberships:
        if ROLE_RANK[role] > ROLE_RANK.get(roles.get(project_id), 0):
            roles[project_id] = role
    return roles


def role_in_project(user: AbstractBaseUser, project: Project) -> str | None:
    if not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return Role.ADMIN
    direct = _direct_roles(user)
    best: str | None = None
    for node in [project, *project.ancestors()]:
        role = direct.get(node.pk)
        if role and ROLE_RANK[role] > ROLE_RANK.get(best, 0):
            best = role
    return best


def grant_role(
    project: Project, role: str, *, user: AbstractBaseUser | None = None, team: Team | None = None
) -> ProjectMembership:
    """Give a user or a team a role on a project (and so on its sub-projects), replacing any earlier one."""
    membership, _ = ProjectMembership.objects.update_or_create(
        project=project, user=user, team=team, defaults={"role": role}
    )
    return membership


def _has_at_least(user: AbstractBaseUser, project: Project, role: str) -> bool:
    return ROLE_RANK.get(role_in_project(user, project), 0) >= ROLE_RANK[role]


def can_view(user: AbstractBaseUser, project: Project) -> bool:
    return _has_at_least(user, project, Role.VIEWER)


def can_deploy(user: AbstractBaseUser, project: Project) -> bool:
    return _has_at_least(user, project, Role.DEPLOYER)


def can_approve(user: AbstractBaseUser, project: Project) -> bool:
    return _has_at_least(user, project, Role.APPROVER)


def can_administer(user: AbstractBaseUser, project: Project) -> bool:
    return _has_at_least(user, project, Role.ADMIN)


def may_place_project_under(user: AbstractBaseUser, parent: Project | None) -> bool:
    """Creating or moving a project under ``parent``: admins of the parent; superusers for the root."""
    return can_administer(user, parent) if parent is not None else bool(user.is_superuser)


def visible_project_ids(user: AbstractBaseUser) -> set[int] | None:
    """Ids of the projects the user may see; None means all of them (superusers)."""
    if user.is_superuser:
        return None
    if not user.is_authenticated:
        return set()
    granted = set(_direct_roles(user))
    children: dict[int | None, list[int]] = {}
    for pk, parent_id in Project.objects.values_list("pk", "parent_id"):
        children.setdefault(parent_id, []).append(pk)
    visible: set[int] = set()
    stack = list(granted)
    while stack:
        pk = stack.pop()
        if pk in visible:
            continue
        visible.add(pk)
        stack.extend(children.get(pk, ()))
    return visible


def visible_projects(user: AbstractBaseUser) -> QuerySet[Project]:
    ids = visible_project_ids(user)
    projects = Project.objects.all()
    return projects if ids is None else projects.filter(pk__in=ids)


def visible_environments(user: AbstractBaseUser) -> QuerySet[Environment]:
    ids = visible_project_ids(user)
    environments = Environment.objects.select_related("project", "template")
    return environments if ids is None else environments.filter(project_id__in=ids)


def visible_deployments(user: AbstractBaseUser) -> QuerySet[Deployment]:
    ids = visible_project_ids(user)
    deployments = Deployment.objects.select_related(
        "environment__project", "environment__template", "deployer"
    )
    return deployments if ids is None else deployments.filter(environment__project_id__in=ids)


def visible_policies(user: AbstractBaseUser) -> QuerySet[ApprovalPolicy]:
    """Policies that apply somewhere the user can see: on a visible project or one of its ancestors (which
    the project inherits), or on the template of a visible environment. Staff see every policy."""
    project_ids = visible_project_ids(user)
    if project_ids is None or user.is_staff:
        # Staff write the organisation's policies, attached or not.
        return ApprovalPolicy.objects.all()
    parents = dict(Project.objects.values_list("pk", "parent_id"))
    applying: set[int] = set()
    for pk in project_ids:
        node: int | None = pk
        while node is not None and node not in applying:
            applying.add(node)
            node = parents.get(node)
    template_ids = visible_environments(user).values("template_id")
    return ApprovalPolicy.objects.filter(Q(projects__in=applying) | Q(templates__in=template_ids)).distinct()
