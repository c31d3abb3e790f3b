"""Rego policy engines behind one interface (framework-free: no Django imports here).

Callers use check_policy() when a policy is saved and evaluate_policies() for a deployment; both run the
engines (regorus by default, OPA itself as "opa") in supervised worker processes.
"""

from policies_app.rego.decisions import combine_decisions, normalise_rule_value
from policies_app.rego.runner import check_policy, evaluate_policies
from policies_app.rego.types import (
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
)

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "EngineBusyError",
    "EngineUnavailableError",
    "EvaluationResult",
    "PolicyCompileError",
    "PolicyError",
    "PolicyModule",
    "PolicyOutcome",
    "PolicySource",
    "check_policy",
    "combine_decisions",
    "evaluate_policies",
    "normalise_rule_value",
]
