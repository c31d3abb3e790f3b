"""Pages of an environment: what it deploys, its variables (sensitive ones masked), the policies that
apply to it and the waivers holding there, its recent deployments and Terraform state; creating and
editing one (project admins)."""

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from policies_app import access
from policies_app.choices import Capability
from policies_app.deployments import waivers
from policies_app.guards.masking import MASK, environment_variables_shown
from policies_app.models import Environment, Project
from policies_app.projects import environment_paths, environments
from policies_app.projects.state_summary import summarise_state
from policies_app.projects.tree import tree_for
from policies_app.web.admin_forms import EnvironmentForm
from policies_app.web.common import act
from policies_app.web.variable_forms import HELP, KINDS, BaseVariableRows, variable_rows

RECENT_DEPLOYMENTS = 20


@login_required
@require_GET
def environment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render_environment(request, pk)


def render_environment(request: HttpRequest, pk: int, error: str = "", status: int = 200) -> HttpResponse:
    """The environment's page (again, with ``error`` and its HTTP status after a refused action)."""
    environment = get_object_or_404(
        access.visible_environments(request.user).prefetch_related("template__approval_policies"), pk=pk
    )
    deployments = access.visible_deployments(request.user).filter(environment=environment)[
        :RECENT_DEPLOYMENTS
    ]
    tree = tree_for(environment.project)
    current_state = environment.states.select_related("uploaded_by").order_by("-created_at", "-id").first()
    shown = environment_variables_shown(environment)
    path = environment_paths.environment_path(tree, environment)
    policies = tree.policy_sources(environment)
    holding = waivers.waivers_holding_for(environment)
    context = {
        "error": error,
        "waivers": [(waiver, waivers.may_revoke(request.user, waiver)) for waiver in holding],
        "may_grant_waiver": policies and waivers.may_grant(request.user, environment.project),
        "waiver_max_hours": settings.WAIVER_MAX_HOURS,
        "environment_path": path,
        "pipeline_snippets": environment_paths.pipeline_snippets(path, settings.PLATFORM_URL),
        "environment": environment,
        "environment_variables": shown["environment"],
        "terraform_variables": shown["terraform"],
        "project_name": tree.full_name(environment.project),
        "policies": policies,
        "deployments": deployments,
        "current_state": current_state,
        "state": summarise_state(current_state.document) if current_state else None,
        "may_administer": access.can(request.user, Capability.ADMINISTER, environment.project),
    }
    return render(request, "web/environment_detail.html", context, status=status)


def _template_choices(user: Any) -> list[tuple[int, str]]:
    return [(t.pk, f"{t.name} ({t.get_type_display()})") for t in access.visible_templates(user)]


def _environment_form_page(
    request: HttpRequest,
    form: EnvironmentForm,
    rows: dict[str, BaseVariableRows],
    project: Project,
    environment: Environment | None,
):
    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            kind = name.removesuffix("_variables")
            if name in form.fields:
                form.add_error(name, problems)
            elif kind in rows:
                # Shown above the kind's rows: the use case speaks of the whole object.
                rows[kind].non_form_errors().extend(problems)
        editors = [(kind, KINDS[kind], HELP[kind], rows[kind]) for kind in KINDS]
        context = {
            "form": form,
            "editors": editors,
            "project": project,
            "environment": environment,
            "error": error,
            "mask": MASK,
        }
        return render(request, "web/environment_form.html", context, status=status)

    return page


def _variables_of(rows: dict[str, BaseVariableRows]) -> dict[str, Any]:
    """The use case's arguments from the valid editors."""
    return {
        "environment_variables": rows["environment"].variables(),
        "terraform_variables": rows["terraform"].variables(),
        "sensitive_variables": {kind: rows[kind].sensitive() for kind in KINDS},
    }


@login_required
@require_http_methods(["GET", "POST"])
def environment_create(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = get_object_or_404(access.visible_projects(request.user), pk=project_pk)
    if not access.can(request.user, Capability.ADMINISTER, project):
        raise Http404("Only admins of this project may do this.")
    form = EnvironmentForm(request.POST or None, templates=_template_choices(request.user))
    rows = variable_rows(request.POST or None, None)
    page = _environment_form_page(request, form, rows, project, None)
    if request.method == "GET":
        return page()
    if not _all_valid(form, rows):
        return page(status=400)
    data = form.cleaned_data
    template = access.visible_templates(request.user).get(pk=data["template"])
    return act(
        request,
        lambda: environments.create_environment(
            request.user,
            name=data["name"],
            project=project,
            template=template,
            approve_plans_automatically=data["approve_plans_automatically"],
            **_variables_of(rows),
        ),
        done=f"Environment {data['name']} is created.",
        then=lambda environment: reverse("web:environment-detail", args=[environment.pk]),
        page=page,
    )


@login_required
@require_http_methods(["GET", "POST"])
def environment_edit(request: HttpRequest, pk: int) -> HttpResponse:
    environment = get_object_or_404(access.visible_environments(request.user), pk=pk)
    if not access.can(request.user, Capability.ADMINISTER, environment.project):
        raise Http404("Only admins of this project may do this.")
    initial = {
        "name": environment.name,
        "template": environment.template_id,
        "approve_plans_automatically": environment.approve_plans_automatically,
    }
    form = EnvironmentForm(request.POST or None, initial=initial, templates=_template_choices(request.user))
    rows = variable_rows(request.POST or None, environment)
    page = _environment_form_page(request, form, rows, environment.project, environment)
    if request.method == "GET":
        return page()
    if not _all_valid(form, rows):
        return page(status=400)
    data = form.cleaned_data
    template = access.visible_templates(request.user).get(pk=data["template"])
    return act(
        request,
        lambda: environments.update_environment(
            request.user,
            environment,
            name=data["name"],
            template=template,
            approve_plans_automatically=data["approve_plans_automatically"],
            **_variables_of(rows),
        ),
        done=f"Environment {data['name']} is saved.",
        then=reverse("web:environment-detail", args=[environment.pk]),
        page=page,
    )


def _all_valid(form: EnvironmentForm, rows: dict[str, BaseVariableRows]) -> bool:
    return all([form.is_valid(), *(editor.is_valid() for editor in rows.values())])
