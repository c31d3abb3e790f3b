"""Requests that fail to authenticate are throttled by address, before they are refused.

DRF checks throttles only after authentication and permissions, so a request with a wrong token (or
none) would be refused with 401 for ever without ever counting. These classes count such a request
against the ``anon`` rate first, and answer 429 once the address is over it.

Every throttle counts per the address the server trusts (guards/client_address.py): DRF's own would
believe any ``X-Forwarded-For`` a client sends.

Every throttle keeps counts per sixtieth of its window (``CountsPerSlice``) where DRF keeps one timestamp
per request: with DRF's a pipeline user within the ``user`` rate (6000/minute) had a list of thousands of
timestamps read from the cache, unpickled, pickled and written back on every request, a third of the CPU
of a waiting pipeline's poll (issue 17).
"""

from typing import Any

from rest_framework import authentication, permissions, throttling
from rest_framework.exceptions import AuthenticationFailed, Throttled

from policies_app.guards.client_address import client_address


class TrustedAddressMixin:
    def get_ident(self, request: Any) -> str:
        return client_address(request)


class CountsPerSlice:
    """DRF's SimpleRateThrottle with its history stored as the number of requests per slice (a sixtieth
    of the window: a second of a per-minute rate), at most 61 numbers whatever the rate.

    A slice counts while any part of it is within the window, so the rule never allows more requests
    in a window than the rate; at most it refuses a slice (1/60 of the window) earlier than DRF's exact
    timestamps would. ``wait()`` is when the oldest counted slice leaves the window."""

    SLICES = 60

    def allow_request(self, request: Any, view: Any) -> bool:
        # ScopedRateThrottle sets its rate from the view first; then this replaces SimpleRateThrottle's.
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        self.width = self.duration / self.SLICES
        oldest = int((self.now - self.duration) // self.width)  # the slice holding the window's start
        stored = self.cache.get(self.key) or {}
        if not isinstance(stored, dict):  # a history DRF stored before this class (a list of times)
            stored = {}
        self.history = {index: count for index, count in stored.items() if index >= oldest}
        if sum(self.history.values()) >= self.num_requests:
            return self.throttle_failure()
        return self.throttle_success()

    def throttle_success(self) -> bool:
        index = int(self.now // self.width)
        self.history[index] = self.history.get(index, 0) + 1
        self.cache.set(self.key, self.history, self.duration + self.width)
        return True

    def wait(self) -> float | None:
        if not self.history:
            return self.duration
        return max(0.0, (min(self.history) + 1) * self.width + self.duration - self.now)


class AnonRateThrottle(TrustedAddressMixin, CountsPerSlice, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(TrustedAddressMixin, CountsPerSlice, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(TrustedAddressMixin, CountsPerSlice, throttling.ScopedRateThrottle):
    def allow_request(self, request: Any, view: Any) -> bool:
        # DRF's ScopedRateThrottle: the rate is the view's scope's (none, no throttle), then counted.
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)


class UnauthenticatedThrottle(TrustedAddressMixin, CountsPerSlice, throttling.SimpleRateThrottle):
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
