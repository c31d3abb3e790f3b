"""The audit log: every use case that changes what governs deployments records who changed what, and
the state before and after, in the transaction of the change."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import models

from policies_app.models import AuditEntry, Deployment, Environment, Project


def _project_of(target: models.Model) -> Project | None:
    if isinstance(target, Project):
        return target
    if isinstance(target, Environment):
        return target.project
    if isinstance(target, Deployment):
        return target.environment.project
    return None


def record(
    actor: AbstractBaseUser | None,
    action: str,
    target: models.Model,
    *,
    before: Any = None,
    after: Any = None,
    project: Project | None = None,
) -> AuditEntry:
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=target._meta.model_name,
        target_id=str(target.pk),
        target_repr=str(target)[:300],
        project=project or _project_of(target),
        before=before,
        after=after,
    )
