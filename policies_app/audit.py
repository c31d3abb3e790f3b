"""The audit log: every use case that changes what governs deployments (settings, roles, policies,
tokens) or decides a deployment (its trigger, each evaluation's decision, approvals, rejections,
cancellations, completions, expiries) records who did what to which target, and the state before and
after, in the transaction of the change.

What the log keeps is decided here, once, whatever a use case hands in (``redacted``): no secret
(values under a name that says password, secret, token, private key, credentials...: only whether one is
set or changed; nor the password part of a URL) and no value of a variable marked sensitive. Targets are named as people name them: the
target's own name (on one line) and its kind in words ("approval policy", not ``approvalpolicy``).

When the operator streams the log to a SIEM (accounts/audit_stream.py), each entry wakes a sender once its
transaction commits; the stream's cursor row holds the due work, the notifications sweeper the rest."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import models

from policies_app import wakeups
from policies_app.guards.names import one_line
from policies_app.models import AuditEntry, Deployment, Environment, Project

REDACTED = "********"
CHANGED = "******** (changed)"
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:password|passwd|passphrase|secret|token|private_key|api_key|access_key|secret_key"
    r"|credentials?|authorization)$|^key$"
)
# A password in a URL's user part (https://user:password@host/...), wherever a URL is kept.
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@", re.IGNORECASE)
_VARIABLE_KINDS = ("environment", "terraform")
_ABSENT = object()


def _project_of(target: models.Model) -> Project | None:
    if isinstance(target, Project):
        return target
    if isinstance(target, Environment):
        return target.project
    if isinstance(target, Deployment):
        return target.environment.project
    return None


def target_type_of(target: models.Model) -> str:
    """The kind of a target in words: its model's verbose name ("policy repository")."""
    return str(target._meta.verbose_name)


def names_a_secret(name: Any) -> bool:
    """Whether a key of a snapshot names a secret: ``password``, ``webhook_secret``, ``apiKey``..."""
    if not isinstance(name, str):
        return False
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return bool(_SECRET_NAME.search(re.sub(r"[^a-z0-9]+", "_", snake)))


def _hidden(value: Any, twin: Any) -> Any:
    if value is None or isinstance(value, bool) or value == "":
        return value  # whether a secret is set is no secret
    return CHANGED if twin is not _ABSENT and twin != value else REDACTED


def _sensitive_names(snapshot: dict) -> dict[str, set[str]]:
    declared = snapshot.get("sensitive_variables")
    if not isinstance(declared, dict):
        return {}
    return {
        kind: {name for name in names if isinstance(name, str)}
        for kind, names in declared.items()
        if isinstance(names, list)
    }


def _masked_variables(values: Any, sensitive: set[str]) -> Any:
    if not isinstance(values, dict) or not sensitive:
        return values
    return {name: REDACTED if name in sensitive else value for name, value in values.items()}


def redacted(value: Any, twin: Any = _ABSENT) -> Any:
    """``value`` as the log may keep it. ``twin``, the same place in the state before, lets a secret that
    changed say so (never what it was or became)."""
    if isinstance(value, str):
        return _URL_PASSWORD.sub(rf"\1{REDACTED}@", value)
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    if not isinstance(value, dict):
        return value
    others = twin if isinstance(twin, dict) else {}
    sensitive = _sensitive_names(value)
    kept = {}
    for key, item in value.items():
        other = others.get(key, _ABSENT)
        if names_a_secret(key):
            kept[key] = _hidden(item, other)
            continue
        kind = key[: -len("_variables")] if isinstance(key, str) and key.endswith("_variables") else None
        if kind in _VARIABLE_KINDS:
            item = _masked_variables(item, sensitive.get(kind, set()))
        elif key == "variables" and isinstance(item, dict):
            item = {k: _masked_variables(v, sensitive.get(k, set())) for k, v in item.items()}
        kept[key] = redacted(item, other)
    return kept


def record(
    actor: AbstractBaseUser | None,
    action: str,
    target: models.Model,
    *,
    before: Any = None,
    after: Any = None,
    project: Project | None = None,
) -> AuditEntry:
    entry = AuditEntry.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=target_type_of(target),
        target_id=str(target.pk),
        target_repr=one_line(str(target))[:300],
        project=project or _project_of(target),
        before=redacted(before),
        after=redacted(after, before if before is not None else _ABSENT),
    )
    wake_stream()
    return entry


def stream_is_on() -> bool:
    """Whether the operator streams the log to a SIEM (AUDIT_STREAM_URL or AUDIT_STREAM_SYSLOG)."""
    return bool(settings.AUDIT_STREAM_URL or settings.AUDIT_STREAM_SYSLOG)


def wake_stream() -> None:
    """After the current transaction commits, stream what it wrote (when the stream is on)."""
    if stream_is_on():
        wakeups.wake("policies_app.tasks.stream_audit_task")
