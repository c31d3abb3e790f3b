"""The state of one configuration's evaluation, as the modules that evaluate each kind of node see it
(variables.py, resources.py, module_calls.py, conditions.py, scopes.py, rendering.py).

configuration.ConfigurationEvaluator holds this state and calls those modules; they depend on this
Protocol instead of on the evaluator, so no import circle joins them, not even for type hints.
"""

from __future__ import annotations

from typing import Any, Protocol

from policies_app.iac import syntax_nodes, type_constraints
from policies_app.iac.config_graph import Node
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.expansion import ModuleKey
from policies_app.iac.expressions import Scope
from policies_app.iac.graph import Graph
from policies_app.iac.module_tree import Module
from policies_app.iac.provider_schemas import ProviderSchemas


class VariableTypes(Protocol):
    def type_of(self, module: Module, name: str) -> type_constraints.TypeConstraint | None:
        """The declared type of a variable of the module (None: any)."""


class EvaluationState(Protocol):
    reporter: Reporter
    root: Module
    modules: dict[tuple[str, ...], Module]
    graph: Graph
    variables: VariableTypes
    schemas: ProviderSchemas
    # Where the configuration is and runs, and when (what plantimestamp() answers).
    source_root: str
    cwd: str
    plan_timestamp: str
    # Values per node and module instance; each module's instances and what each instance is called.
    values: dict[Node, dict[ModuleKey, Any]]
    instances: dict[tuple[str, ...], list[ModuleKey]]
    instance_names: dict[ModuleKey, dict[str, Any]]
    unknown_module_instances: set[ModuleKey]
    call_children: dict[tuple[ModuleKey, str], tuple[str, list[tuple[Any, ModuleKey]]]]
    resource_entries: list[tuple[tuple, dict]]  # (sort key, plan entry)

    def scope(self, module: Module, key: ModuleKey) -> Scope:
        """What an expression of this module instance sees."""

    def value_of(self, node: Node, key: ModuleKey = (), pos: syntax_nodes.Pos | None = None) -> Any:
        """The value of a node for one module instance, evaluating it first if needed."""
