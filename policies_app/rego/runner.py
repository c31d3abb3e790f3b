"""The public entry points: check a policy when it is saved, evaluate policies for a deployment.

Both run in a supervised worker process (supervisor.py). Evaluation fails closed: whatever goes wrong
(a policy error, an engine crash, a timeout, the memory limit) the overall decision is "error".
A policy is saved only if OPA itself compiles it too: what OPA refuses (an undefined function, an
unsafe variable, a type error) env0 would refuse on every deployment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from policies_app.rego.contract import (
    DECISION_RULES,
    DEFAULT_ENGINE,
    ENGINES,
    EngineBusyError,
    EngineUnavailableError,
    EvaluationResult,
    PolicyCompileError,
    PolicyError,
    PolicyModule,
    PolicyOutcome,
    PolicySource,
    empty_messages,
)
from policies_app.rego.decisions import MessageLimits, combine_decisions, policy_decision
from policies_app.rego.prepare import policy_payload
from policies_app.rego.supervisor import pool
from policies_app.rego.worker_process import WorkerFailure


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"unknown Rego engine {engine!r}; expected one of {', '.join(ENGINES)}")


REFERENCE_ENGINE = "opa"


def check_policy(
    policy: PolicySource,
    engine: str = DEFAULT_ENGINE,
    *,
    tests: Sequence[PolicyModule] = (),
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    pool_name: str | None = None,
    pool_size: int | None = None,
) -> None:
    """Compile the policy as evaluation would; raise PolicyCompileError (with file/line/col) if it cannot run.

    OPA compiles it first (what OPA refuses is refused with OPA's message), then ``engine``, if another.
    ``tests`` (the policy's ``*_test.rego`` modules) are checked against the capability list too, so a
    test that would call a refused builtin is refused with the policy; anything else wrong with them is
    left to their test run, which records it.
    ``pool_name``/``pool_size``: see evaluate_policies. Raises EngineUnavailableError when no engine
    worker can be started (nothing is known about the policy), EngineBusyError when a named pool is busy.
    """
    _check_engine(engine)
    payload = policy_payload(policy)
    test_modules = [(str.__str__(test.filename), str.__str__(test.source)) for test in tests]
    deadline = time.monotonic() + timeout_s  # one time limit for both checks
    for checker in dict.fromkeys((REFERENCE_ENGINE, engine)):
        request = {
            "op": "check",
            "engine": checker,
            "policy": payload,
            "tests": test_modules,
            "memory_mb": memory_mb,
        }
        _check_with(checker, policy, request, timeout_s, deadline, pool_name, pool_size)


def _check_with(
    engine: str,
    policy: PolicySource,
    request: dict[str, Any],
    timeout_s: float,
    deadline: float,
    pool_name: str | None,
    pool_size: int | None,
) -> None:
    try:
        reply = pool(engine, pool_name, pool_size).run(
            request, timeout_s, "compiling the policy", deadline=deadline
        )
    except WorkerFailure as failure:
        # "compiling the policy exceeded 10 s" names the activity already; a crash message does not.
        message = (
            failure.message if failure.limit_exceeded else f"{failure.message} while compiling the policy"
        )
        raise PolicyCompileError(message, policy=policy.name) from None
    error = reply.get("error")
    if error:
        raise PolicyCompileError(
            error.get("message") or "the engine refused the policy",
            policy=policy.name,
            file=error.get("file"),
            line=error.get("line"),
            column=error.get("column"),
        )


def _policy_error(policy: PolicySource, error: dict[str, Any]) -> PolicyError:
    return PolicyError(
        policy=policy.name,
        file=error.get("file"),
        line=error.get("line"),
        column=error.get("column"),
        message=error.get("message") or "evaluation error",
    )


class _Collector:
    """Builds the outcome of each policy from the worker's messages, as they arrive."""

    def __init__(self, policies: list[PolicySource]) -> None:
        self.policies = policies
        self.outcomes: list[PolicyOutcome | None] = [None] * len(policies)
        self.running: int | None = None  # the policy the worker announced last: blamed for a crash or timeout
        self.engine_errors: list[int] = []  # policies the engine itself reported an error for

    def record(
        self,
        index: int,
        messages: dict[str, list[str]] | None,
        error: dict[str, Any] | None,
        *,
        from_engine: bool = False,
    ) -> None:
        policy = self.policies[index]
        if error is not None:
            if from_engine:
                self.engine_errors.append(index)
            self.outcomes[index] = PolicyOutcome(
                policy.key, policy.name, "error", empty_messages(), _policy_error(policy, error)
            )
            return
        messages = {rule: list((messages or {}).get(rule, [])) for rule in DECISION_RULES}
        self.outcomes[index] = PolicyOutcome(
            policy.key, policy.name, policy_decision(messages), messages, None
        )

    def on_message(self, message: dict[str, Any]) -> None:
        if message["type"] == "started":
            self.running = message["index"]
        elif message["type"] == "outcome":
            self.record(message["index"], message.get("messages"), message.get("error"), from_engine=True)

    def finish(self, stopped: PolicyError | None) -> list[PolicyOutcome]:
        """Every policy's outcome; those the worker never reported fail closed with the reason it stopped."""
        final = []
        for policy, outcome in zip(self.policies, self.outcomes, strict=True):
            if outcome is None:
                if stopped is None:
                    reason = "not evaluated"
                elif stopped.policy and stopped.policy != policy.name:
                    reason = f"not evaluated: the engine stopped ({stopped.message})"
                else:
                    reason = stopped.message
                error = PolicyError(policy.name, None, None, None, reason)
                outcome = PolicyOutcome(policy.key, policy.name, "error", empty_messages(), error)
            final.append(outcome)
        return final


def _run_evaluation(
    collector: _Collector,
    input_json: str,
    engine: str,
    timeout_s: float,
    memory_mb: int,
    limits: MessageLimits,
    pool_name: str | None,
    pool_size: int | None,
) -> PolicyError | None:
    """Send the policies to a worker; returns why evaluation stopped early, if it did."""
    payloads: list[dict[str, Any]] = []
    positions: list[int] = []  # the worker numbers the policies it was sent; map back to the caller's list
    for index, policy in enumerate(collector.policies):
        try:
            payloads.append(policy_payload(policy))
            positions.append(index)
        except PolicyCompileError as error:
            collector.record(index, None, {"message": error.message})
    if not payloads:
        return None

    def on_message(message: dict[str, Any]) -> None:
        if message.get("type") == "batch":  # several messages sent as one (worker.py)
            for one in message["messages"]:
                on_message(one)
            return
        if "index" in message:
            message = {**message, "index": positions[message["index"]]}
        collector.on_message(message)

    request = {
        "op": "evaluate",
        "engine": engine,
        "policies": payloads,
        "input_json": input_json,
        "memory_mb": memory_mb,
        "limits": {
            "per_policy": limits.per_policy,
            "characters": limits.characters,
            "per_evaluation": limits.per_evaluation,
        },
    }
    try:
        reply = pool(engine, pool_name, pool_size).run(request, timeout_s, "evaluation", on_message)
    except WorkerFailure as failure:
        if collector.running is not None or len(payloads) == 1 or engine != REFERENCE_ENGINE:
            return _blamed(collector, failure)
        # OPA decides the policies together in one query, so a worker killed there (a policy that loops,
        # or exhausts memory) names no policy: run them again one by one, which names it. Only this
        # failure costs up to twice the time limit; the decision is "error" either way.
        try:
            reply = pool(engine, pool_name, pool_size).run(
                {**request, "together": False}, timeout_s, "evaluation", on_message
            )
        except WorkerFailure as again:
            return _blamed(collector, again)
        except EngineUnavailableError:
            return _blamed(collector, failure)
    except EngineUnavailableError as error:
        return PolicyError("", None, None, None, str(error))
    return _reply_error(reply)


def _blamed(collector: _Collector, failure: WorkerFailure) -> PolicyError:
    """The worker's failure, blamed on the policy it had started (none when it had started none)."""
    blamed = collector.policies[collector.running].name if collector.running is not None else ""
    return PolicyError(blamed, None, None, None, failure.message)


def _reply_error(reply: dict[str, Any]) -> PolicyError | None:
    if reply.get("error"):
        return PolicyError("", None, None, None, reply["error"].get("message") or "engine error")
    return None


def _ask_the_reference(
    collector: _Collector,
    input_json: str,
    deadline: float,
    memory_mb: int,
    limits: MessageLimits,
    pool_name: str | None,
    pool_size: int | None,
) -> None:
    """OPA's answer for the policies the engine reported an error for, where OPA decides.

    regorus raises what OPA does not: a builtin given the wrong type (OPA: undefined), a function
    conflict or a type error in a body that OPA's evaluation order never reaches (OPA stops at the
    first undefined expression of a body). The platform must decide as OPA, so those policies are
    evaluated again on OPA itself; where OPA errors too, the engine's error (with its column) stays.
    When OPA cannot answer in time or at all, the error stays: still failing closed.
    """
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        return
    indices = list(collector.engine_errors)
    kept = sum(
        len(found)
        for outcome in collector.outcomes
        if outcome is not None and outcome.error is None
        for found in outcome.messages.values()
    )
    left = MessageLimits(limits.per_policy, limits.characters, max(limits.per_evaluation - kept, 1))
    retry = _Collector([collector.policies[index] for index in indices])
    try:
        stopped = _run_evaluation(
            retry, input_json, REFERENCE_ENGINE, remaining, memory_mb, left, pool_name, pool_size
        )
    except EngineBusyError:
        return
    if stopped is not None:
        return
    for index, outcome in zip(indices, retry.outcomes, strict=True):
        if outcome is not None and outcome.error is None:
            collector.outcomes[index] = outcome


def evaluate_policies(
    policies: Sequence[PolicySource],
    input_json: str,
    engine: str = DEFAULT_ENGINE,
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 2048,
    max_messages_per_policy: int = MessageLimits.per_policy,
    max_message_length: int = MessageLimits.characters,
    max_messages: int = MessageLimits.per_evaluation,
    pool_name: str | None = None,
    pool_size: int | None = None,
) -> EvaluationResult:
    """Evaluate every policy against the same input (serialised once by the caller) and combine decisions.

    Each policy runs in its own namespace. With no policy at all the decision is "pending" (env0's default).
    Fails closed: any policy error, engine crash, timeout or memory overrun makes the decision "error".

    Messages are cut in the engine worker, before they reach this process: at most
    ``max_messages_per_policy`` per policy and ``max_messages`` in all (strictest rules first; what is
    left out is counted by a "… and N more messages" entry), each at most ``max_message_length``
    characters ("… [truncated: N characters]"). Cutting never changes a decision.

    ``pool_name`` (e.g. "dry-run") runs on a separate pool of ``pool_size`` workers (default: the
    POLICY_ENGINE_WORKERS_DRY_RUN-style environment variable, else 1) that never queues: when all its
    workers are busy, EngineBusyError is raised at once and nothing is evaluated. Without it, the
    deployment pool is used, where a call waits for a worker within ``timeout_s``.
    """
    _check_engine(engine)
    limits = MessageLimits(max_messages_per_policy, max_message_length, max_messages)
    started = time.perf_counter()
    # Exact str: it is pickled to the worker, which must not need the caller's classes.
    input_json = input_json.decode("utf-8") if isinstance(input_json, bytes) else str.__str__(input_json)
    collector = _Collector(list(policies))
    stopped = (
        _run_evaluation(collector, input_json, engine, timeout_s, memory_mb, limits, pool_name, pool_size)
        if collector.policies
        else None
    )
    if stopped is None and engine != REFERENCE_ENGINE and collector.engine_errors:
        deadline = started + timeout_s
        _ask_the_reference(collector, input_json, deadline, memory_mb, limits, pool_name, pool_size)
    outcomes = collector.finish(stopped)

    messages = empty_messages()
    for outcome in outcomes:
        for rule in DECISION_RULES:
            messages[rule].extend(outcome.messages[rule])
    error = stopped or next((outcome.error for outcome in outcomes if outcome.error), None)
    return EvaluationResult(
        decision="error" if error else combine_decisions(outcome.decision for outcome in outcomes),
        messages=messages,
        outcomes=outcomes,
        engine=engine,
        duration_ms=(time.perf_counter() - started) * 1000.0,
        error=error,
    )
