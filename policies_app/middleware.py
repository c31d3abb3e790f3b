"""Request bodies and response headers, before any view sees the request."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse


def _limit_mb() -> str:
    return f"{settings.REQUEST_SIZE_LIMIT_BYTES / (1024 * 1024):g} MB"


def _too_large() -> JsonResponse:
    # Built only when needed: every request passes here (a poll costs about four times /healthz).
    return JsonResponse(
        {"detail": f"The request is larger than the size limit of {_limit_mb()}.", "code": "too_large"},
        status=413,
    )


class RequestBodyMiddleware:
    """Every body is read within the size limit, and none is silently dropped.

    Django reads a body only up to its Content-Length; a body sent with ``Transfer-Encoding: chunked``
    has none, so Django would see an empty body and a deployment would be stored without its plan.
    Where the server has decoded the chunks (gunicorn says so with ``wsgi.input_terminated``) the body is
    read here, up to the limit; elsewhere (runserver) the request is answered 411 Length Required.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.REQUEST_SIZE_LIMIT_BYTES
        if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            if not request.META.get("wsgi.input_terminated"):
                return JsonResponse(
                    {
                        "detail": "This server cannot read a chunked request body; send it with Content-Length.",
                        "code": "length_required",
                    },
                    status=411,
                )
            body = request.META["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                return _too_large()
            request.META["CONTENT_LENGTH"] = str(len(body))
            request._stream = LimitedStream(io.BytesIO(body), len(body))
        else:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return JsonResponse(
                    {"detail": "Content-Length is not a number.", "code": "invalid"}, status=400
                )
            if length > limit:
                return _too_large()
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """Sends the Content-Security-Policy of the settings (none when it is empty)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        return response
