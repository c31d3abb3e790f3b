"""The one adapter between the Django side and the Rego engines (policies_app/rego): compiling a policy,
running its tests, evaluating stored revisions as their enforcement levels let them count, dry runs and
the editor's syntax check, all with the platform's engine settings.

An engine that cannot take the work now (every worker of its pool busy, or no worker can be started) is
translated here, once, into Busy or Unavailable (``_engine_refusals``). A timeout, a crash or a memory
overrun while a policy runs is not a refusal: checks report it as the policy's compile error and
evaluations as their "error" decision, so they fail closed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from policies_app import rego
from policies_app.choices import Enforcement
from policies_app.errors import Busy, Invalid, Unavailable
from policies_app.guards.masking import scrub, scrubbed
from policies_app.models import ApprovalPolicy, PolicyRevision
from policies_app.policies.content import PolicyContent, validated_content
from policies_app.rego.decisions import policy_decision


def revision_key(revision: PolicyRevision) -> str:
    """How the engine names a stored revision (its results come back under this key)."""
    return f"{revision.policy_id}@{revision.number}"


def policy_source(revision: PolicyRevision) -> rego.PolicySource:
    """The engine's view of a stored revision: its modules without its tests."""
    return PolicyContent.of_revision(revision).engine_source(revision_key(revision), revision.policy.name)


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


def _engine_timeouts() -> dict[str, Any]:
    return {
        "timeout_s": settings.POLICY_EVALUATION_TIMEOUT_SECONDS,
        "memory_mb": settings.POLICY_ENGINE_MEMORY_MB,
    }


# What each kind of work calls its workers, and what the engine could not do, in a refusal's message.
_CHECKS = ("engine worker for checks", "check the policy")
_TESTS = ("engine worker for tests", "run the tests")
_DRY_RUNS = ("dry-run engine worker", "run")
# The editor's checks as one types: their own small pool, apart from dry runs (syntax_problems).
EDITOR_CHECK_POOL = "editor-check"


@contextmanager
def _engine_refusals(workers: str, doing: str) -> Iterator[None]:
    """The engine could not take the work: Busy (429) when every one of ``workers`` is in use, Unavailable
    (503) when none can be started. Nothing was decided about the policy either way."""
    try:
        yield
    except rego.EngineBusyError:
        raise Busy(f"Every {workers} is busy; try again in a moment.") from None
    except rego.EngineUnavailableError as problem:
        raise Unavailable(f"The policy engine cannot {doing} now: {problem}") from None


def require_compiles(name: str, content: PolicyContent, *, pool_name: str | None = None) -> None:
    """Compile the policy as OPA and the configured engine would, its tests checked against the Rego
    capability list only; Invalid with the engine's file, line and column when they refuse it."""
    with _engine_refusals(*_CHECKS):
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


def run_content_tests(
    name: str, content: PolicyContent, *, pool_name: str | None = None
) -> rego.PolicyTestReport:
    """Run the content's tests (an empty report when it has none)."""
    if not content.test_modules:
        return rego.PolicyTestReport()
    with _engine_refusals(*_TESTS):
        return rego.run_policy_tests(
            content.engine_source(f"test:{name}", name),
            content.test_modules,
            timeout_s=settings.POLICY_TEST_TIMEOUT_SECONDS,
            memory_mb=settings.POLICY_ENGINE_MEMORY_MB,
            pool_name=pool_name,
        )


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


def evaluator_for(revisions: list[PolicyRevision]) -> Callable[[str], rego.EvaluationResult]:
    """Evaluate the revisions together on a policy input, on the deployments' engine pool, each as its
    enforcement level lets it count. Their sources are read once, here (prefetch their modules), so one
    evaluator serves many inputs (a replay)."""
    sources = [policy_source(revision) for revision in revisions]
    enforcement = enforcement_of(revisions)
    limits = engine_settings()

    def evaluate(input_json: str) -> rego.EvaluationResult:
        return apply_enforcement(rego.evaluate_policies(sources, input_json, **limits), enforcement)

    return evaluate


def evaluator_for_content(
    policy: ApprovalPolicy, content: PolicyContent
) -> Callable[[str], rego.EvaluationResult]:
    """Like ``evaluator_for``, for content that is not stored as a revision (a branch's policy): its
    outcome carries the policy's name and a key of its own."""
    source = content.engine_source(f"{policy.pk}@unsaved", policy.name)
    enforcement = {source.key: str(content.enforcement)}
    limits = engine_settings()

    def evaluate(input_json: str) -> rego.EvaluationResult:
        return apply_enforcement(rego.evaluate_policies([source], input_json, **limits), enforcement)

    return evaluate


def _dry_run(source: rego.PolicySource, enforcement: str, input_json: str) -> rego.EvaluationResult:
    with _engine_refusals(*_DRY_RUNS):
        result = rego.evaluate_policies([source], input_json, **engine_settings(), pool_name="dry-run")
    return apply_enforcement(result, {source.key: enforcement})


def try_revision(
    revision: PolicyRevision, input_json: str, *, explain: bool = False, secrets: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Evaluate one revision on an input without storing anything; ``explain`` also names the rules that
    fired ("Try it" on the policy page), which costs a second evaluation, on OPA. ``secrets``: the
    sensitive values of a recorded input, which the answer's messages never show (guards/masking.py).

    Dry runs have a small engine pool of their own: a burst of them answers "busy" (429) instead of
    queueing in the web process or taking the workers that deployments need."""
    return _try_source(
        policy_source(revision), str(revision.enforcement), input_json, explain=explain, secrets=secrets
    )


def try_content(
    policy: ApprovalPolicy,
    content: PolicyContent,
    input_json: str,
    *,
    explain: bool = False,
    secrets: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``try_revision`` for content not saved (the editor's text): the same pool, the same capability
    list (every source is prepared by rego/prepare.py) and the same masking of the answer."""
    source = content.engine_source(f"{policy.pk}@unsaved", policy.name)
    return _try_source(source, str(content.enforcement), input_json, explain=explain, secrets=secrets)


def _try_source(
    source: rego.PolicySource, enforcement: str, input_json: str, *, explain: bool, secrets: frozenset[str]
) -> dict[str, Any]:
    result = _dry_run(source, enforcement, input_json)
    answer = {
        "decision": result.decision,
        **{kind: scrubbed(result.messages[kind], secrets) for kind in ("deny", "pending", "warn", "allow")},
        "error": scrub(str(result.error), secrets) if result.error else None,
    }
    if not explain:
        return answer
    fired: list[rego.FiredRule] = []
    explanation_error = ""
    if not result.error:
        try:
            fired = rego.explain_decision(source, input_json, pool_name="dry-run", **_engine_timeouts())
        except rego.PolicyCompileError as problem:
            explanation_error = scrub(str(problem), secrets)
        except (rego.EngineBusyError, rego.EngineUnavailableError) as problem:
            # The decision is known; only the explanation is missing, so this is said, not refused.
            explanation_error = f"which rules fired is unknown: {problem}"
    return {
        **answer,
        "fired": [dataclasses.asdict(rule) for rule in fired],
        "explanation_error": explanation_error,
    }


def syntax_problems(rego_version: Any, modules: Any, data: Any) -> list[dict[str, Any]]:
    """The editor's check as one types: problems with file, line and column (empty: it compiles).

    Runs on a pool of its own ("editor-check"), which refuses work when busy (Busy) rather than queue
    keystrokes: the edit page checks a policy by itself when it shows it (a refused save shown again
    included), and a check of a policy that runs out of time must not take the worker the user's next
    dry run needs."""
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
    with _engine_refusals(*_CHECKS):
        try:
            rego.check_policy(
                source, settings.POLICY_ENGINE, pool_name=EDITOR_CHECK_POOL, **_engine_timeouts()
            )
        except rego.PolicyCompileError as problem:
            return [
                {
                    "file": problem.file,
                    "line": problem.line,
                    "column": problem.column,
                    "message": problem.message,
                }
            ]
    return []


# A policy any engine answers at once: whether an engine worker starts and evaluates (readiness).
_PROBE = rego.PolicySource(
    key="readiness",
    name="readiness",
    modules=(rego.PolicyModule("probe.rego", 'package env0\n\nallow contains "ready" if true\n'),),
)


def engine_problem(timeout_s: float) -> str | None:
    """Why the configured engine cannot evaluate now (None: a worker of the readiness pool answered
    within ``timeout_s``). Its own pool of one worker, started once and reused: the probe never waits
    behind deployments' evaluations."""
    try:
        result = rego.evaluate_policies(
            [_PROBE],
            "{}",
            settings.POLICY_ENGINE,
            timeout_s=timeout_s,
            memory_mb=settings.POLICY_ENGINE_MEMORY_MB,
            pool_name="readiness",
            pool_size=1,
        )
    except rego.EngineBusyError:
        return None  # its one worker is alive, answering an earlier probe
    except rego.EngineUnavailableError as problem:
        return str(problem)
    if result.decision != "allow":
        return f"the probe policy decided {result.decision}: {result.error or ''}".strip(": ")
    return None
