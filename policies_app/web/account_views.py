"""The signed-in user's own page: how they hear of waiting deployments, and their API tokens."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from policies_app.accounts import tokens
from policies_app.errors import Invalid
from policies_app.models import ApiToken, LegacyApiToken
from policies_app.notifications import approval_emails
from policies_app.web.admin_forms import NotificationForm, TokenForm
from policies_app.web.common import act


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    token_form = TokenForm(request.POST if request.POST.get("action") == "create_token" else None)
    new_key = ""

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            if name in token_form.fields:
                token_form.add_error(name, problems)
        context = {
            "tokens": ApiToken.objects.filter(user=request.user),
            "legacy_token": LegacyApiToken.objects.filter(user=request.user).first(),
            "token_form": token_form,
            "notification_form": NotificationForm(
                initial={"email": approval_emails.email_mode(request.user)}
            ),
            "new_key": new_key,
            "error": error,
        }
        return render(request, "web/account.html", context, status=status)

    if request.method == "GET":
        return page()
    here = reverse("web:account")
    action = request.POST.get("action")
    if action == "create_token":
        if not token_form.is_valid():
            return page(status=400)
        try:
            _, new_key = tokens.create_token(request.user, token_form.cleaned_data["name"])
        except Invalid as refusal:
            return page(error=refusal.message, errors=refusal.errors, status=400)
        # Shown on this answer only (never stored in the clear, never in a redirect's session).
        messages.success(request, "The token is created. Copy its key now: it is not shown again.")
        token_form = TokenForm()
        return page()
    if action == "revoke_token":
        token = get_object_or_404(ApiToken, pk=request.POST.get("token") or 0, user=request.user)
        return act(
            request,
            lambda: tokens.revoke_token(request.user, token),
            done=f"Token {token.name} is revoked.",
            then=here,
            page=page,
        )
    if action == "revoke_legacy_token":
        return act(
            request,
            lambda: tokens.revoke_legacy_token(request.user),
            done="Your older token is revoked.",
            then=here,
            page=page,
        )
    if action == "notifications":
        form = NotificationForm(request.POST)
        if not form.is_valid():
            return page(error="Choose how you want to be told.", status=400)
        return act(
            request,
            lambda: approval_emails.set_email_mode(request.user, form.cleaned_data["email"]),
            done="Your notification settings are saved.",
            then=here,
            page=page,
        )
    return page(error="Unknown action.", status=400)
