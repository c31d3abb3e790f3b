"""Values that cross the boundary between the Rego engine package and its callers.

Everything here is plain data so that it can be pickled to the supervised engine worker and back,
and so that the Django layer can store it without knowing anything about the engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# regorus decides as OPA once prepare.py has rewritten the policy, and is fast; opa is OPA itself, slower
# (it parses the input again for each policy). docs/opa-fidelity.md has the measurements.
ENGINES = ("regorus", "opa")
DEFAULT_ENGINE = "regorus"
REGO_VERSIONS = ("v1", "v0")

# The environment variable that tells a worker its supervisor's pid (it ends with that process).
SUPERVISOR_PID_VARIABLE = "POLICY_ENGINE_SUPERVISOR_PID"

# The four rules env0 reads from a policy, strictest first.
DECISION_RULES = ("deny", "pending", "warn", "allow")
# "error" is stricter than anything a policy can say: an evaluation that failed never lets a deployment through.
DECISION_ORDER = ("error", *DECISION_RULES)


def empty_messages() -> dict[str, list[str]]:
    return {rule: [] for rule in DECISION_RULES}


@dataclass(frozen=True)
class PolicyModule:
    filename: str
    source: str


@dataclass(frozen=True)
class PolicySource:
    key: str  # unique id chosen by the caller, e.g. "3@2" (policy 3 revision 2); part of the cache key
    name: str
    rego_version: str = "v1"
    modules: tuple[PolicyModule, ...] = ()
    data: Any = None  # JSON-compatible; becomes data.* for this policy only


def _location(file: str | None, line: int | None, column: int | None) -> str:
    if not file:
        return ""
    parts = [file]
    if line is not None:
        parts.append(str(line))
        if column is not None:
            parts.append(str(column))
    return ":".join(parts)


@dataclass
class PolicyError:
    policy: str
    file: str | None
    line: int | None
    column: int | None
    message: str

    def __str__(self) -> str:
        where = _location(self.file, self.line, self.column)
        body = f"{where}: {self.message}" if where else self.message
        return f"{self.policy}: {body}" if self.policy else body


@dataclass
class PolicyOutcome:
    key: str
    name: str
    decision: str | None  # deny | pending | warn | allow | error; None when no rule fired
    messages: dict[str, list[str]] = field(default_factory=empty_messages)
    error: PolicyError | None = None


@dataclass
class EvaluationResult:
    decision: str  # deny | pending | warn | allow | error
    messages: dict[str, list[str]]
    outcomes: list[PolicyOutcome]
    engine: str
    duration_ms: float
    error: PolicyError | None = None


class PolicyCompileError(Exception):
    """A policy the engine cannot run; raised by check_policy with the position of the problem."""

    def __init__(
        self,
        message: str,
        *,
        policy: str = "",
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.policy = policy
        self.file = file
        self.line = line
        self.column = column
        self.message = message

    def __str__(self) -> str:
        where = _location(self.file, self.line, self.column)
        return f"{where}: {self.message}" if where else self.message


class EngineUnavailableError(RuntimeError):
    """The supervised engine worker could not be started; nothing was decided about the policy."""


class EngineBusyError(RuntimeError):
    """Every worker of a named pool (e.g. "dry-run") is busy; nothing was evaluated. Try again later."""
