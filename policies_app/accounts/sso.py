"""Single sign-on with the organisation's OpenID Connect provider (mozilla-django-oidc, authorization
code flow with PKCE and a nonce).

Off unless OIDC_ISSUER and OIDC_RP_CLIENT_ID are set: then passwords remain the only way in. The
provider's endpoints come from the settings when given, else from its discovery document
(``<issuer>/.well-known/openid-configuration``), read once per process. Every call to the provider
(discovery, token, userinfo, keys) goes through the egress guard (guards/egress.py): a provider on a
private network is reached only when EGRESS_ALLOWED_NETWORKS allows its network.

What is trusted from the provider (docs/security.md, "Single sign-on"): an ID token signed with one of
the provider's published keys, issued by the configured issuer for this client (checked here: the
library checks neither), carrying our nonce; the userinfo claims of the same subject. A user is found
by (issuer, subject), never by a name or address the provider's users may change; an email links to an
existing account only when the provider says it is verified and the account is neither superuser nor
staff (break-glass accounts are never taken over). Group memberships come from the groups claim at
every sign-in and only through the group → team mapping kept by organisation admins."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from policies_app import audit
from policies_app.accounts import teams
from policies_app.guards import egress
from policies_app.models import SsoIdentity, TeamMembership

# Settings read from the discovery document when the operator did not set them.
_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}
_discovery: dict[str, dict[str, Any]] = {}
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


def is_enabled() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_RP_CLIENT_ID)


def _fetch_json(method: str, url: str, **kwargs: Any) -> Any:
    """One exchange with the provider through the egress guard; anything but a 200 JSON answer fails."""
    try:
        answer = egress.request(method, url, timeout_s=settings.OIDC_TIMEOUT, **kwargs)
    except (egress.EgressRefused, egress.EgressFailed) as problem:
        raise SuspiciousOperation(f"The identity provider could not be reached: {problem}") from None
    if answer.status != 200:
        raise SuspiciousOperation(f"The identity provider answered {answer.status} at {url}")
    try:
        return json.loads(answer.body)
    except ValueError:
        raise SuspiciousOperation(f"The identity provider's answer at {url} is not JSON") from None


def discovery() -> dict[str, Any]:
    issuer = settings.OIDC_ISSUER.rstrip("/")
    if issuer not in _discovery:
        document = _fetch_json("GET", f"{issuer}/.well-known/openid-configuration")
        if str(document.get("issuer", "")).rstrip("/") != issuer:
            raise ImproperlyConfigured(
                "The provider's discovery document names another issuer than OIDC_ISSUER"
            )
        _discovery[issuer] = document
    return _discovery[issuer]


def sso_setting(name: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting: the operator's value, else the provider's discovered one."""
    value = getattr(settings, name, None)
    if value is not None and value != "":
        return value
    if name in _DISCOVERED and is_enabled():
        found = discovery().get(_DISCOVERED[name])
        if found:
            return found
    if default:
        return default[0]
    raise ImproperlyConfigured(f"Setting {name} not found")


class PasswordBackend(ModelBackend):
    """Passwords, as Django checks them; with SSO_REQUIRED only superusers (break-glass) may use one."""

    def user_can_authenticate(self, user: Any) -> bool:
        if settings.SSO_REQUIRED and not user.is_superuser:
            return False
        return super().user_can_authenticate(user)


class SsoBackend(OIDCAuthenticationBackend):
    """The provider's sign-in, its HTTP calls through the egress guard, its ID token checked for issuer
    and audience too, its user found by subject (sign_in_from_claims)."""

    get_settings = staticmethod(sso_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds every backend for every password sign-in: this one asks nothing of the provider
        # until a provider's answer comes back (authenticate), so a break-glass password sign-in works
        # while the provider is down.
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if not is_enabled() or request is None or "code" not in request.GET or "state" not in request.GET:
            return None
        super().__init__()
        return super().authenticate(request, **kwargs)

    def retrieve_matching_jwk(self, token: str) -> Any:
        header = jwt.get_unverified_header(token)
        for key in _fetch_json("GET", self.OIDC_OP_JWKS_ENDPOINT).get("keys", []):
            if key.get("kid") == header.get("kid") and key.get("alg", header.get("alg")) == header.get("alg"):
                return jwt.PyJWK(key)
        raise SuspiciousOperation("No key of the provider matches the token's")

    def get_token(self, payload: dict[str, Any]) -> Any:
        body = urlencode(payload).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        return _fetch_json("POST", self.OIDC_OP_TOKEN_ENDPOINT, headers=headers, body=body)

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = _fetch_json(
            "GET", self.OIDC_OP_USER_ENDPOINT, headers={"Authorization": f"Bearer {access_token}"}
        )
        # OpenID Connect Core 5.3.2: the userinfo answer is about the ID token's subject or is not used.
        if not isinstance(claims, dict) or claims.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The userinfo answer is about another subject than the ID token")
        return claims

    def verify_token(self, token: str, **kwargs: Any) -> Any:
        payload = super().verify_token(token, **kwargs)
        issuer = settings.OIDC_ISSUER.rstrip("/")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if str(payload.get("iss", "")).rstrip("/") != issuer or self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation(
                "The ID token was not issued by the configured provider for this client"
            )
        if not payload.get("sub"):
            raise SuspiciousOperation("The ID token names no subject")
        return payload

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def get_user(self, user_id: Any) -> Any:
        # mozilla-django-oidc's keeps a deactivated user signed in; Django's password backend does not.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        return sign_in_from_claims(settings.OIDC_ISSUER.rstrip("/"), claims)


def sign_in_from_claims(issuer: str, claims: dict[str, Any]) -> Any:
    """The user that the provider's (issuer, subject) signs in as: found, linked or created, with their
    email and name from the claims and their SSO-group team memberships made to match the groups claim."""
    subject = str(claims["sub"])
    email = str(claims.get("email") or "")[:254]
    with transaction.atomic():
        identity = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
        if identity is None:
            user = _linkable_user(email, claims) or _new_user(claims, email)
            identity = SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            audit.record(None, "sso.identity_linked", user, after={"issuer": issuer, "subject": subject})
        user = identity.user
        if not user.is_active:
            return None
        changed = False
        for field, value in (
            ("email", email),
            ("first_name", str(claims.get("given_name") or "")[:150]),
            ("last_name", str(claims.get("family_name") or "")[:150]),
        ):
            if value and getattr(user, field) != value:
                setattr(user, field, value)
                changed = True
        if changed:
            user.save()
        SsoIdentity.objects.filter(pk=identity.pk).update(last_sign_in_at=timezone.now())
        teams.sync_provider_teams(
            user, claims.get(settings.OIDC_GROUPS_CLAIM), TeamMembership.Source.SSO_GROUP
        )
    return user


def _linkable_user(email: str, claims: dict[str, Any]) -> Any:
    if not email or claims.get("email_verified") is not True:
        return None
    matches = list(
        get_user_model().objects.filter(email__iexact=email, is_superuser=False, is_staff=False)[:2]
    )
    # Two accounts with one address: linking either would be a guess.
    return matches[0] if len(matches) == 1 else None


def _new_user(claims: dict[str, Any], email: str) -> Any:
    User = get_user_model()
    wanted = str(claims.get("preferred_username") or email.split("@")[0] or claims["sub"])
    base = _USERNAME_UNSAFE.sub("-", wanted)[:140] or "sso-user"
    username, number = base, 1
    while User.objects.filter(username__iexact=username).exists():
        number += 1
        username = f"{base}-{number}"
    user = User.objects.create_user(username=username, email=email)
    user.set_unusable_password()
    user.save()
    audit.record(None, "user.created", user, after={"username": username, "email": email, "source": "sso"})
    return user


class SsoRequestView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider (404 while single sign-on is off)."""

    get_settings = staticmethod(sso_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not is_enabled():
            raise Http404("Single sign-on is not configured.")
        super().__init__(*args, **kwargs)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here with a code (404 while single sign-on is off)."""

    get_settings = staticmethod(sso_setting)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not is_enabled():
            raise Http404("Single sign-on is not configured.")
        return super().dispatch(request, *args, **kwargs)


def provider_sign_out_url(id_token: str, after: str) -> str | None:
    """Where the browser ends its session at the provider too (RP-initiated logout), if it says."""
    if not is_enabled():
        return None
    endpoint = sso_setting("OIDC_OP_LOGOUT_ENDPOINT", None)
    if not endpoint:
        return None
    query = {"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": after}
    if id_token:
        query["id_token_hint"] = id_token
    return f"{endpoint}?{urlencode(query)}"
