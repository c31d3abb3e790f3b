"""Signing in with a password, throttled: after too many wrong passwords for one user name (or from one
address) within a window, signing in is refused for the rest of the window, even with the right password.
Counts live in the cache (Redis in production), so every web process sees the same ones.

Failures count against the user name as authentication resolves it: the sign-in form strips spaces and
folds compatibility characters (NFKC), so ``"sam "`` and the full-width ``"ｓam"`` sign in as ``sam`` and
must count as ``sam`` too, or each spelling would get its own allowance of guesses."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.shortcuts import render
from django.urls import reverse

from policies_app.accounts import sso
from policies_app.guards.client_address import client_address

# An address may fail more often than one user name: several people can sign in from behind one NAT.
ADDRESS_FACTOR = 5


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    limit = settings.LOGIN_FAILURE_LIMIT
    return [
        # Hashed: a key of bounded length and plain characters, whatever was typed.
        (f"signin-failures:user:{hashlib.sha256(username.casefold().encode()).hexdigest()}", limit),
        (f"signin-failures:addr:{address}", limit * ADDRESS_FACTOR),
    ]


def is_locked_out(username: str, address: str) -> bool:
    return any((cache.get(key) or 0) >= limit for key, limit in _keys(username, address))


def record_failure(username: str, address: str) -> None:
    for key, _ in _keys(username, address):
        cache.add(key, 0, timeout=settings.LOGIN_FAILURE_WINDOW_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW_SECONDS)


class ThrottledSignInMixin:
    request: Any

    def clean(self) -> dict:
        # The name exactly as the form hands it to authentication (stripped, NFKC).
        username = self.fields["username"].to_python(self.data.get("username", "") or "")
        address = client_address(self.request) if self.request is not None else ""
        if is_locked_out(username, address):
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            raise ValidationError(
                f"Too many failed sign-ins. Signing in is blocked for up to {minutes} minutes.",
                code="throttled",
            )
        if settings.SSO_REQUIRED:
            # The password backend refuses everyone but superusers; say why instead of "wrong password".
            self.error_messages = {
                **self.error_messages,
                "invalid_login": "This organisation signs in with single sign-on. Passwords are kept for "
                "break-glass administrators only.",
            }
        try:
            return super().clean()
        except ValidationError:
            record_failure(username, address)
            raise


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass


class SignInView(auth_views.LoginView):
    """The password form, with the identity provider's button when single sign-on is configured."""

    authentication_form = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = sso.is_enabled()
        context["sso_required"] = settings.SSO_REQUIRED
        context["sso_provider_name"] = settings.OIDC_PROVIDER_NAME
        context["sso_failed"] = self.request.GET.get("sso") == "failed"
        return context


class SignOutView(auth_views.LogoutView):
    """Signs out of the platform, then (when signed in through the provider and it offers it) out of the
    provider's session too, which comes back to the sign-in page. The way to the provider is a page that
    moves on by itself, not a redirect: the sign-out form's CSP (form-action 'self') would block a
    redirect to another origin."""

    def post(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        id_token = request.session.get("oidc_id_token", "")
        response = super().post(request, *args, **kwargs)
        if id_token:
            back = request.build_absolute_uri(reverse("login"))
            provider = sso.provider_sign_out_url(id_token, back)
            if provider:
                return render(request, "registration/signed_out_sso.html", {"provider_url": provider})
        return response
