"""Requests that fail to authenticate are throttled by address, before they are refused.

DRF checks throttles only after authentication and permissions, so a request with a wrong token (or
none) would be refused with 401 for ever without ever counting. These classes count such a request
against the ``anon`` rate first, and answer 429 once the address is over it.

Every throttle counts per the address the server trusts (guards/client_address.py): DRF's own would
believe any ``X-Forwarded-For`` a client sends.
"""

from typing import Any

from rest_framework import authentication, permissions, throttling
from rest_framework.exceptions import AuthenticationFailed, Throttled

from policies_app.guards.client_address import client_address


class TrustedAddressMixin:
    def get_ident(self, request: Any) -> str:
        return client_address(request)


class AnonRateThrottle(TrustedAddressMixin, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(TrustedAddressMixin, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(TrustedAddressMixin, throttling.ScopedRateThrottle):
    pass


class UnauthenticatedThrottle(TrustedAddressMixin, throttling.SimpleRateThrottle):
    scope = "anon"

    def get_cache_key(self, request: Any, view: Any) -> str:
        # By address only: the request has no user (asking for one would authenticate again).
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def count_unauthenticated(request: Any) -> None:
    throttle = UnauthenticatedThrottle()
    if not throttle.allow_request(request, None):
        raise Throttled(wait=throttle.wait())


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``: a user's named API tokens, and the older one-per-user ones, both
    found by hash (accounts/tokens.py)."""

    def authenticate_credentials(self, key: str) -> Any:
        from policies_app.accounts.tokens import TokenExpired, user_for_key

        try:
            user = user_for_key(key)
        except TokenExpired:
            raise AuthenticationFailed("Token expired.", code="token_expired") from None
        if user is None:
            raise AuthenticationFailed("Invalid token.")
        return (user, None)

    def authenticate(self, request: Any) -> Any:
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            count_unauthenticated(request)
            raise


class IsAuthenticated(permissions.IsAuthenticated):
    def has_permission(self, request: Any, view: Any) -> bool:
        if super().has_permission(request, view):
            return True
        count_unauthenticated(request)
        return False


def presented_key(request: Any) -> str:
    """The key of an ``Authorization: Token <key>`` header, as TokenAuthentication reads it; "" for
    anything else (no header, another scheme, a malformed one: TokenAuthentication refuses those)."""
    parts = authentication.get_authorization_header(request).split()
    if len(parts) != 2 or parts[0].lower() != TokenAuthentication.keyword.lower().encode():
        return ""
    try:
        return parts[1].decode()
    except UnicodeError:
        return ""
