"""A project's service accounts, for its admins: make one, make and revoke its tokens (the key shown
once), see each token's scope, expiry and last use. The rules are accounts/service_accounts.py's."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from policies_app import access
from policies_app.accounts import service_accounts
from policies_app.errors import DomainError, Invalid
from policies_app.models import Project


def _page(request: HttpRequest, project: Project, *, error: str = "", new_key: str = "", status: int = 200):
    accounts = service_accounts.visible_service_accounts(request.user).filter(project=project)
    return render(
        request,
        "web/service_accounts.html",
        {
            "project": project,
            "accounts": accounts.prefetch_related("tokens__scope_project"),
            "subtree": [
                project,
                *access.visible_projects(request.user).filter(lineage__startswith=project.path),
            ],
            "error": error,
            "new_key": new_key,
        },
        status=status,
    )


def _days(raw: str) -> int | None:
    if not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise Invalid({"expires_in_days": ["A whole number of days."]}) from None


@login_required
@require_http_methods(["GET", "POST"])
def service_accounts_page(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(access.visible_projects(request.user), pk=pk)
    try:
        service_accounts.require_may_manage(request.user, project)
    except DomainError as refusal:
        return render(request, "403.html", {"exception": refusal.message}, status=403)
    if request.method == "GET":
        return _page(request, project)
    action = request.POST.get("action", "")
    try:
        if action == "create_account":
            account = service_accounts.create_service_account(
                request.user,
                project,
                request.POST.get("name", ""),
                description=request.POST.get("description", ""),
                may_approve=request.POST.get("may_approve") == "on",
            )
            messages.success(request, f"Service account {account.name} is created.")
            return redirect(reverse("web:service-accounts", args=[project.pk]))
        account = get_object_or_404(
            service_accounts.visible_service_accounts(request.user).filter(project=project),
            pk=request.POST.get("account") or 0,
        )
        if action == "create_token":
            scope = request.POST.get("scope") or project.pk
            _, key = service_accounts.create_account_token(
                request.user,
                account,
                capabilities=request.POST.getlist("capabilities"),
                project=get_object_or_404(access.visible_projects(request.user), pk=scope),
                expires_in_days=_days(request.POST.get("expires_in_days", "")),
            )
            return _page(request, project, new_key=key, status=201)
        if action == "revoke_token":
            token = get_object_or_404(account.tokens, pk=request.POST.get("token") or 0)
            service_accounts.revoke_account_token(request.user, token)
            messages.success(request, f"Token {token.prefix}… of {account.name} is revoked.")
            return redirect(reverse("web:service-accounts", args=[project.pk]))
    except DomainError as refusal:
        return _page(request, project, error=refusal.message, status=refusal.http_status)
    return _page(request, project, error="Unknown action.", status=400)
