"""The errors a use case raises when it refuses: ``DomainError`` and one subclass per HTTP meaning
(Invalid 400 with field-level messages, Forbidden 403, NotFound 404, Conflict 409, Busy 429, Unavailable
503), each with a stable ``code`` for machines and a ``message`` for people.

Use cases raise them and know nothing of HTTP beyond ``http_status``. The API turns them into responses
in one exception handler (api/exceptions.py). Pages show the refusal where the action came from: most
through ``act`` (web/common.py), which shows the form again with the message, the field errors and the
refusal's status; the deployment and policy pages re-render themselves (``_refused`` in
web/deployment_views.py and web/policy_views.py), and a few views tell it as a message after a redirect.
Management commands turn it into a CommandError.
"""

from __future__ import annotations


class DomainError(Exception):
    """A use case refused. ``code`` is stable and machine-readable; ``message`` is for people."""

    http_status = 400
    default_code = "invalid"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code

    def as_body(self) -> dict:
        return {"detail": self.message, "code": self.code}


class Invalid(DomainError):
    """Bad input, named by field: ``Invalid({"plan": ["The plan must be an object."]})``."""

    http_status = 400
    default_code = "invalid"

    def __init__(
        self, errors: dict[str, list[str]] | str, *, field: str | None = None, code: str | None = None
    ):
        if isinstance(errors, str):
            errors = {field or "detail": [errors]}
        self.errors = errors
        super().__init__(
            "; ".join(f"{name}: {' '.join(problems)}" for name, problems in errors.items()), code=code
        )

    def as_body(self) -> dict:
        return dict(self.errors)


class Forbidden(DomainError):
    """The user may see the thing but not do this to it."""

    http_status = 403
    default_code = "forbidden"


class NotFound(DomainError):
    """The thing does not exist, or the user may not see it (the two are not told apart)."""

    http_status = 404
    default_code = "not_found"


class Conflict(DomainError):
    """The request is fine but the thing is not in a state that allows it (e.g. no longer pending)."""

    http_status = 409
    default_code = "conflict"


class Busy(DomainError):
    """Try again later: a bounded resource (e.g. the dry-run engine pool) is fully in use."""

    http_status = 429
    default_code = "busy"


class Unavailable(DomainError):
    """A service the platform needs (the policy engine) cannot be reached now; nothing was changed."""

    http_status = 503
    default_code = "unavailable"
