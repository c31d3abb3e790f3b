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
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError

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
        try:
            return super().clean()
        except ValidationError:
            record_failure(username, address)
            raise


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass
