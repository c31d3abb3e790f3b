"""Writing approval policies: every save is checked by the engine and becomes a new immutable revision."""

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from . import access, audit, rego
from .choices import RegoVersion
from .errors import Busy, Forbidden, Invalid, Unavailable
from .models import ApprovalPolicy, PolicyModule, PolicyRevision


def _require_author(user: AbstractBaseUser | None) -> None:
    # None: the platform itself (the demo loader); every request names its user.
    if user is not None and not access.may_author_policies(user):
        raise Forbidden("Only organisation admins and policy authors may write policies.")


def policy_source(revision: PolicyRevision) -> rego.PolicySource:
    """The engine's view of a stored revision."""
    return rego.PolicySource(
        key=f"{revision.policy_id}@{revision.number}",
        name=revision.policy.name,
        rego_version=str(revision.rego_version),
        modules=tuple(rego.PolicyModule(m.filename, m.source) for m in revision.modules.all()),
        data=revision.data,
    )


def _validated_modules(modules: Any) -> list[dict[str, str]]:
    if not isinstance(modules, list) or not modules:
        raise Invalid({"modules": ["At least one Rego module is required."]})
    seen: set[str] = set()
    problems: list[str] = []
    for position, module in enumerate(modules):
        filename = (module or {}).get("filename", "") if isinstance(module, dict) else ""
        source = (module or {}).get("source", "") if isinstance(module, dict) else ""
        if not filename or not isinstance(filename, str) or "/" in filename or "\\" in filename:
            problems.append(f"modules[{position}].filename: a plain file name such as main.rego is required.")
        elif not filename.endswith(".rego"):
            problems.append(f"modules[{position}].filename: {filename} must end with .rego.")
        elif filename in seen:
            problems.append(f"modules[{position}].filename: {filename} is given twice.")
        if not isinstance(source, str) or not source.strip():
            problems.append(f"modules[{position}].source: the module is empty.")
        seen.add(filename)
    if problems:
        raise Invalid({"modules": problems})
    return [{"filename": m["filename"], "source": m["source"]} for m in modules]


def _check_with_engine(name: str, rego_version: str, modules: list[dict[str, str]], data: Any) -> None:
    if rego_version not in RegoVersion.values:
        raise Invalid({"rego_version": [f"Must be one of {', '.join(RegoVersion.values)}."]})
    if data is not None and not isinstance(data, dict):
        raise Invalid({"data": ["Policy data must be a JSON object (it becomes data.*)."]})
    source = rego.PolicySource(
        key=f"check:{name}",
        name=name,
        # Plain str: the engine worker process unpickles this and must not need Django's enum classes.
        rego_version=str(rego_version),
        modules=tuple(rego.PolicyModule(m["filename"], m["source"]) for m in modules),
        data=data,
    )
    try:
        rego.check_policy(
            source,
            settings.POLICY_ENGINE,
            timeout_s=settings.POLICY_EVALUATION_TIMEOUT_SECONDS,
            memory_mb=settings.POLICY_ENGINE_MEMORY_MB,
        )
    except rego.PolicyCompileError as problem:
        raise Invalid({"modules": [str(problem)]}) from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot check the policy now: {problem}") from None


def _store_revision(
    policy: ApprovalPolicy,
    rego_version: str,
    modules: list[dict[str, str]],
    data: Any,
    user: AbstractBaseUser | None,
) -> PolicyRevision:
    last = policy.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    revision = PolicyRevision.objects.create(
        policy=policy,
        number=last + 1,
        rego_version=rego_version,
        data=data,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    PolicyModule.objects.bulk_create(
        PolicyModule(revision=revision, filename=m["filename"], source=m["source"]) for m in modules
    )
    return revision


def create_policy(
    *,
    name: str,
    description: str = "",
    rego_version: str = RegoVersion.V1,
    modules: list[dict[str, str]],
    data: Any = None,
    user: AbstractBaseUser | None = None,
) -> ApprovalPolicy:
    """Check the policy with the engine, then store it with its first revision. Nothing is stored on error."""
    _require_author(user)
    if not name or not name.strip():
        raise Invalid({"name": ["A name is required."]})
    if ApprovalPolicy.objects.filter(name=name).exists():
        raise Invalid({"name": [f"A policy named {name!r} already exists."]})
    modules = _validated_modules(modules)
    _check_with_engine(name, rego_version, modules, data)
    with transaction.atomic():
        policy = ApprovalPolicy.objects.create(name=name, description=description)
        revision = _store_revision(policy, rego_version, modules, data, user)
        audit.record(user, "policy.created", policy, after=_revision_summary(revision))
    return policy


def revise_policy(
    policy: ApprovalPolicy,
    *,
    name: str | None = None,
    description: str | None = None,
    rego_version: str | None = None,
    modules: list[dict[str, str]] | None = None,
    data: Any = ...,
    user: AbstractBaseUser | None = None,
) -> PolicyRevision | None:
    """Rename or describe a policy, and create revision N+1 when what it says (Rego version, modules,
    data) changes. Returns the new revision, or None when the content did not change."""
    _require_author(user)
    latest = policy.latest_revision
    current_modules = [{"filename": m.filename, "source": m.source} for m in latest.modules.all()]
    rego_version = rego_version or latest.rego_version
    modules = _validated_modules(modules if modules is not None else current_modules)
    data = latest.data if data is ... else data
    content_changed = (rego_version, sorted(modules, key=lambda m: m["filename"]), data) != (
        latest.rego_version,
        current_modules,
        latest.data,
    )
    if name is not None and name != policy.name:
        if not name.strip():
            raise Invalid({"name": ["A name is required."]})
        if ApprovalPolicy.objects.filter(name=name).exclude(pk=policy.pk).exists():
            raise Invalid({"name": [f"A policy named {name!r} already exists."]})
    if content_changed:
        _check_with_engine(name or policy.name, rego_version, modules, data)
    with transaction.atomic():
        before = {"name": policy.name, "description": policy.description, **_revision_summary(latest)}
        policy.name = name if name is not None else policy.name
        policy.description = description if description is not None else policy.description
        policy.save(update_fields=["name", "description"])
        revision = _store_revision(policy, rego_version, modules, data, user) if content_changed else None
        after = {
            "name": policy.name,
            "description": policy.description,
            **_revision_summary(revision or latest),
        }
        if after != before:
            audit.record(user, "policy.changed", policy, before=before, after=after)
        return revision


def _revision_summary(revision: PolicyRevision) -> dict[str, Any]:
    """A revision as the audit log keeps it: enough to see what changed, the sources in full."""
    return {
        "revision": revision.number,
        "rego_version": revision.rego_version,
        "modules": {module.filename: module.source for module in revision.modules.all()},
        "data": revision.data,
    }


def engine_settings() -> dict[str, Any]:
    """How every evaluation runs: the engine, its time and memory bounds, and what it keeps of messages."""
    return {
        "engine": settings.POLICY_ENGINE,
        "timeout_s": settings.POLICY_EVALUATION_TIMEOUT_SECONDS,
        "memory_mb": settings.POLICY_ENGINE_MEMORY_MB,
        "max_messages_per_policy": settings.POLICY_MESSAGE_MAX_COUNT,
        "max_message_length": settings.POLICY_MESSAGE_MAX_LENGTH,
        "max_messages": settings.POLICY_MESSAGE_MAX_TOTAL,
    }


def dry_run_policy(policy: ApprovalPolicy | PolicyRevision, input_document: Any) -> dict[str, Any]:
    """Evaluate one policy on a given input without storing anything.

    Dry runs have a small engine pool of their own: a burst of them answers "busy" (429) instead of
    queueing in the web process or taking the workers that deployments need."""
    revision = policy.latest_revision if isinstance(policy, ApprovalPolicy) else policy
    try:
        result = rego.evaluate_policies(
            [policy_source(revision)], json.dumps(input_document), **engine_settings(), pool_name="dry-run"
        )
    except rego.EngineBusyError:
        raise Busy("Every dry-run engine worker is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot run now: {problem}") from None
    return {
        "decision": result.decision,
        **{kind: result.messages[kind] for kind in ("deny", "pending", "warn", "allow")},
        "error": str(result.error) if result.error else None,
    }
