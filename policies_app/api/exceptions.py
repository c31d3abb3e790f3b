"""The API's one translation of refusals into responses: a use case's DomainError carries its status."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler

from ..errors import DomainError


def api_exception_handler(exception: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exception, DomainError):
        return Response(exception.as_body(), status=exception.http_status)
    return exception_handler(exception, context)
