"""Policy tests run as ``opa test`` runs them, and which decision rules fired on an input (no Django).

Both run on OPA itself, in a supervised ``opa`` worker (supervisor.py), with the policy's modules as
OPA sees them (v0 written in v1 syntax, positions kept), the shared library and the policy's data:

- ``run_policy_tests``: every rule named ``test_*`` of the test modules passes when it evaluates to
  true; false or undefined fails it; an evaluation error is an error. ``todo_test_*`` rules are skipped.
  ``with`` mocks input and data, as in OPA. The report has each test's result and the line coverage of
  the policy's own modules over all the tests (a line is covered when any test ran any of it).
- ``explain_decision``: the definitions of ``deny``, ``pending``, ``warn`` and ``allow`` that produced a
  value for an input, read from OPA's coverage (a rule's head is covered only when its body succeeded).
- ``explain_reads``: each value those rules produced, with the input paths the rule read on the way,
  read from OPA's trace (reads.py).

Why this module is long: both entry points share the worker side (compiling on OPA, the decision rules'
heads, the error shapes), which splitting would only spread over modules that import each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies_app.rego.capabilities import require_allowed_builtins
from policies_app.rego.contract import (
    DECISION_RULES,
    PolicyCompileError,
    PolicyError,
    PolicyModule,
    PolicySource,
)
from policies_app.rego.errors import parse_opa_error
from policies_app.rego.prepare import PreparedPolicy, library_modules, policy_payload, rule_ref
from policies_app.rego.reads import fired_with_reads
from policies_app.rego.supervisor import pool
from policies_app.rego.syntax_tree import kind_of, package_path, parse_module, rule_name
from policies_app.rego.v1_syntax import to_rego_v1
from policies_app.rego.worker_process import WorkerFailure

TEST_PREFIX = "test_"
TODO_PREFIX = "todo_test_"
_ENGINE = "opa"  # the reference: tests and explanations are OPA's


@dataclass(frozen=True)
class PolicyTestResult:
    name: str
    package: str
    file: str
    line: int
    outcome: str  # pass | fail | error | skip
    message: str = ""
    duration_ms: float = 0.0


@dataclass(frozen=True)
class FileCoverage:
    file: str
    covered: tuple[int, ...]
    not_covered: tuple[int, ...]

    @property
    def percent(self) -> float:
        total = len(self.covered) + len(self.not_covered)
        return 100.0 * len(self.covered) / total if total else 100.0


@dataclass(frozen=True)
class PolicyTestReport:
    results: tuple[PolicyTestResult, ...] = ()
    coverage: tuple[FileCoverage, ...] = ()
    error: PolicyError | None = None  # the tests could not run at all (e.g. a test module does not compile)
    duration_ms: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and all(result.outcome in ("pass", "skip") for result in self.results)

    @property
    def coverage_percent(self) -> float:
        covered = sum(len(file.covered) for file in self.coverage)
        total = covered + sum(len(file.not_covered) for file in self.coverage)
        return 100.0 * covered / total if total else 100.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "error": None if self.error is None else _error_dict(self.error),
            "results": [result.__dict__ for result in self.results],
            "coverage": {
                "percent": round(self.coverage_percent, 1),
                "files": [
                    {
                        "file": file.file,
                        "percent": round(file.percent, 1),
                        "covered": list(file.covered),
                        "not_covered": list(file.not_covered),
                    }
                    for file in self.coverage
                ],
            },
            "duration_ms": round(self.duration_ms, 1),
        }


@dataclass(frozen=True)
class FiredRule:
    rule: str  # deny | pending | warn | allow
    file: str
    line: int


@dataclass
class _Run:
    """Arguments shared by both entry points."""

    timeout_s: float = 60.0
    memory_mb: int = 1024
    pool_name: str | None = None
    pool_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _run(op: str, policy: PolicySource, options: _Run, activity: str) -> dict[str, Any]:
    request = {
        "op": op,
        "policy": policy_payload(policy),
        "memory_mb": options.memory_mb,
        **options.extra,
    }
    return pool(_ENGINE, options.pool_name, options.pool_size).run(request, options.timeout_s, activity)


def run_policy_tests(
    policy: PolicySource,
    tests: Sequence[PolicyModule],
    *,
    timeout_s: float = 60.0,
    memory_mb: int = 1024,
    pool_name: str | None = None,
    pool_size: int | None = None,
) -> PolicyTestReport:
    """Run the ``test_*`` rules of ``tests`` against ``policy`` (whose modules hold no tests).

    A policy or test module that does not compile, a timeout or a crash is the report's ``error``;
    raises EngineUnavailableError when no OPA worker can start, EngineBusyError when a named pool is busy.
    """
    started = time.perf_counter()
    options = _Run(timeout_s, memory_mb, pool_name, pool_size)
    options.extra["tests"] = [(str.__str__(t.filename), str.__str__(t.source)) for t in tests]
    try:
        reply = _run("test", policy, options, "running the policy's tests")
    except (WorkerFailure, PolicyCompileError) as failure:
        message = failure.message
        return PolicyTestReport(
            error=PolicyError(policy.name, None, None, None, message),
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    elapsed = (time.perf_counter() - started) * 1000
    if reply.get("error"):
        error = reply["error"]
        return PolicyTestReport(
            error=PolicyError(
                policy.name, error.get("file"), error.get("line"), error.get("column"), error["message"]
            ),
            duration_ms=elapsed,
        )
    return PolicyTestReport(
        results=tuple(PolicyTestResult(**result) for result in reply["results"]),
        coverage=tuple(
            FileCoverage(item["file"], tuple(item["covered"]), tuple(item["not_covered"]))
            for item in reply["coverage"]
        ),
        duration_ms=elapsed,
    )


def explain_decision(
    policy: PolicySource,
    input_json: str,
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    pool_name: str | None = None,
    pool_size: int | None = None,
) -> list[FiredRule]:
    """The decision rules of ``policy`` that produced a value on this input, in file and line order.

    Raises PolicyCompileError when the policy cannot run, WorkerFailure-derived problems as
    PolicyCompileError too (the caller shows them), EngineUnavailableError / EngineBusyError as usual."""
    options = _Run(timeout_s, memory_mb, pool_name, pool_size, {"input_json": str.__str__(input_json)})
    try:
        reply = _run("explain", policy, options, "explaining the decision")
    except WorkerFailure as failure:
        raise PolicyCompileError(failure.message, policy=policy.name) from None
    if reply.get("error"):
        error = reply["error"]
        raise PolicyCompileError(
            error["message"],
            policy=policy.name,
            file=error.get("file"),
            line=error.get("line"),
            column=error.get("column"),
        )
    return [FiredRule(**fired) for fired in reply["fired"]]


def explain_reads(
    policy: PolicySource,
    input_json: str,
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    pool_name: str | None = None,
    pool_size: int | None = None,
) -> list[dict[str, Any]]:
    """Each value the decision rules of ``policy`` produced on this input: {rule, file, line, message,
    reads: [input path, ...]} (reads.py). Raises as ``explain_decision``."""
    options = _Run(timeout_s, memory_mb, pool_name, pool_size, {"input_json": str.__str__(input_json)})
    options.extra["reads"] = True
    try:
        reply = _run("explain", policy, options, "explaining the decision")
    except WorkerFailure as failure:
        raise PolicyCompileError(failure.message, policy=policy.name) from None
    if reply.get("error"):
        raise PolicyCompileError(reply["error"]["message"], policy=policy.name)
    return list(reply["explained"])


# ------------------------------------------------------------------------ inside the OPA worker process


def _compiled_engine(policy: PreparedPolicy, extra_modules: list[tuple[str, str]]) -> Any:
    """A fresh OPA engine with the library, the policy (as OPA reads it), extra modules and the data."""
    from opa_bindings import OpaEngine, OpaError

    engine = OpaEngine()
    engine.print_handler = lambda message, location: None  # print() must not reach our protocol
    try:
        for filename, source in (*library_modules(), *policy.opa_modules, *extra_modules):
            engine.add_policy(filename, source)
        if policy.data_json is not None:
            engine.add_data(json.loads(policy.data_json))
        engine.eval_query("compiled := true")  # OPA compiles every module on the first query
    except OpaError as error:
        engine.close()
        parsed = parse_opa_error(error.message)
        raise PolicyCompileError(
            parsed.message, policy=policy.name, file=parsed.file, line=parsed.line, column=parsed.column
        ) from None
    return engine


def _test_cases(tests: list[tuple[str, str]], rego_v0: bool) -> tuple[list[tuple[str, str]], list[dict]]:
    """The test modules as OPA reads them, and their test rules (one per package and name). A test
    module that names a refused builtin stops the run before any test executes."""
    modules, cases, seen = [], [], set()
    for filename, source in tests:
        parsed = require_allowed_builtins(filename, source, rego_v0=rego_v0)
        package = package_path(parsed)
        modules.append((filename, to_rego_v1(parsed) if rego_v0 else source))
        for rule in parsed.tree.get("rules") or []:
            if kind_of(rule) != "Spec" or kind_of(rule["Spec"]["head"]) == "Func":
                continue
            name = rule_name(rule)
            if len(name) != 1 or not name[0].startswith((TEST_PREFIX, TODO_PREFIX)):
                continue
            if (package, name[0]) in seen:
                continue  # a test defined in several bodies is one test, as in OPA
            seen.add((package, name[0]))
            line = rule["Spec"]["span"]["line"]
            cases.append({"package": package, "name": name[0], "file": filename, "line": line})
    return modules, cases


def _rows(ranges: list[dict]) -> set[int]:
    return {row for item in ranges for row in range(item["start"]["row"], item["end"]["row"] + 1)}


def _run_case(engine: Any, case: dict, coverage: dict[str, tuple[set[int], set[int]]]) -> dict:
    from opa_bindings import OpaError

    result = {
        "name": case["name"],
        "package": ".".join(case["package"]),
        "file": case["file"],
        "line": case["line"],
        "message": "",
    }
    if case["name"].startswith(TODO_PREFIX):
        return {**result, "outcome": "skip", "duration_ms": 0.0}
    started = time.perf_counter()
    try:
        rows = engine.eval_query(f"result := {rule_ref(case['package'], case['name'])}", coverage=True)
    except OpaError as error:
        parsed = parse_opa_error(error.message)
        where = f"{parsed.file}:{parsed.line}: " if parsed.file and parsed.line else ""
        outcome, message = "error", where + parsed.message
    else:
        value = rows[0]["result"] if rows else None
        if value is True:
            outcome, message = "pass", ""
        elif not rows:
            outcome, message = "fail", "undefined (a condition of the test was false)"
        else:
            outcome, message = "fail", f"evaluated to {json.dumps(value, sort_keys=True)[:500]}, not true"
    for file, report in ((engine.last_coverage or {}).get("files") or {}).items():
        if file in coverage:
            coverage[file][0].update(_rows(report.get("covered") or []))
            coverage[file][1].update(_rows(report.get("not_covered") or []))
    return {
        **result,
        "outcome": outcome,
        "message": message,
        "duration_ms": (time.perf_counter() - started) * 1000,
    }


def handle_test_request(prepare: Callable[[dict], PreparedPolicy], request: dict[str, Any]) -> dict[str, Any]:
    try:
        policy = prepare(request["policy"])
        modules, cases = _test_cases([tuple(test) for test in request["tests"]], policy.rego_version == "v0")
        engine = _compiled_engine(policy, modules)
    except PolicyCompileError as error:
        return {"type": "done", "error": _error_dict(error)}
    coverage: dict[str, tuple[set[int], set[int]]] = {name: (set(), set()) for name, _ in policy.user_modules}
    try:
        results = [_run_case(engine, case, coverage) for case in cases]
    finally:
        engine.close()
    files = [
        {"file": name, "covered": sorted(covered), "not_covered": sorted(missed - covered)}
        for name, (covered, missed) in sorted(coverage.items())
    ]
    return {"type": "done", "error": None, "results": results, "coverage": files}


def _decision_rule_heads(policy: PreparedPolicy) -> list[tuple[str, str, int, int]]:
    """(rule, file, line, column) of every definition of a decision rule in package env0."""
    heads = []
    for filename, source in policy.user_modules:
        parsed = parse_module(filename, source, policy.rego_version == "v0")
        if package_path(parsed) != policy.package:
            continue
        for rule in parsed.tree.get("rules") or []:
            if kind_of(rule) != "Spec":
                continue
            name = rule_name(rule)
            if name and name[0] in DECISION_RULES:
                where = rule["Spec"]["span"]
                heads.append((name[0], filename, where["line"], where["col"]))
    return heads


def handle_explain_request(
    prepare: Callable[[dict], PreparedPolicy], request: dict[str, Any]
) -> dict[str, Any]:
    from opa_bindings import OpaError

    try:
        policy = prepare(request["policy"])
        heads = _decision_rule_heads(policy)
        engine = _compiled_engine(policy, [])
    except PolicyCompileError as error:
        return {"type": "done", "error": _error_dict(error)}
    query = "; ".join(f"{rule} := [v | v := {rule_ref(policy.package, rule)}]" for rule in DECISION_RULES)
    try:
        reads = bool(request.get("reads"))
        engine.eval_query(query, json.loads(request["input_json"]), coverage=not reads, trace=reads)
        if reads:
            return {
                "type": "done",
                "error": None,
                "explained": fired_with_reads(engine.last_trace or [], heads),
            }
        files = (engine.last_coverage or {}).get("files") or {}
    except OpaError as error:
        parsed = parse_opa_error(error.message)
        return {
            "type": "done",
            "error": {
                "file": parsed.file,
                "line": parsed.line,
                "column": parsed.column,
                "message": parsed.message,
            },
        }
    finally:
        engine.close()
    covered_starts = {
        (file, item["start"]["row"], item["start"]["col"])
        for file, report in files.items()
        for item in report.get("covered") or []
    }
    fired = [
        {"rule": rule, "file": file, "line": line}
        for rule, file, line, column in heads
        if (file, line, column) in covered_starts
    ]
    return {
        "type": "done",
        "error": None,
        "fired": sorted(fired, key=lambda item: (item["file"], item["line"])),
    }


# The worker's operations beyond check and evaluate (worker.py dispatches to these).
WORKER_OPERATIONS = {"test": handle_test_request, "explain": handle_explain_request}


def _error_dict(error: PolicyCompileError | PolicyError) -> dict[str, Any]:
    return {"file": error.file, "line": error.line, "column": error.column, "message": error.message}
