"""Rego policy engines behind one interface (framework-free: no Django imports here).

Callers use check_policy() when a policy is saved and evaluate_policies() for a deployment; both run the
engines (regorus by default, OPA itself as "opa") in supervised worker processes. run_policy_tests()
runs a policy's tests as ``opa test`` does, with line coverage, and explain_decision() names the decision
rules that fired on an input; both on OPA, in the same supervised workers.
"""

from policies_app.rego.contract import (
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
from policies_app.rego.decisions import combine_decisions, normalise_rule_value
from policies_app.rego.runner import check_policy, evaluate_policies
from policies_app.rego.testing import (
    FileCoverage,
    FiredRule,
    PolicyTestReport,
    PolicyTestResult,
    explain_decision,
    explain_reads,
    run_policy_tests,
)

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "EngineBusyError",
    "EngineUnavailableError",
    "EvaluationResult",
    "FileCoverage",
    "FiredRule",
    "PolicyCompileError",
    "PolicyError",
    "PolicyModule",
    "PolicyOutcome",
    "PolicySource",
    "PolicyTestReport",
    "PolicyTestResult",
    "check_policy",
    "combine_decisions",
    "evaluate_policies",
    "explain_decision",
    "explain_reads",
    "normalise_rule_value",
    "run_policy_tests",
]
