"""Custom conditions: preconditions and postconditions (errors when false), and check blocks
(warnings when false), as Terraform reports them at plan time."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.config_graph import Node
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expansion import ModuleKey, module_address
from policies_app.iac.expressions import ResourceObject, Scope
from policies_app.iac.module_tree import Module
from policies_app.iac.values import is_unknown, unmark_deep


def check_conditions(
    reporter: Reporter, body: syntax_nodes.Body, scope: Scope, what: str, kinds: tuple[str, ...]
) -> None:
    for block in body.blocks:
        if block.type not in kinds:
            continue
        condition = block.body.attributes.get("condition")
        if condition is None:
            continue
        result = unmark_deep(reporter.value(condition.expr, scope))
        if is_unknown(result) or result is True:
            continue
        if result is not False:
            reporter.error(
                "Invalid condition result", f"{what}: a {block.type} condition must be a bool", condition.pos
            )
            continue
        message = _error_message(reporter, block, scope)
        message = message if isinstance(message, str) else "(error message not known)"
        summary = (
            "Resource postcondition failed"
            if block.type == "postcondition"
            else f"{block.type.capitalize()} failed"
        )
        reporter.error(summary, f"{what}: {message}", condition.pos)


def _error_message(reporter: Reporter, block: syntax_nodes.Block, scope: Scope) -> Any:
    attribute = block.body.attributes.get("error_message")
    return unmark_deep(reporter.value(attribute.expr, scope, "")) if attribute else ""


def lifecycle_body(block: syntax_nodes.Block) -> syntax_nodes.Body:
    """The preconditions and postconditions of a resource's lifecycle blocks, as one body."""
    conditions = [
        b for lifecycle in block.body.blocks if lifecycle.type == "lifecycle" for b in lifecycle.body.blocks
    ]
    return syntax_nodes.Body({}, conditions)


def evaluate_check(evaluation: EvaluationState, module: Module, node: Node, key: ModuleKey) -> Any:
    """A check block's assertions: a failure is a warning, as in Terraform. Its scoped data source
    is read only at apply time, so the assertions that use it are unknown and skipped."""
    block = module.checks[node[2]]
    reporter = evaluation.reporter
    scoped = {
        f"{b.labels[0]}.{b.labels[1]}" for b in block.body.blocks if b.type == "data" and len(b.labels) == 2
    }
    base = evaluation.scope(module, key)
    scope = Scope({}, CheckResolver(base.resolver, scoped), base, base.function_context, base.warnings)
    prefix = module_address(key)
    for assertion in block.body.blocks:
        if assertion.type != "assert" or "condition" not in assertion.body.attributes:
            continue
        condition = assertion.body.attributes["condition"]
        if unmark_deep(reporter.value(condition.expr, scope)) is False:
            message = _error_message(reporter, assertion, scope)
            where = f"{prefix}.check.{node[2]}" if prefix else f"check.{node[2]}"
            reporter.warning("Check block assertion failed", f"{where}: {message}", condition.pos)
    return None


class CheckResolver:
    """The module's resolver, except for a check block's own scoped data sources (unknown)."""

    __slots__ = ("_inner", "_scoped")

    def __init__(self, inner: Any, scoped: set[str]) -> None:
        self._inner = inner
        self._scoped = scoped

    def data(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any:
        if f"{type_}.{name}" in self._scoped:
            return ResourceObject()
        return self._inner.data(type_, name, pos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
