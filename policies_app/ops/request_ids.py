"""A request id for every web request, carried into the Celery tasks it sends and into every log line;
structured JSON logs when ``LOG_FORMAT=json``.

The id is the client's ``X-Request-ID`` when it is a plausible one (a proxy's), else a new one; it is
answered in ``X-Request-ID``. A task sent while handling the request carries it in its message's
headers (``before_task_publish``) and the worker takes it up for the task's log lines
(``task_prerun``); without a broker the task runs in the request's own context and simply keeps it.

In JSON mode every log record is one line of JSON (time, level, logger, message, request_id, and the
record's extras such as deployment_id), the middleware writes one line per request (method, path,
status, duration, user id) and each task one line when it ends (name, state, duration, deployment id).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
_PLAUSIBLE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_request_id: ContextVar[str] = ContextVar("request_id", default="")
requests_log = logging.getLogger("policies_app.requests")
tasks_log = logging.getLogger("policies_app.tasks")


def current_request_id() -> str:
    return _request_id.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get(HEADER, "")
        request_id = given if _PLAUSIBLE.match(given) else uuid.uuid4().hex
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[HEADER] = request_id
            if settings.LOG_FORMAT == "json":
                user = getattr(request, "user", None)
                requests_log.info(
                    "%s %s %s",
                    request.method,
                    request.path,
                    response.status_code,
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "status": response.status_code,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                        "user_id": user.pk if user is not None and user.is_authenticated else None,
                    },
                )
            return response
        finally:
            _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Gives every record the current request id (empty outside a request or a task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = _request_id.get()
        return True


# The attributes every LogRecord has: anything else on a record is an extra, shown as its own field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD and not name.startswith("_"):
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _add_header(headers: dict | None = None, **_: Any) -> None:
    request_id = _request_id.get()
    if request_id and headers is not None:
        headers["request_id"] = request_id


_task_context: dict[str, tuple[Any, float]] = {}


def _task_started(task_id: str = "", task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    carried = (
        getattr(request, "request_id", None)
        or (getattr(request, "headers", None) or {}).get("request_id")
        or _request_id.get()
    )
    _task_context[task_id] = (_request_id.set(carried or ""), time.perf_counter())


def _task_ended(task_id: str = "", task: Any = None, args: Any = None, state: str = "", **_: Any) -> None:
    token, started = _task_context.pop(task_id, (None, time.perf_counter()))
    if settings.LOG_FORMAT == "json":
        extra: dict[str, Any] = {
            "task": getattr(task, "name", ""),
            "task_id": task_id,
            "state": state,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        deployment_id = _deployment_of(task, args)
        if deployment_id is not None:
            extra["deployment_id"] = deployment_id
        tasks_log.info("task %s %s", extra["task"], state, extra=extra)
    if token is not None:
        _request_id.reset(token)


def _deployment_of(task: Any, args: Any) -> int | None:
    """The deployment a task is about: its first argument, when that parameter is ``deployment_id``."""
    import inspect

    try:
        parameters = list(inspect.signature(task.run).parameters)
    except (TypeError, ValueError, AttributeError):
        return None
    if parameters and parameters[0] == "deployment_id" and args:
        return args[0]
    return None


def carry_into_tasks() -> None:
    from celery.signals import before_task_publish, task_postrun, task_prerun

    before_task_publish.connect(_add_header, weak=False, dispatch_uid="request_id_header")
    task_prerun.connect(_task_started, weak=False, dispatch_uid="request_id_task_started")
    task_postrun.connect(_task_ended, weak=False, dispatch_uid="request_id_task_ended")
