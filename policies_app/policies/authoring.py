"""Writing approval policies: every save is checked by the engine, tested, and becomes a new immutable
revision; a revision whose tests pass becomes the active one, unless it was saved as a draft."""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit, rego
from policies_app.choices import Enforcement, RegoVersion, RevisionTestsStatus
from policies_app.errors import Busy, Conflict, Forbidden, Invalid, Unavailable
from policies_app.models import ApprovalPolicy, PolicyModule, PolicyRevision
from policies_app.models.policies import is_test_module
from policies_app.rego.decisions import policy_decision


def require_author(user: AbstractBaseUser | None) -> None:
    # None: the platform itself (the demo loader, a scheduled sync); every request names its user.
    if user is not None and not access.may_author_policies(user):
        raise Forbidden("Only organisation admins and policy authors may write policies.")


@dataclass(frozen=True)
class PolicyContent:
    """What a revision says. Two saves with the same content make one revision."""

    rego_version: str
    modules: tuple[tuple[str, str], ...]  # (filename, source), sorted by filename; tests included
    data: Any = None
    enforcement: str = Enforcement.HARD_MANDATORY

    @classmethod
    def of_revision(cls, revision: PolicyRevision) -> PolicyContent:
        return cls(
            rego_version=str(revision.rego_version),
            modules=tuple(sorted((m.filename, m.source) for m in revision.modules.all())),
            data=revision.data,
            enforcement=str(revision.enforcement),
        )

    @property
    def policy_modules(self) -> tuple[rego.PolicyModule, ...]:
        return tuple(
            rego.PolicyModule(name, source) for name, source in self.modules if not is_test_module(name)
        )

    @property
    def test_modules(self) -> tuple[rego.PolicyModule, ...]:
        return tuple(rego.PolicyModule(name, source) for name, source in self.modules if is_test_module(name))

    def engine_source(self, key: str, name: str) -> rego.PolicySource:
        # Plain str everywhere: the engine worker unpickles this and must not need Django's classes.
        return rego.PolicySource(
            key=key,
            name=str.__str__(name),
            rego_version=str.__str__(self.rego_version),
            modules=self.policy_modules,
            data=self.data,
        )


def revision_key(revision: PolicyRevision) -> str:
    """How the engine names a stored revision (its results come back under this key)."""
    return f"{revision.policy_id}@{revision.number}"


def policy_source(revision: PolicyRevision) -> rego.PolicySource:
    """The engine's view of a stored revision: its modules without its tests."""
    return PolicyContent.of_revision(revision).engine_source(revision_key(revision), revision.policy.name)


def _module_filename_problem(filename: Any) -> str | None:
    if not isinstance(filename, str) or not filename.strip():
        return "a file name such as main.rego is required."
    if "\\" in filename or filename.startswith("/") or any(ord(char) < 32 for char in filename):
        return f"{filename!r} must be a relative path with / between folders, such as lib/helpers.rego."
    if len(filename) > 500:
        return "the name is longer than 500 characters."
    if (
        any(part in ("", ".", "..") for part in filename.split("/"))
        or posixpath.normpath(filename) != filename
    ):
        return f"{filename!r} must not have empty, '.' or '..' parts."
    if not filename.endswith(".rego"):
        return f"{filename} must end with .rego."
    return None


def validated_content(
    rego_version: Any, modules: Any, data: Any, enforcement: Any = Enforcement.HARD_MANDATORY
) -> PolicyContent:
    """The content of a revision from untrusted input; Invalid names each field that is wrong."""
    problems: dict[str, list[str]] = {}
    if rego_version not in RegoVersion.values:
        problems["rego_version"] = [f"Must be one of {', '.join(RegoVersion.values)}."]
    if enforcement not in Enforcement.values:
        problems["enforcement"] = [f"Must be one of {', '.join(Enforcement.values)}."]
    if data is not None and not isinstance(data, dict):
        problems["data"] = ["Policy data must be a JSON object (it becomes data.*)."]
    module_problems: list[str] = []
    if not isinstance(modules, (list, tuple)) or not modules:
        module_problems.append("At least one Rego module is required.")
        modules = []
    seen: set[str] = set()
    for position, module in enumerate(modules):
        filename = module.get("filename") if isinstance(module, dict) else None
        source = module.get("source") if isinstance(module, dict) else None
        problem = _module_filename_problem(filename)
        if problem:
            module_problems.append(f"modules[{position}].filename: {problem}")
        elif filename in seen:
            module_problems.append(f"modules[{position}].filename: {filename} is given twice.")
        if not isinstance(source, str) or not source.strip():
            module_problems.append(f"modules[{position}].source: the module is empty.")
        seen.add(filename)
    if modules and not module_problems and all(is_test_module(name) for name in seen):
        module_problems.append("Only tests (*_test.rego) were given: the policy itself needs a module.")
    if module_problems:
        problems["modules"] = module_problems
    if problems:
        raise Invalid(problems)
    return PolicyContent(
        rego_version=str(rego_version),
        modules=tuple(sorted((m["filename"], m["source"]) for m in modules)),
        data=data,
        enforcement=str(enforcement),
    )


def _engine_timeouts() -> dict[str, Any]:
    return {
        "timeout_s": settings.POLICY_EVALUATION_TIMEOUT_SECONDS,
        "memory_mb": settings.POLICY_ENGINE_MEMORY_MB,
    }


def check_content(name: str, content: PolicyContent, *, pool_name: str | None = None) -> None:
    """Compile the policy as OPA and the configured engine would, its tests checked against the Rego
    capability list only; Invalid with the engine's file, line and column when they refuse it."""
    try:
        rego.check_policy(
            content.engine_source(f"check:{name}", name),
            settings.POLICY_ENGINE,
            tests=content.test_modules,
            pool_name=pool_name,
            **_engine_timeouts(),
        )
    except rego.PolicyCompileError as problem:
        raise Invalid({"modules": [str(problem)]}) from None
    except rego.EngineBusyError:
        raise Busy("Every engine worker for checks is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot check the policy now: {problem}") from None


def run_content_tests(
    name: str, content: PolicyContent, *, pool_name: str | None = None
) -> rego.PolicyTestReport:
    """Run the content's tests (an empty report when it has none)."""
    if not content.test_modules:
        return rego.PolicyTestReport()
    try:
        return rego.run_policy_tests(
            content.engine_source(f"test:{name}", name),
            content.test_modules,
            timeout_s=settings.POLICY_TEST_TIMEOUT_SECONDS,
            memory_mb=settings.POLICY_ENGINE_MEMORY_MB,
            pool_name=pool_name,
        )
    except rego.EngineBusyError:
        raise Busy("Every engine worker for tests is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot run the tests now: {problem}") from None


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
    check_new_name(name)
    content = validated_content(rego_version, modules, data, enforcement)
    check_content(name, content)
    report = run_content_tests(name, content)
    with transaction.atomic():
        policy = ApprovalPolicy.objects.create(
            name=name, description=description, catalog_entry=catalog_entry
        )
        revision = store_revision(policy, content, report, user=user)
        audit.record(user, "policy.created", policy, after=_revision_summary(revision))
    return policy


def check_new_name(name: str, policy: ApprovalPolicy | None = None) -> None:
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
        check_new_name(name, policy)
    report = rego.PolicyTestReport()
    if content_changed:
        check_content(name or policy.name, wanted)
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
    if not revision.may_be_activated:
        raise Conflict(
            f"r{revision.number} cannot be published: {activation_refusal(revision)}", code="tests_failed"
        )
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


def activation_refusal(revision: PolicyRevision) -> str:
    """Why a revision was recorded but not activated, as people read it (empty when it may be)."""
    report = revision.tests_report or {}
    if revision.tests_status == RevisionTestsStatus.ERROR:
        error = report.get("error") or {}
        where = ":".join(str(part) for part in (error.get("file"), error.get("line")) if part)
        return (
            f"its tests could not run: {where + ': ' if where else ''}{error.get('message', 'unknown error')}"
        )
    if revision.tests_status == RevisionTestsStatus.FAILED:
        failed = [r for r in report.get("results", []) if r["outcome"] in ("fail", "error")]
        shown = "; ".join(f"{r['name']} ({r['file']}:{r['line']}) {r['outcome']}ed" for r in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        return f"{len(failed)} of its tests failed: {shown}{more}"
    return ""


@dataclass(frozen=True)
class RevisionState:
    """Where a revision stands, as the pages show it."""

    label: str
    tone: str  # a decision whose colour it takes (the tone filter): allow, deny, pending; or neutral
    reason: str = ""


def revision_state(revision: PolicyRevision, active_revision_id: int | None) -> RevisionState:
    if revision.pk == active_revision_id:
        return RevisionState("active", "allow")
    refusal = activation_refusal(revision)
    if refusal:
        return RevisionState("not activated", "deny", f"Recorded but not activated: {refusal}.")
    if revision.draft:
        return RevisionState("draft", "pending", "Saved as a draft: try it, replay it, then publish it.")
    return RevisionState("inactive", "neutral")


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


# What each enforcement level makes of a policy's messages: rule -> the rule it counts as.
_DOWNGRADES = {
    Enforcement.SOFT_MANDATORY: {"deny": "pending"},
    Enforcement.ADVISORY: {"deny": "warn", "pending": "warn"},
}


def apply_enforcement(
    result: rego.EvaluationResult, enforcement_by_key: dict[str, str]
) -> rego.EvaluationResult:
    """Each policy's decision as its enforcement level lets it count (keys: revision_key). A policy
    that failed to evaluate still fails closed."""
    if not any(_DOWNGRADES.get(level) for level in enforcement_by_key.values()):
        return result
    outcomes = []
    for outcome in result.outcomes:
        downgrade = _DOWNGRADES.get(enforcement_by_key.get(outcome.key, ""), {})
        if not downgrade or outcome.decision == "error":
            outcomes.append(outcome)
            continue
        level = enforcement_by_key[outcome.key]
        messages = {rule: [] for rule in outcome.messages}
        for rule, texts in outcome.messages.items():
            target = downgrade.get(rule, rule)
            messages[target].extend(texts if target == rule else [f"[{level}] {text}" for text in texts])
        outcomes.append(dataclasses.replace(outcome, decision=policy_decision(messages), messages=messages))
    messages = {
        rule: [text for o in outcomes for text in o.messages.get(rule, [])] for rule in result.messages
    }
    decision = "error" if result.error else rego.combine_decisions(o.decision for o in outcomes)
    return dataclasses.replace(result, decision=decision, messages=messages, outcomes=outcomes)


def enforcement_of(revisions: list[PolicyRevision]) -> dict[str, str]:
    return {revision_key(revision): str(revision.enforcement) for revision in revisions}


def _dry_run(source: rego.PolicySource, enforcement: str, input_json: str) -> rego.EvaluationResult:
    try:
        result = rego.evaluate_policies([source], input_json, **engine_settings(), pool_name="dry-run")
    except rego.EngineBusyError:
        raise Busy("Every dry-run engine worker is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot run now: {problem}") from None
    return apply_enforcement(result, {source.key: enforcement})


def try_revision(revision: PolicyRevision, input_json: str, *, explain: bool = False) -> dict[str, Any]:
    """Evaluate one revision on an input without storing anything; ``explain`` also names the rules that
    fired ("Try it" on the policy page), which costs a second evaluation, on OPA.

    Dry runs have a small engine pool of their own: a burst of them answers "busy" (429) instead of
    queueing in the web process or taking the workers that deployments need."""
    source = policy_source(revision)
    result = _dry_run(source, str(revision.enforcement), input_json)
    answer = {
        "decision": result.decision,
        **{kind: result.messages[kind] for kind in ("deny", "pending", "warn", "allow")},
        "error": str(result.error) if result.error else None,
    }
    if not explain:
        return answer
    fired: list[rego.FiredRule] = []
    explanation_error = ""
    if not result.error:
        try:
            fired = rego.explain_decision(source, input_json, pool_name="dry-run", **_engine_timeouts())
        except rego.PolicyCompileError as problem:
            explanation_error = str(problem)
        except (rego.EngineBusyError, rego.EngineUnavailableError) as problem:
            explanation_error = f"which rules fired is unknown: {problem}"
    return {
        **answer,
        "fired": [dataclasses.asdict(rule) for rule in fired],
        "explanation_error": explanation_error,
    }


def check_draft_syntax(rego_version: Any, modules: Any, data: Any) -> list[dict[str, Any]]:
    """The editor's check as one types: problems with file, line and column (empty: it compiles).

    Runs on the dry-run pool, which refuses work when busy (Busy) rather than queue keystrokes."""
    try:
        content = validated_content(rego_version, modules, data)
    except Invalid as problem:
        return [
            {"file": None, "line": None, "column": None, "message": message, "field": field}
            for field, messages in problem.errors.items()
            for message in messages
        ]
    source = rego.PolicySource(
        key="editor",
        name="editor",
        rego_version=content.rego_version,
        modules=tuple(rego.PolicyModule(name, text) for name, text in content.modules),
        data=content.data,
    )
    try:
        rego.check_policy(source, settings.POLICY_ENGINE, pool_name="dry-run", **_engine_timeouts())
    except rego.PolicyCompileError as problem:
        return [
            {"file": problem.file, "line": problem.line, "column": problem.column, "message": problem.message}
        ]
    except rego.EngineBusyError:
        raise Busy("Every engine worker for checks is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot check the policy now: {problem}") from None
    return []
