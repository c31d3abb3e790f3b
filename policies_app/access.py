"""Who may see and do what: the one place where roles become capabilities.

A role is given on a project (to a user or a team) and holds on every sub-project; what it allows is
written once, in choices.ROLE_CAPABILITIES. Organisation roles (auditor, organisation admin) hold on
every project; superusers are organisation admins. Use cases ask ``require()``; nothing else decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import IntegerField, Q, QuerySet, Value

from policies_app.choices import (
    ORGANISATION_ROLE_CAPABILITIES,
    ROLE_CAPABILITIES,
    Capability,
    OrganisationRole,
)
from policies_app.errors import Forbidden, Invalid
from policies_app.models import (
    ApprovalPolicy,
    Deployment,
    Environment,
    OrganisationMembership,
    Project,
    ProjectMembership,
    ServiceAccount,
    Team,
    Template,
)
from policies_app.prepared import PreparedQuery

# Within one request a user's grants are loaded once (GrantsPerRequestMiddleware); elsewhere (tasks,
# commands, tests) every question reads them afresh, so a long-lived process never sees stale roles.
_request_grants: ContextVar[dict[int, Grants] | None] = ContextVar("request_grants", default=None)


@contextmanager
def grants_cached() -> Iterator[None]:
    token = _request_grants.set({})
    try:
        yield
    finally:
        _request_grants.reset(token)


def forget_cached_grants() -> None:
    """After a change of roles, within the request that made it."""
    cache = _request_grants.get()
    if cache is not None:
        cache.clear()


class GrantsPerRequestMiddleware:
    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):
        with grants_cached():
            return self.get_response(request)


NO_USER = -7_340_033  # the placeholder of the prepared query's user id
# Asked on every request, so compiled once (prepared.py), and in one query: the user's organisation role
# (a row without a project) and their roles on projects, their own and their teams'.
GRANTED = PreparedQuery(
    lambda user_id: (
        ProjectMembership.objects.filter(Q(user_id=user_id) | Q(team__members__id=user_id))
        .order_by()
        .values_list("project_id", "role", "project__lineage")
        .union(
            OrganisationMembership.objects.filter(user_id=user_id)
            .order_by()
            .values_list(Value(None, output_field=IntegerField()), "role", Value("")),
            all=True,
        )
    ),
    NO_USER,
)


@dataclass(frozen=True)
class TokenScope:
    """The bounds of the API token a request came with (accounts/tokens.py): ``capabilities`` it may use
    (empty: all), the ``project`` whose subtree it acts in (None: everywhere); for a service account's
    token, the account's project and what the account may do there."""

    capabilities: frozenset[str]
    project: Project | None
    account_project: Project | None = None
    account_capabilities: frozenset[str] = frozenset()


# What a service account may hold: approving only where an admin allowed it explicitly (may_approve).
SERVICE_ACCOUNT_CAPABILITIES = frozenset({Capability.READ, Capability.DEPLOY})


def service_account_capabilities(account: ServiceAccount) -> frozenset[str]:
    if account.may_approve:
        return SERVICE_ACCOUNT_CAPABILITIES | {Capability.APPROVE}
    return SERVICE_ACCOUNT_CAPABILITIES


@dataclass(frozen=True)
class Grants:
    """Everything a user was given, loaded in at most two queries; ask it as many questions as needed."""

    organisation: frozenset[str] = frozenset()
    organisation_role: str | None = None
    # project id -> capabilities given directly on that project (to the user or one of their teams)
    projects: dict[int, frozenset[str]] = field(default_factory=dict)
    paths: dict[int, str] = field(default_factory=dict)  # granted project id -> its path, for subtree filters

    @classmethod
    def of(cls, user: AbstractBaseUser) -> Grants:
        if not user.is_authenticated or not user.is_active:
            return cls()
        scope: TokenScope | None = getattr(user, "token_scope", None)
        if scope is None:
            return cls._held(user)
        if scope.account_project is not None:
            # A service account holds nothing of its own: what it may do is its account's, on its project.
            project = scope.account_project
            held = cls(projects={project.pk: scope.account_capabilities}, paths={project.pk: project.path})
        else:
            held = cls._held(user)
        return held.narrowed(scope)

    @classmethod
    def _held(cls, user: AbstractBaseUser) -> Grants:
        cache = _request_grants.get()
        if cache is None:
            return cls._load(user)
        if user.pk not in cache:
            cache[user.pk] = cls._load(user)
        return cache[user.pk]

    @classmethod
    def _load(cls, user: AbstractBaseUser) -> Grants:
        if user.is_superuser:
            return cls(ORGANISATION_ROLE_CAPABILITIES[OrganisationRole.ADMIN], OrganisationRole.ADMIN)
        role = None
        projects: dict[int, set[str]] = {}
        paths: dict[int, str] = {}
        for project_id, project_role, lineage in GRANTED.rows(user.pk):
            if project_id is None:
                role = project_role  # the organisation role (at most one)
                continue
            projects.setdefault(project_id, set()).update(ROLE_CAPABILITIES[project_role])
            paths[project_id] = f"{lineage}{project_id}/"
        return cls(
            ORGANISATION_ROLE_CAPABILITIES.get(role, frozenset()),
            role,
            {pk: frozenset(capabilities) for pk, capabilities in projects.items()},
            paths,
        )

    def narrowed(self, scope: TokenScope) -> Grants:
        """What a request with a scoped token may do: it reads what its user (or account) reads; every other
        capability only if the token lists it (empty: all) and only within the token's subtree (None:
        everywhere). Administering is never a token's."""
        acting = frozenset(scope.capabilities or Capability.values) - {Capability.READ, Capability.ADMINISTER}
        subtree = scope.project

        def kept(held: Iterable[str], inside: bool) -> frozenset[str]:
            return frozenset(c for c in held if c == Capability.READ or (inside and c in acting))

        projects = {
            pk: kept(held, subtree is None or pk == subtree.pk or self.paths[pk].startswith(subtree.path))
            for pk, held in self.projects.items()
        }
        paths = dict(self.paths)
        if subtree is not None:
            # What the user holds on the subtree through its ancestors or an organisation role.
            inherited = kept(self.capabilities(subtree), True)
            if inherited:
                projects[subtree.pk] = projects.get(subtree.pk, frozenset()) | inherited
                paths[subtree.pk] = subtree.path
        organisation = kept(self.organisation, subtree is None)
        return Grants(organisation, None, projects, paths)

    @property
    def sees_everything(self) -> bool:
        return Capability.READ in self.organisation

    @property
    def is_organisation_admin(self) -> bool:
        return self.organisation_role == OrganisationRole.ADMIN

    @property
    def administers_some_project(self) -> bool:
        """Holds the admin role on at least one project (given to them or to one of their teams)."""
        return any(Capability.ADMINISTER in capabilities for capabilities in self.projects.values())

    def capabilities(self, project: Project) -> frozenset[str]:
        held = set(self.organisation)
        for pk in (project.pk, *project.ancestor_ids):
            held.update(self.projects.get(pk, ()))
        return frozenset(held)

    def can(self, capability: str, project: Project) -> bool:
        return capability in self.capabilities(project)

    def can_reach(self, capability: str, project_id: int, lineage: str) -> bool:
        """``can`` for a project known by its id and lineage (read with something else, not loaded)."""
        if capability in self.organisation or capability in self.projects.get(project_id, ()):
            return True
        return any(capability in self.projects.get(int(pk), ()) for pk in lineage.strip("/").split("/") if pk)

    def administers_all_of(self, projects: list[Project]) -> bool:
        return all(self.can(Capability.ADMINISTER, project) for project in projects)

    def highest_administered(self, chain: list[Project]) -> Project | None:
        """Of a chain (project first, root last), the highest project the user administers."""
        for project in reversed(chain):
            if self.can(Capability.ADMINISTER, project):
                return project
        return None

    def project_filter(self, prefix: str = "") -> Q | None:
        """A filter on projects (through ``prefix``, e.g. "environment__project__") to the visible ones;
        None means every project."""
        if self.sees_everything:
            return None
        if not self.paths:
            return Q(pk__in=[]) if not prefix else Q(**{f"{prefix}pk__in": []})
        clauses = [Q(pk=pk) | Q(lineage__startswith=path) for pk, path in self.paths.items()]
        if not prefix:
            return reduce(or_, clauses)
        # Through a relation, the visible projects are found first (a few thousand rows at most) and the
        # related rows are matched by id. Checking every grant's path on each joined row instead costs
        # one comparison per grant per environment: 30 ms for 20 grants over 20,000 environments.
        return Q(**{f"{prefix}pk__in": Project.objects.filter(reduce(or_, clauses)).values("pk")})

    def capability_filter(self, capability: str, prefix: str = "") -> Q | None:
        """A filter on projects (through ``prefix``) to those where the user holds ``capability``;
        None means every project."""
        if capability in self.organisation:
            return None
        granted = [pk for pk, capabilities in self.projects.items() if capability in capabilities]
        if not granted:
            return Q(**{f"{prefix}pk__in": []})
        clauses = [
            Q(**{f"{prefix}pk": pk}) | Q(**{f"{prefix}lineage__startswith": self.paths[pk]}) for pk in granted
        ]
        return reduce(or_, clauses)

    def reaching_filter(self, prefix: str) -> Q:
        """A filter (through ``prefix``, e.g. "projects__") to the projects whose policies and roles reach a
        visible project: the visible ones, and the ancestors of the granted ones (their ids are in the
        granted paths). Only for users who do not see everything."""
        chain_ids = {int(part) for path in self.paths.values() for part in path.strip("/").split("/")}
        clauses = [Q(**{f"{prefix}pk__in": chain_ids})]
        clauses += [Q(**{f"{prefix}lineage__startswith": path}) for path in self.paths.values()]
        return reduce(or_, clauses)


def users_with(capability: str, project: Project) -> QuerySet:
    """Every active user holding ``capability`` on ``project``: through a role on it or an ancestor (their
    own or a team's), an organisation role, or as a superuser. One query."""
    User = get_user_model()
    chain = [project.pk, *project.ancestor_ids]
    roles = [role for role, capabilities in ROLE_CAPABILITIES.items() if capability in capabilities]
    organisation_roles = [
        role for role, capabilities in ORGANISATION_ROLE_CAPABILITIES.items() if capability in capabilities
    ]
    return (
        User.objects.filter(is_active=True)
        .filter(
            Q(is_superuser=True)
            | Q(organisation_role__role__in=organisation_roles)
            | Q(memberships__project_id__in=chain, memberships__role__in=roles)
            | Q(policy_teams__memberships__project_id__in=chain, policy_teams__memberships__role__in=roles)
        )
        .distinct()
    )


def grants(user: AbstractBaseUser) -> Grants:
    return Grants.of(user)


def can(user: AbstractBaseUser, capability: str, project: Project) -> bool:
    return Grants.of(user).can(capability, project)


WHAT_IS_NEEDED = {
    Capability.READ: "Only members of this project may see it.",
    Capability.DEPLOY: "Only deployers of this project may do this.",
    Capability.APPROVE: "Only approvers of this project or a parent project may approve or reject.",
    Capability.ADMINISTER: "Only admins of this project may do this.",
}


def require(user: AbstractBaseUser | Grants, capability: str, project: Project, message: str = "") -> None:
    held = user if isinstance(user, Grants) else Grants.of(user)
    if not held.can(capability, project):
        raise Forbidden(message or WHAT_IS_NEEDED[capability])


def may_author_policies(user: AbstractBaseUser) -> bool:
    """Policies and templates are organisation-wide: organisation admins and holders of the Django model
    permission (given in the admin) write them."""
    return Grants.of(user).is_organisation_admin or user.has_perm("policies_app.change_approvalpolicy")


def may_manage_templates(user: AbstractBaseUser) -> bool:
    return Grants.of(user).is_organisation_admin or user.has_perm("policies_app.change_template")


def may_manage_teams(user: AbstractBaseUser) -> bool:
    return Grants.of(user).is_organisation_admin or user.has_perm("policies_app.change_team")


# --- what a user may see ------------------------------------------------------------------------------


def _filtered(queryset: QuerySet, held: Grants, prefix: str) -> QuerySet:
    condition = held.project_filter(prefix)
    return queryset if condition is None else queryset.filter(condition)


def visible_projects(user: AbstractBaseUser) -> QuerySet[Project]:
    return _filtered(Project.objects.all(), Grants.of(user), "")


def visible_environments(user: AbstractBaseUser) -> QuerySet[Environment]:
    return _filtered(Environment.objects.select_related("project", "template"), Grants.of(user), "project__")


def visible_deployments(user: AbstractBaseUser) -> QuerySet[Deployment]:
    deployments = Deployment.objects.select_related(
        "environment__project", "environment__template", "deployer"
    )
    return _filtered(deployments, Grants.of(user), "environment__project__")


def visible_policies(user: AbstractBaseUser) -> QuerySet[ApprovalPolicy]:
    """Policies that apply somewhere the user can see: attached to a visible project or one of its
    ancestors (which the project inherits), or to the template of a visible environment. Organisation
    roles and policy authors see every policy."""
    held = Grants.of(user)
    if held.sees_everything or may_author_policies(user):
        return ApprovalPolicy.objects.all()
    if not held.paths:
        return ApprovalPolicy.objects.none()
    templates = visible_environments(user).values("template_id")
    return ApprovalPolicy.objects.filter(
        held.reaching_filter("projects__") | Q(templates__in=templates)
    ).distinct()


def require_policies_visible(user: AbstractBaseUser, policies: Iterable[ApprovalPolicy]) -> None:
    """Attaching a policy shows it to everyone where it is attached: only a policy the user already sees
    may be attached; another one "does not exist" for them."""
    wanted = {policy.pk for policy in policies}
    visible = set(visible_policies(user).filter(pk__in=wanted).values_list("pk", flat=True))
    hidden = sorted(wanted - visible)
    if hidden:
        raise Invalid({"approval_policies": [f'Invalid pk "{pk}" - object does not exist.' for pk in hidden]})


def visible_templates(user: AbstractBaseUser) -> QuerySet[Template]:
    """Templates of visible environments; every template for organisation roles, template managers and
    project admins (who choose a template when they create an environment)."""
    held = Grants.of(user)
    if held.sees_everything or may_manage_templates(user) or held.administers_some_project:
        return Template.objects.all()
    return Template.objects.filter(pk__in=visible_environments(user).values("template_id"))


def visible_teams(user: AbstractBaseUser) -> QuerySet[Team]:
    """The user's own teams and the teams holding a role that reaches a project the user can see."""
    if not user.is_authenticated:
        return Team.objects.none()
    held = Grants.of(user)
    if held.sees_everything or may_manage_teams(user):
        return Team.objects.all()
    if not held.paths:
        return Team.objects.filter(members=user)
    return Team.objects.filter(Q(members=user) | held.reaching_filter("memberships__project__")).distinct()
