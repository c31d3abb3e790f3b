"""The API's one translation of refusals into responses: a use case's DomainError carries its status."""

import logging
from typing import Any

from django.db import InterfaceError, OperationalError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from policies_app.errors import DomainError

logger = logging.getLogger(__name__)


def api_exception_handler(exception: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exception, DomainError):
        return Response(exception.as_body(), status=exception.http_status)
    if isinstance(exception, (OperationalError, InterfaceError)):
        # The database is unreachable (restarting): nothing was done; the client may simply retry.
        logger.warning("database unavailable: %s", exception)
        return Response(
            {
                "detail": "The database is unavailable; nothing was changed. Retry shortly.",
                "code": "unavailable",
            },
            status=503,
            headers={"Retry-After": "5"},
        )
    return exception_handler(exception, context)
