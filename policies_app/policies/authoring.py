"""Writing approval policies: every save is checked by the engine, tested, and becomes a new immutable
revision; a revision whose tests pass becomes the active one, unless it was saved as a draft. Publishing
makes another revision the one in force. What a revision says is content.py; running it is engine.py."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit, rego
from policies_app.choices import Enforcement, RegoVersion, RevisionTestsStatus
from policies_app.errors import Conflict, Forbidden, Invalid
from policies_app.models import ApprovalPolicy, PolicyModule, PolicyRevision
from policies_app.policies.content import PolicyContent, validated_content
from policies_app.policies.engine import require_compiles, run_content_tests


def require_author(user: AbstractBaseUser | None) -> None:
    # None: the platform itself (the demo loader, a scheduled sync); every request names its user.
    if user is not None and not access.may_author_policies(user):
        raise Forbidden("Only organisation admins and policy authors may write policies.")


def refusal_to_edit(user: AbstractBaseUser, policy: ApprovalPolicy | None) -> Forbidden | None:
    """Who may edit a policy's text in the product (``policy`` None: a new one): its authors, and only
    while it is not synced from a repository (that text changes in the repository)."""
    if not access.may_author_policies(user):
        return Forbidden("Only organisation admins and policy authors may write policies.")
    if policy is not None and policy.from_repository:
        return Forbidden(f"This policy is synced from the repository {policy.repository}: change it there.")
    return None


def require_editor(user: AbstractBaseUser, policy: ApprovalPolicy | None) -> None:
    refusal = refusal_to_edit(user, policy)
    if refusal is not None:
        raise refusal


def _tests_status(content: PolicyContent, report: rego.PolicyTestReport) -> str:
    if not content.test_modules:
        return RevisionTestsStatus.NONE
    if report.error is not None:
        return RevisionTestsStatus.ERROR
    return RevisionTestsStatus.PASSED if report.passed else RevisionTestsStatus.FAILED


def store_revision(
    policy: ApprovalPolicy,
    content: PolicyContent,
    report: rego.PolicyTestReport,
    *,
    user: AbstractBaseUser | None,
    draft: bool = False,
    commit: str = "",
) -> PolicyRevision:
    """Record revision N+1 with its tests' outcome, and make it the active revision unless it is a
    draft or its tests did not pass. Call inside a transaction; the policy row is locked, so two saves
    get consecutive numbers."""
    locked = ApprovalPolicy.objects.select_for_update().get(pk=policy.pk)
    last = locked.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    revision = PolicyRevision.objects.create(
        policy=locked,
        number=last + 1,
        rego_version=content.rego_version,
        data=content.data,
        enforcement=content.enforcement,
        created_by=user if user is not None and user.is_authenticated else None,
        draft=draft,
        commit=commit,
        tests_status=_tests_status(content, report),
        tests_report=report.as_dict() if content.test_modules else None,
    )
    PolicyModule.objects.bulk_create(
        PolicyModule(revision=revision, filename=filename, source=source)
        for filename, source in content.modules
    )
    if not draft and revision.may_be_activated:
        ApprovalPolicy.objects.filter(pk=policy.pk).update(active_revision=revision)
        policy.active_revision = revision
    return revision


def create_policy(
    *,
    name: str,
    description: str = "",
    rego_version: str = RegoVersion.V1,
    modules: list[dict[str, str]],
    data: Any = None,
    enforcement: str = Enforcement.HARD_MANDATORY,
    user: AbstractBaseUser | None = None,
    catalog_entry: str = "",
) -> ApprovalPolicy:
    """Check the policy with the engine, run its tests, then store it with its first revision (active
    if its tests pass). Nothing is stored when the engine refuses it."""
    require_author(user)
    require_name_free(name)
    content = validated_content(rego_version, modules, data, enforcement)
    require_compiles(name, content)
    report = run_content_tests(name, content)
    with transaction.atomic():
        policy = ApprovalPolicy.objects.create(
            name=name, description=description, catalog_entry=catalog_entry
        )
        revision = store_revision(policy, content, report, user=user)
        audit.record(user, "policy.created", policy, after=_revision_summary(revision))
    return policy


def require_name_free(name: str, policy: ApprovalPolicy | None = None) -> None:
    """Invalid unless ``name`` is given and no other policy than ``policy`` bears it."""
    if not name or not name.strip():
        raise Invalid({"name": ["A name is required."]})
    others = ApprovalPolicy.objects.filter(name=name)
    if policy is not None:
        others = others.exclude(pk=policy.pk)
    if others.exists():
        raise Invalid({"name": [f"A policy named {name!r} already exists."]})


def revise_policy(
    policy: ApprovalPolicy,
    *,
    name: str | None = None,
    description: str | None = None,
    rego_version: str | None = None,
    modules: list[dict[str, str]] | None = None,
    data: Any = ...,
    enforcement: str | None = None,
    draft: bool = False,
    user: AbstractBaseUser | None = None,
) -> PolicyRevision | None:
    """Rename or describe a policy, and create revision N+1 when what it says (Rego version, modules,
    data, enforcement) changes: active when its tests pass, unless ``draft``. Returns the new revision,
    or None when the content did not change."""
    require_author(user)
    latest = policy.latest_revision
    current = PolicyContent.of_revision(latest)
    wanted = validated_content(
        rego_version or current.rego_version,
        modules if modules is not None else [{"filename": n, "source": s} for n, s in current.modules],
        current.data if data is ... else data,
        enforcement or current.enforcement,
    )
    content_changed = wanted != current
    if content_changed and policy.from_repository:
        raise Invalid(
            {"modules": [f"This policy is synced from the repository {policy.repository}: change it there."]}
        )
    if name is not None and name != policy.name:
        require_name_free(name, policy)
    report = rego.PolicyTestReport()
    if content_changed:
        require_compiles(name or policy.name, wanted)
        report = run_content_tests(name or policy.name, wanted)
    with transaction.atomic():
        before = {"name": policy.name, "description": policy.description, **_revision_summary(latest)}
        policy.name = name if name is not None else policy.name
        policy.description = description if description is not None else policy.description
        policy.save(update_fields=["name", "description"])
        revision = store_revision(policy, wanted, report, user=user, draft=draft) if content_changed else None
        after = {
            "name": policy.name,
            "description": policy.description,
            **_revision_summary(revision or latest),
        }
        if after != before:
            audit.record(user, "policy.changed", policy, before=before, after=after)
        return revision


def publish_revision(
    policy: ApprovalPolicy, revision: PolicyRevision, user: AbstractBaseUser | None
) -> PolicyRevision:
    """Make a revision the one in force: a draft after it was tried and replayed, or an older
    revision to roll back. Refused when its tests did not pass."""
    require_author(user)
    if revision.policy_id != policy.pk:
        raise Invalid({"revision": [f"r{revision.number} is not a revision of {policy.name}."]})
    refusal = refusal_to_activate(revision)
    if refusal is not None:
        raise Conflict(f"r{revision.number} cannot be published: {refusal.message}", code=refusal.code)
    with transaction.atomic():
        locked = ApprovalPolicy.objects.select_for_update().get(pk=policy.pk)
        before = locked.active_revision.number if locked.active_revision_id else None
        if locked.active_revision_id != revision.pk:
            ApprovalPolicy.objects.filter(pk=policy.pk).update(active_revision=revision)
            audit.record(
                user,
                "policy.published",
                policy,
                before={"revision": before},
                after={"revision": revision.number},
            )
    policy.active_revision = revision
    return revision


def refusal_to_activate(revision: PolicyRevision) -> Conflict | None:
    """Why a revision may not be the one in force, as people read it (None: it may). Whether it may is
    ``PolicyRevision.may_be_activated``; this says why not."""
    if revision.may_be_activated:
        return None
    report = revision.tests_report or {}
    if revision.tests_status == RevisionTestsStatus.ERROR:
        error = report.get("error") or {}
        where = ":".join(str(part) for part in (error.get("file"), error.get("line")) if part)
        reason = (
            f"its tests could not run: {where + ': ' if where else ''}{error.get('message', 'unknown error')}"
        )
    else:
        failed = [r for r in report.get("results", []) if r["outcome"] in ("fail", "error")]
        shown = "; ".join(f"{r['name']} ({r['file']}:{r['line']}) {r['outcome']}ed" for r in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        reason = f"{len(failed)} of its tests failed: {shown}{more}"
    return Conflict(reason, code="tests_failed")


def _revision_summary(revision: PolicyRevision) -> dict[str, Any]:
    """A revision as the audit log keeps it: enough to see what changed, the sources in full."""
    return {
        "revision": revision.number,
        "rego_version": revision.rego_version,
        "enforcement": revision.enforcement,
        "modules": {module.filename: module.source for module in revision.modules.all()},
        "data": revision.data,
        "draft": revision.draft,
        "commit": revision.commit,
        "tests": revision.tests_status,
    }
