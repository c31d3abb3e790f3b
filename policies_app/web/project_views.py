"""Pages of the project tree and of a project (its settings, members, policies, environments and
webhooks; an environment's own pages are in environment_views.py). Anyone who may see a project reads its
page; the forms are shown to those who may use them, and every change is one use case, which checks
again."""

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from policies_app import access
from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.errors import DomainError, Invalid
from policies_app.models import ApprovalPolicy, Environment, Project, ProjectMembership, Team
from policies_app.notifications import webhooks
from policies_app.projects import projects
from policies_app.projects.tree import InheritedPolicy, ProjectTree
from policies_app.projects.windows import (
    approval_carry_over_hours,
    pending_expiry_hours,
    release_expiry_hours,
)
from policies_app.web.admin_forms import (
    MemberForm,
    PolicyChoiceForm,
    ProjectForm,
    WebhookForm,
)
from policies_app.web.common import act, field_errors

User = get_user_model()


@dataclass
class ProjectNode:
    project: Project
    own_policies: list[ApprovalPolicy]
    inherited_policies: list[InheritedPolicy]
    environments: list[Environment] = field(default_factory=list)
    members: list[ProjectMembership] = field(default_factory=list)
    children: list["ProjectNode"] = field(default_factory=list)


@login_required
@require_GET
def project_tree(request: HttpRequest) -> HttpResponse:
    visible = list(access.visible_projects(request.user))
    # Loaded around the visible projects, because they inherit from ancestors the user may not see.
    tree = ProjectTree.around(visible)
    environments_by_project: dict[int, list[Environment]] = {}
    for environment in access.visible_environments(request.user).prefetch_related(
        "template__approval_policies"
    ):
        environments_by_project.setdefault(environment.project_id, []).append(environment)
    members: dict[int, list[ProjectMembership]] = {}
    for membership in ProjectMembership.objects.filter(project__in=visible).select_related("user", "team"):
        members.setdefault(membership.project_id, []).append(membership)
    nodes = {
        project.pk: ProjectNode(
            project,
            [attachment.policy for attachment in tree.own_attachments(project)],
            tree.inherited_policies(project),
            environments_by_project.get(project.pk, []),
            members.get(project.pk, []),
        )
        for project in sorted(visible, key=lambda project: project.name.lower())
    }
    roots: list[ProjectNode] = []
    for node in nodes.values():
        parent = nodes.get(node.project.parent_id)
        (parent.children if parent is not None else roots).append(node)
    may_create = projects.may_create_projects(request.user)
    return render(request, "web/project_tree.html", {"roots": roots, "may_create": may_create})


def _parent_choices(user: Any, tree_projects: list[Project]) -> list[tuple[int, str]]:
    tree = ProjectTree.around(tree_projects)
    return sorted(((p.pk, tree.full_name(p)) for p in tree_projects), key=lambda choice: choice[1])


def _visible_parent(user: Any, pk: int | None) -> Project | None:
    """The chosen parent, if the user may see it (whether they may place a project there is the use
    case's to say)."""
    return access.visible_projects(user).filter(pk=pk).first() if pk is not None else None


def _administered(user: Any) -> list[Project]:
    held = Grants.of(user)
    return list(access.visible_projects(user).filter(held.capability_filter(Capability.ADMINISTER) or Q()))


@login_required
@require_http_methods(["GET", "POST"])
def project_create(request: HttpRequest) -> HttpResponse:
    if not projects.may_create_projects(request.user):
        raise Http404("Only project admins create projects.")
    held = Grants.of(request.user)
    parents = _parent_choices(request.user, _administered(request.user))
    initial_parent = request.GET.get("parent")
    form = ProjectForm(
        request.POST or None,
        parents=parents,
        root=held.is_organisation_admin,
        initial={"parent": initial_parent},
    )

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            if name in form.fields:
                form.add_error(name, problems)
        return render(request, "web/project_form.html", {"form": form, "error": error}, status=status)

    if request.method == "GET":
        return page()
    if not form.is_valid():
        return page(status=400)
    data = form.cleaned_data
    parent = _visible_parent(request.user, data["parent"])
    if data["parent"] is not None and parent is None:
        return page(errors={"parent": ["Choose a project."]}, status=400)
    return act(
        request,
        lambda: projects.create_project(
            request.user,
            name=data["name"],
            parent=parent,
            description=data["description"],
            allow_self_approval=data["allow_self_approval"],
            pending_expiry_hours=data["pending_expiry_hours"],
            release_expiry_hours=data["release_expiry_hours"],
            approval_carry_over_hours=data["approval_carry_over_hours"],
        ),
        done=f"Project {data['name']} is created.",
        then=lambda project: reverse("web:project-detail", args=[project.pk]),
        page=page,
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's page; its forms post here with ``action`` naming the one use case to run."""
    project = get_object_or_404(access.visible_projects(request.user), pk=pk)
    if request.method == "GET":
        return _project_page(request, project)
    action = request.POST.get("action", "")
    handler = PROJECT_ACTIONS.get(action)
    if handler is None:
        return _project_page(request, project, error="Unknown action.", status=400)
    return handler(request, project)


def _project_page(
    request: HttpRequest,
    project: Project,
    *,
    error: str = "",
    errors: dict | None = None,
    status: int = 200,
    forms: dict[str, Any] | None = None,
    new_webhook_secret: str = "",
) -> HttpResponse:
    held = Grants.of(request.user)
    may_administer = held.can(Capability.ADMINISTER, project)
    tree = ProjectTree.around([project])
    attachments = tree.own_attachments(project)
    forms = forms or {}
    context: dict[str, Any] = {
        "project": project,
        "full_name": tree.full_name(project),
        "chain": list(reversed(tree.chain(project)))[:-1],
        "attachments": [(a, projects.may_detach(held, a, tree)) for a in attachments],
        "inherited": tree.inherited_policies(project),
        "effective_expiry": pending_expiry_hours(tree, project),
        "effective_release_expiry": release_expiry_hours(tree, project),
        "effective_carry_over": approval_carry_over_hours(tree, project),
        "members": project.memberships.select_related("user", "team").order_by("role", "user__username"),
        "environments": project.environments.select_related("template"),
        "children": project.children.all(),
        "may_administer": may_administer,
        "error": error,
        "new_webhook_secret": new_webhook_secret,
    }
    if may_administer:
        attached = {attachment.policy_id for attachment in attachments}
        parents = _parent_choices(
            request.user, [p for p in _administered(request.user) if p.pk != project.pk]
        )
        settings_form = forms.get("settings") or ProjectForm(
            initial={
                "name": project.name,
                "description": project.description,
                "parent": project.parent_id,
                "allow_self_approval": project.allow_self_approval,
                "pending_expiry_hours": project.pending_expiry_hours,
                "release_expiry_hours": project.release_expiry_hours,
                "approval_carry_over_hours": project.approval_carry_over_hours,
            },
            parents=parents,
            root=held.is_organisation_admin or project.parent_id is None,
        )
        if project.parent_id and project.parent_id not in dict(parents):
            settings_form.fields["parent"].choices = [
                *settings_form.fields["parent"].choices,
                (project.parent_id, tree.full_name(project.parent_id)),
            ]
        # A refusal's field errors go beside the fields of the form that was sent (only a bound form
        # takes errors: the settings form is unbound when another form was sent).
        sent = [form for form in (*forms.values(), settings_form) if form.is_bound]
        for name, problems in (errors or {}).items():
            for form in sent[:1]:
                if name in form.fields:
                    form.add_error(name, problems)
        context.update(
            settings_form=settings_form,
            member_form=forms.get("member") or MemberForm(teams=list(Team.objects.values_list("pk", "name"))),
            policy_form=PolicyChoiceForm(
                policies=[
                    (p.pk, p.name) for p in access.visible_policies(request.user).exclude(pk__in=attached)
                ]
            ),
            webhooks=webhooks.visible_webhooks(request.user).filter(project=project),
            webhook_form=forms.get("webhook") or WebhookForm(initial={"active": True}),
        )
    return render(request, "web/project_detail.html", context, status=status)


def _project_act(request: HttpRequest, project: Project, action: Any, done: str, forms=None) -> HttpResponse:
    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        return _project_page(request, project, error=error, errors=errors, status=status, forms=forms)

    return act(request, action, done=done, then=reverse("web:project-detail", args=[project.pk]), page=page)


def _invalid(request: HttpRequest, project: Project, form: Any, key: str) -> HttpResponse:
    problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
    return _project_page(request, project, error=problems, status=400, forms={key: form})


def _change_settings(request: HttpRequest, project: Project) -> HttpResponse:
    held = Grants.of(request.user)
    parents = _parent_choices(request.user, [p for p in _administered(request.user) if p.pk != project.pk])
    if project.parent_id and project.parent_id not in dict(parents):
        parents.append((project.parent_id, str(project.parent)))
    form = ProjectForm(
        request.POST, parents=parents, root=held.is_organisation_admin or not project.parent_id
    )
    if not form.is_valid():
        return _invalid(request, project, form, "settings")
    data = form.cleaned_data
    parent = _visible_parent(request.user, data["parent"])
    if data["parent"] is not None and parent is None:
        return _project_page(request, project, error="parent: Choose a project.", status=400)
    return _project_act(
        request,
        project,
        lambda: projects.update_project(
            request.user,
            project,
            name=data["name"],
            description=data["description"],
            parent=parent,
            allow_self_approval=data["allow_self_approval"],
            pending_expiry_hours=data["pending_expiry_hours"],
            release_expiry_hours=data["release_expiry_hours"],
            approval_carry_over_hours=data["approval_carry_over_hours"],
        ),
        "The project's settings are saved.",
        forms={"settings": form},
    )


def _add_member(request: HttpRequest, project: Project) -> HttpResponse:
    form = MemberForm(request.POST, teams=list(Team.objects.values_list("pk", "name")))
    if not form.is_valid():
        return _invalid(request, project, form, "member")
    data = form.cleaned_data
    member = User.objects.filter(username=data["username"].strip()).first() if data["username"] else None
    team = Team.objects.filter(pk=data["team"]).first() if data["team"] else None

    def grant():
        if data["username"] and member is None:
            raise Invalid({"username": [f"No user is named {data['username']!r}."]})
        return projects.grant_role(request.user, project, data["role"], member=member, team=team)

    who = data["username"] or (team.name if team else "")
    return _project_act(request, project, grant, f"{who} is now {data['role']} of {project.name}.")


def _remove_member(request: HttpRequest, project: Project) -> HttpResponse:
    membership = get_object_or_404(project.memberships, pk=request.POST.get("membership", "0") or 0)
    return _project_act(
        request,
        project,
        lambda: projects.revoke_role(request.user, membership),
        f"{membership.user or membership.team} is no longer {membership.role} of {project.name}.",
    )


def _attach_policy(request: HttpRequest, project: Project) -> HttpResponse:
    policy = get_object_or_404(access.visible_policies(request.user), pk=request.POST.get("policy", "0") or 0)
    return _project_act(
        request,
        project,
        lambda: projects.attach_policy(request.user, project, policy),
        f"Policy {policy.name} is attached to {project.name} and its sub-projects.",
    )


def _detach_policy(request: HttpRequest, project: Project) -> HttpResponse:
    policy = get_object_or_404(access.visible_policies(request.user), pk=request.POST.get("policy", "0") or 0)
    return _project_act(
        request,
        project,
        lambda: projects.detach_policy(request.user, project, policy),
        f"Policy {policy.name} is detached from {project.name}.",
    )


def _add_webhook(request: HttpRequest, project: Project) -> HttpResponse:
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _invalid(request, project, form, "webhook")
    data = form.cleaned_data
    try:
        webhook = webhooks.create_webhook(request.user, project, **data)
    except DomainError as refusal:
        return _project_page(
            request,
            project,
            error=refusal.message,
            errors=field_errors(refusal),
            status=refusal.http_status,
            forms={"webhook": form},
        )
    # The secret is shown on this answer only, like a new token's key (never in a redirect's session).
    messages.success(
        request,
        f"Webhook {data['name']} is added; it is told of every deployment of {project.name} and below.",
    )
    return _project_page(request, project, new_webhook_secret=webhook.secret)


PROJECT_ACTIONS = {
    "settings": _change_settings,
    "add_member": _add_member,
    "remove_member": _remove_member,
    "attach_policy": _attach_policy,
    "detach_policy": _detach_policy,
    "add_webhook": _add_webhook,
}
