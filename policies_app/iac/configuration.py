"""Static evaluation of a Terraform/OpenTofu configuration over a graph of its blocks.

The hybrid design of the Trivy proposal: the whole graph is built up front (one node per variable,
per local, per resource and data block, per module call, per output, per check block, for every
module in the tree); values are computed lazily with a cache when one is asked for (only that node's
ancestors are evaluated), and the whole graph is evaluated in topological order when everything is
asked for.
Each node is evaluated once, for every instance of its module.

Nodes are per module *path* (``("app", "net")``), not per module instance: a node's evaluation loops
over the instances of its module, known once the module call node (count/for_each) is evaluated,
which every node of the child module depends on. That is how Terraform expands modules too.

The output document (see ``document``):

- ``outputs``: root outputs, ``{NAME: {"value", "sensitive", "unknown"}}``; ``value`` has unknowns as
  null, ``unknown`` is ``false`` for a wholly known value, else values.unknown_tree of it;
- ``resources``: one entry per resource instance (``address``, ``module``, ``mode``, ``type``, ``name``,
  ``index``, ``values`` with unknowns as null, ``unknown`` = values.unknown_tree(values), ``sensitive``
  = values.sensitive_tree(values): a plan's ``after_sensitive`` keeping only what leads to a sensitive
  value, ``{}`` when nothing is), with ``expansion`` "none", "count" or "for_each";
  a resource whose count/for_each is unknown (or invalid) is reported once with ``index`` null, its
  address without an index and ``expansion`` "unknown"; resources inside a module instance whose
  count/for_each is unknown are also marked ``"expansion": "unknown"`` (their module address has no
  index there);
- sensitive values (values.Sensitive) come from variables declared ``sensitive = true``, from
  ``sensitive()`` and from provider schemas' sensitive attributes (a child module's output declared
  sensitive does not mark the value its caller reads during a plan); a root output holding one
  without ``sensitive = true`` is an error, as in Terraform (``"sensitive"`` of an output is what it
  declares);
- ``diagnostics``: errors and warnings with ``file``, ``line`` and ``column`` (1-based; null when not
  known).

What a provider computes is known from its schema (provider_schemas.py: ``terraform providers schema
-json``, handed over or found in the template); without one, a provider resource's attribute left null
or unset reads as unknown, and a data source is unknown as a whole.

Module outputs and module input variables are nodes of their own: ``module.NAME.OUTPUT`` reads (and
depends on) that output alone, so one module's output may feed another module's input, or its own,
when that output does not depend on the input (as in Terraform). Reading a node whose evaluation is
under way is reported as a cycle, never answered with a silent unknown.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.conditions import evaluate_check
from policies_app.iac.config_graph import Node, build_graph, node_name, node_pos
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.expansion import ModuleKey
from policies_app.iac.expressions import Diagnostic, EvalError, Scope
from policies_app.iac.failures import failure_document
from policies_app.iac.functions.dates import format_rfc3339
from policies_app.iac.graph import Graph, topological_order
from policies_app.iac.module_calls import evaluate_call, evaluate_output
from policies_app.iac.module_tree import Module, default_loader, load_module_tree
from policies_app.iac.provider_schemas import load_provider_schemas
from policies_app.iac.rendering import render_document
from policies_app.iac.resources import evaluate_resource
from policies_app.iac.scopes import instance_scope
from policies_app.iac.sensitive_paths import marked_paths, needs_marking
from policies_app.iac.values import UNKNOWN
from policies_app.iac.variables import VariableEvaluator, collect_root_values, undeclared_value_diagnostics


def _default_hcl_file_parser() -> Callable[[str], syntax_nodes.File]:
    from policies_app.iac.loader import parse_file

    return parse_file


def _default_expression_parser() -> Callable[[str, str], syntax_nodes.Expr]:
    from policies_app.iac.loader import parse_expression

    return parse_expression


class ConfigurationEvaluator:
    """Builds the graph of a configuration and evaluates it (lazily or wholly).

    The state of one evaluation lives here (values per node and module instance, the instances of
    each module, the plan entries); each kind of node is evaluated by its own module: variables.py,
    resources.py, module_calls.py (calls and outputs), conditions.py (check blocks)."""

    def __init__(
        self,
        root_dir: str,
        *,
        variables: dict[str, Any] | None = None,
        var_files: Iterable[str] = (),
        cache_dir: str | None = None,
        loader: Callable[[str], list[syntax_nodes.File]] | None = None,
        parse_hcl_file: Callable[[str], syntax_nodes.File] | None = None,
        parse_expression: Callable[[str, str], syntax_nodes.Expr] | None = None,
        cwd: str | None = None,
        source_root: str | None = None,
        provider_schema: dict[str, Any] | None = None,
        marked_roots: frozenset[str] = frozenset(),
    ) -> None:
        self.root_dir = os.path.abspath(root_dir)
        # The template's files: local modules and file functions may not reach outside it.
        self.source_root = os.path.abspath(source_root or self.root_dir)
        # Terraform runs in the root module's directory: relative paths in file() and friends, and
        # path.cwd, are relative to it, not to wherever this process happens to run.
        self.cwd = os.path.abspath(cwd or self.root_dir)
        self.reporter = Reporter()
        # What plantimestamp() answers: an evaluation stands for a plan made now.
        self.plan_timestamp = format_rfc3339(datetime.now(UTC).replace(microsecond=0))
        self.evaluation_count = 0  # nodes evaluated: each node at most once
        self.values: dict[Node, dict[ModuleKey, Any]] = {}
        self.instances: dict[tuple[str, ...], list[ModuleKey]] = {(): [()]}
        self.instance_names: dict[ModuleKey, dict[str, Any]] = {(): {}}
        self.unknown_module_instances: set[ModuleKey] = set()
        self.call_children: dict[tuple[ModuleKey, str], tuple[str, list[tuple[Any, ModuleKey]]]] = {}
        self.resource_entries: list[tuple[tuple, dict]] = []  # (sort key, plan entry)
        self._scopes: dict[ModuleKey, Scope] = {}
        self.schemas, schema_problem = load_provider_schemas(self.root_dir, provider_schema)
        if schema_problem is not None:
            self.reporter.error("Invalid provider schema", schema_problem, syntax_nodes.Pos(self.root_dir, 0))
        self._in_progress: set[Node] = set()

        if parse_expression is None and loader is None:
            parse_expression = _default_expression_parser()
        if parse_hcl_file is None and loader is None:
            parse_hcl_file = _default_hcl_file_parser()
        root_values, problems = collect_root_values(self.root_dir, list(var_files), variables, parse_hcl_file)
        for problem in problems:
            self.reporter.add(problem)
        self.variables = VariableEvaluator(self, root_values, parse_expression, marked_roots)
        self.modules: dict[tuple[str, ...], Module] = load_module_tree(
            self.root_dir, self.source_root, loader or default_loader(cache_dir), self.reporter
        )
        self.root = self.modules[()]
        for problem in undeclared_value_diagnostics(root_values, self.root.variables):
            self.reporter.add(problem)
        self.graph = self._build_graph()
        self._order, cycles = topological_order(self.graph)
        for cycle in cycles:
            detail = " -> ".join(node_name(n) for n in cycle)
            self.reporter.error("Cycle in the configuration", detail, node_pos(self.modules, cycle[0]))
            for node in cycle:
                self.values[node] = {}  # every instance reads as unknown
        # Each kind of node: (module, node, module instance key) -> the node's value for that instance.
        self._handlers: dict[str, Callable[[Module, Node, ModuleKey], Any]] = {
            "var": self.variables.evaluate,
            "local": self._evaluate_local,
            "resource": partial(evaluate_resource, self),
            "data": partial(evaluate_resource, self),
            "call": partial(evaluate_call, self),
            "output": partial(evaluate_output, self),
            "check": partial(evaluate_check, self),
        }

    def _build_graph(self) -> Graph:
        return build_graph(self.modules, self.reporter)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.reporter.diagnostics

    # -- evaluation ----------------------------------------------------------------------------------------

    def request(self, nodes: Iterable[Node]) -> None:
        """Evaluate these nodes and what they depend on, nothing else (the lazy path)."""
        order, _ = topological_order(self.graph, [n for n in nodes if n not in self.values], done=self.values)
        for node in order:
            if node not in self.values and node not in self._in_progress:
                self._evaluate_node(node)

    def evaluate_all(self) -> None:
        """Evaluate every node, in topological order."""
        for node in self._order:
            if node not in self.values and node not in self._in_progress:
                self._evaluate_node(node)

    def value_of(self, node: Node, key: ModuleKey = (), pos: syntax_nodes.Pos | None = None) -> Any:
        """The value of a node for one module instance, evaluating it (and its ancestors) if needed.

        Reading a node whose evaluation is under way is a cycle the graph did not show: an error naming
        it, never a silent unknown."""
        values = self.values.get(node)
        if values is None:
            if node not in self.graph:
                raise KeyError(node_name(node))
            if node in self._in_progress:
                raise EvalError(
                    "Cycle in the configuration",
                    pos or node_pos(self.modules, node),
                    f"{node_name(node)} depends on its own value",
                )
            self.request([node])
            values = self.values.get(node, {})
        return values.get(key, UNKNOWN)

    def output_value(self, name: str) -> Any:
        return self.value_of(((), "output", name))

    def local_value(self, name: str, module_path: tuple[str, ...] = (), key: ModuleKey = ()) -> Any:
        return self.value_of((module_path, "local", name), key)

    def _evaluate_node(self, node: Node) -> None:
        self._in_progress.add(node)
        self.evaluation_count += 1
        results: dict[ModuleKey, Any] = {}
        path, kind, _ = node
        module = self.modules[path]
        handler = self._handlers[kind]
        try:
            for key in self.instances.get(path, ()):
                try:
                    results[key] = handler(module, node, key)
                except (RecursionError, TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
                    # A defect of ours, or a construct we do not handle, must cost one value, not the
                    # evaluation of the whole configuration.
                    results[key] = UNKNOWN
                    self.reporter.error(
                        "Internal error of the evaluator",
                        f"{node_name(node)}: {error!r}",
                        node_pos(self.modules, node),
                    )
        finally:
            self.values[node] = results
            self._in_progress.discard(node)
            self.reporter.flush()

    def _evaluate_local(self, module: Module, node: Node, key: ModuleKey) -> Any:
        return self.reporter.value(module.locals[node[2]].expr, self.scope(module, key))

    def scope(self, module: Module, key: ModuleKey) -> Scope:
        scope = self._scopes.get(key)
        if scope is None:
            scope = self._scopes[key] = instance_scope(self, module, key)
        return scope

    def document(self) -> dict:
        """Evaluate everything and return the JSON-compatible document (see the module docstring)."""
        self.evaluate_all()
        return render_document(self)


def evaluate_configuration(
    directory: str,
    *,
    variables: dict[str, Any] | None = None,
    var_files: Iterable[str] = (),
    cache_dir: str | None = None,
    source_root: str | None = None,
    provider_schema: dict[str, Any] | None = None,
    sensitive_variables: Iterable[str] = (),
) -> dict:
    """The statically known values of a configuration: outputs, resources and diagnostics.

    Never raises for problems in the configuration: they are diagnostics. ``variables`` are -var
    values (a ``str`` is read as Terraform reads a -var string, by the variable's type).
    ``source_root`` is the template's whole source (a checkout, holding ``directory``): local modules
    and file functions may read anything inside it and nothing outside; by default, ``directory``.
    ``provider_schema`` is the parsed output of ``terraform providers schema -json`` for the template's
    providers; by default the file provider_schemas.SCHEMA_FILE_NAME in ``directory``, if any.
    ``sensitive_variables`` names root variables the caller holds sensitive: the document then also has
    ``sensitive_paths``, where values derived from them are (see sensitive_paths.py), when there are any.
    """
    # The parsed trees are hundreds of thousands of small objects that live until the end: without this,
    # the cyclic garbage collector rescans them again and again and doubles the evaluation time. The
    # evaluation makes few reference cycles, so collection is only postponed to the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        arguments: dict[str, Any] = {
            "variables": variables,
            "var_files": list(var_files),
            "cache_dir": cache_dir,
            "source_root": source_root,
            "provider_schema": provider_schema,
        }
        evaluator = ConfigurationEvaluator(directory, **arguments)
        document = evaluator.document()
        marking = needs_marking(evaluator, frozenset(sensitive_variables))
        if marking:
            marked = ConfigurationEvaluator(directory, **arguments, marked_roots=marking)
            marked.evaluate_all()
            paths = marked_paths(document, marked)
            if paths:
                document["sensitive_paths"] = paths
        return document
    except (RecursionError, MemoryError, LookupError, TypeError, ValueError, AttributeError) as error:
        # A defect of ours must not take the deployment's evaluation down with it: say so instead.
        import traceback  # only this failure path needs it (start-up)

        where = traceback.extract_tb(error.__traceback__)[-1]
        return failure_document(
            "Internal error of the evaluator",
            f"{error!r} at {os.path.basename(where.filename)}:{where.lineno}",
        )
    finally:
        if collecting:
            gc.enable()
