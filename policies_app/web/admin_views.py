"""Administration pages beyond projects: templates (with their archives and policies), attaching a
policy from the policy page, users (organisation admins) and the audit log. A page the user may not use
answers 404; every change is one use case."""

from pathlib import PurePosixPath
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from policies_app import access
from policies_app.accounts import audit_log, users
from policies_app.api.views.audit import export_response
from policies_app.errors import DomainError
from policies_app.policies import attachments
from policies_app.projects import iac_templates
from policies_app.projects.tree import ProjectTree
from policies_app.web.admin_forms import (
    ArchiveForm,
    AuditFilterForm,
    PolicyChoiceForm,
    TemplateForm,
    UserChangeForm,
    UserForm,
)
from policies_app.web.common import act

AUDIT_PAGE_SIZE = 50


# --- templates ------------------------------------------------------------------------------------------


@login_required
@require_GET
def template_list(request: HttpRequest) -> HttpResponse:
    shown = access.visible_templates(request.user).prefetch_related("approval_policies")
    return render(
        request,
        "web/template_list.html",
        {"templates": shown, "may_manage": access.may_manage_templates(request.user)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def template_create(request: HttpRequest) -> HttpResponse:
    if not access.may_manage_templates(request.user):
        raise Http404("Only template managers create iac_templates.")
    form = TemplateForm(request.POST or None)

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            if name in form.fields:
                form.add_error(name, problems)
        return render(request, "web/template_form.html", {"form": form, "error": error}, status=status)

    if request.method == "GET":
        return page()
    if not form.is_valid():
        return page(status=400)
    return act(
        request,
        lambda: iac_templates.save_template(request.user, **form.cleaned_data),
        done=f"Template {form.cleaned_data['name']} is created.",
        then=lambda template: reverse("web:template-detail", args=[template.pk]),
        page=page,
    )


@login_required
@require_http_methods(["GET", "POST"])
def template_detail(request: HttpRequest, pk: int) -> HttpResponse:
    template = get_object_or_404(access.visible_templates(request.user), pk=pk)
    may_manage = access.may_manage_templates(request.user)
    forms: dict[str, Any] = {}

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        attached = list(template.approval_policies.all())
        context: dict[str, Any] = {
            "template": template,
            "attached": attached,
            "environments": access.visible_environments(request.user).filter(template=template),
            "may_manage": may_manage,
            "error": error,
        }
        if may_manage:
            form = forms.get("settings") or TemplateForm(
                initial={name: getattr(template, name) for name in iac_templates.FIELDS}
            )
            for name, problems in (errors or {}).items():
                if name in form.fields:
                    form.add_error(name, problems)
            context.update(
                form=form,
                archive_form=forms.get("archive") or ArchiveForm(),
                policy_form=PolicyChoiceForm(
                    policies=[
                        (p.pk, p.name)
                        for p in access.visible_policies(request.user).exclude(
                            pk__in=[p.pk for p in attached]
                        )
                    ]
                ),
            )
        return render(request, "web/template_detail.html", context, status=status)

    if request.method == "GET":
        return page()
    action = request.POST.get("action")
    here = reverse("web:template-detail", args=[template.pk])
    if action == "settings":
        form = forms["settings"] = TemplateForm(request.POST)
        if not form.is_valid():
            return page(status=400)
        return act(
            request,
            lambda: iac_templates.save_template(request.user, template, **form.cleaned_data),
            done="The template is saved.",
            then=here,
            page=page,
        )
    if action == "archive":
        form = forms["archive"] = ArchiveForm(request.POST, request.FILES)
        if not form.is_valid():
            return page(status=400)
        return act(
            request,
            lambda: iac_templates.upload_archive(request.user, template, request.FILES.get("archive")),
            done="The archive is uploaded.",
            then=here,
            page=page,
        )
    if action in ("attach_policy", "detach_policy"):
        policy = get_object_or_404(access.visible_policies(request.user), pk=request.POST.get("policy") or 0)
        use_case = iac_templates.attach_policy if action == "attach_policy" else iac_templates.detach_policy
        verb = "attached to" if action == "attach_policy" else "detached from"
        return act(
            request,
            lambda: use_case(request.user, template, policy),
            done=f"Policy {policy.name} is {verb} template {template.name}.",
            then=here,
            page=page,
        )
    return page(error="Unknown action.", status=400)


@login_required
@require_GET
def template_archive(request: HttpRequest, name: str) -> FileResponse:
    """An uploaded template archive, for those who may see its template (the admin's link leads here)."""
    stored = f"template-archives/{PurePosixPath(name).name}"
    template = access.visible_templates(request.user).filter(archive=stored).first()
    if template is None or not template.archive:
        raise Http404("No such archive.")
    return FileResponse(template.archive.open("rb"), as_attachment=True, filename=PurePosixPath(stored).name)


# --- attaching a policy from the policy page -------------------------------------------------------------


@login_required
@require_POST
def policy_attach(request: HttpRequest, pk: int) -> HttpResponse:
    """The form of ``{% policy_attachments policy %}``: attach to or detach from a project or template."""
    policy = get_object_or_404(access.visible_policies(request.user), pk=pk)
    detach = request.POST.get("action") == "detach"
    back = reverse("web:policy-detail", args=[policy.pk])
    try:
        where = (attachments.detach if detach else attachments.attach)(
            request.user, policy, request.POST.get("target", "")
        )
    except DomainError as refusal:
        # The policy page belongs to another module: the refusal is told there as a message.
        messages.error(request, refusal.message)
        return redirect(back)
    messages.success(
        request, f"Policy {policy.name} is {'detached from' if detach else 'attached to'} {where}."
    )
    return redirect(back)


# --- users ----------------------------------------------------------------------------------------------


def _require_user_manager(request: HttpRequest) -> None:
    if not users.may_manage_users(request.user):
        raise Http404("Only organisation admins manage users.")


@login_required
@require_http_methods(["GET", "POST"])
def user_list(request: HttpRequest) -> HttpResponse:
    _require_user_manager(request)
    form = UserForm(request.POST or None)

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            if name in form.fields:
                form.add_error(name, problems)
        accounts = users.visible_users(request.user)
        return render(
            request, "web/user_list.html", {"accounts": accounts, "form": form, "error": error}, status=status
        )

    if request.method == "GET":
        return page()
    if not form.is_valid():
        return page(status=400)

    def create() -> Any:
        account, invited = users.create_user(request.user, **form.cleaned_data)
        return account, invited

    name = form.cleaned_data["username"]
    return act(
        request,
        create,
        done=f"User {name} is created"
        + ("; an invitation to choose a password is emailed." if not form.cleaned_data["password"] else "."),
        then=reverse("web:user-list"),
        page=page,
    )


@login_required
@require_POST
def user_change(request: HttpRequest, pk: int) -> HttpResponse:
    _require_user_manager(request)
    account = users.get_visible_user(request.user, pk)
    form = UserChangeForm(request.POST)
    if not form.is_valid():
        raise Http404("Bad form.")

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        return render(
            request,
            "web/user_list.html",
            {"accounts": users.visible_users(request.user), "form": UserForm(), "error": error},
            status=status,
        )

    return act(
        request,
        lambda: users.change_user(
            request.user,
            account,
            is_active=form.cleaned_data["is_active"],
            organisation_role=form.cleaned_data["organisation_role"],
        ),
        done=f"User {account.username} is saved.",
        then=reverse("web:user-list"),
        page=page,
    )


# --- the audit log --------------------------------------------------------------------------------------


def _audit_entries(request: HttpRequest) -> tuple[Any, AuditFilterForm]:
    if not audit_log.may_read_audit_log(request.user):
        raise Http404("Only project admins and organisation roles read the audit log.")
    projects = list(access.visible_projects(request.user))
    tree = ProjectTree.around(projects)
    choices = sorted(((p.pk, tree.full_name(p)) for p in projects), key=lambda choice: choice[1])
    form = AuditFilterForm(request.GET, projects=choices)
    entries = audit_log.visible_entries(request.user)
    if form.is_valid():
        entries = audit_log.filtered(entries, audit_log.AuditFilters(**form.cleaned_data))
    else:
        entries = entries.none()
    return entries, form


@login_required
@require_GET
def audit_list(request: HttpRequest) -> HttpResponse:
    entries, form = _audit_entries(request)
    page = Paginator(entries, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "web/audit_list.html", {"page": page, "form": form, "query": query.urlencode()})


@login_required
@require_GET
def audit_export(request: HttpRequest, kind: str) -> HttpResponse:
    if kind not in ("csv", "json"):
        raise Http404("Exports are .csv or .json.")
    entries, _ = _audit_entries(request)
    return export_response(entries, kind)
