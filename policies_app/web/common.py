"""What the pages share: the one translation of a use case's refusal into a page, and the success
message after an action (the page is then shown again by a redirect, so a reload never repeats it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from policies_app.errors import DomainError, Invalid


def field_errors(refusal: DomainError) -> dict[str, list[str]]:
    return refusal.errors if isinstance(refusal, Invalid) else {}


def act(
    request: HttpRequest,
    action: Callable[[], Any],
    *,
    done: str | Callable[[Any], str],
    then: str | Callable[[Any], str],
    page: Callable[..., HttpResponse],
) -> HttpResponse:
    """Run one use case; on success say ``done`` and go to ``then``; on a refusal show ``page`` again
    with why (and the field errors), answered with the refusal's HTTP status."""
    try:
        result = action()
    except DomainError as refusal:
        return page(error=refusal.message, errors=field_errors(refusal), status=refusal.http_status)
    messages.success(request, done(result) if callable(done) else done)
    return redirect(then(result) if callable(then) else then)
