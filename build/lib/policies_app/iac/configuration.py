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
- sensitive values (values.Sensitive) come from variables and outputs declared ``sensitive = true``
  and from ``sensitive()``; a root output holding one without ``sensitive = true`` is an error, as in
  Terraform (``"sensitive"`` of an output is what it declares);
- ``diagnostics``: errors and warnings with ``file``, ``line`` and ``column`` (1-based; null when not
  known).

Module outputs and module input variables are nodes of their own: ``module.NAME.OUTPUT`` reads (and
depends on) that output alone, so one module's output may feed another module's input, or its own,
when that output does not depend on the input (as in Terraform). Reading a node whose evaluation is
under way is reported as a cycle, never answered with a silent unknown.
"""

from __future__ import annotations

import gc
import json
import math
import os
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from policies_app.iac import ast, types
from policies_app.iac.expressions import (
    EVALUATOR,
    Diagnostic,
    EvalError,
    ResourceObject,
    Scope,
    constant_scope,
    iterate_collection,
    to_number,
)
from policies_app.iac.functions import FunctionContext
from policies_app.iac.graph import (
    Graph,
    body_references,
    expression_references,
    keyword_of,
    topological_order,
)
from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfSet,
    contains_sensitive,
    contains_unknown,
    mark,
    sensitive_tree,
    to_json_compatible,
    unknown_tree,
    unmark,
    unmark_deep,
)
from policies_app.iac.variables import VariableValue, cli_string_value, collect_root_values


class _UnknownIndex:
    """The index of the single instance standing for an expansion whose count/for_each is unknown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "[?]"


UNKNOWN_INDEX = _UnknownIndex()
_NOT_SET = object()

# Arguments of resource blocks that are instructions to Terraform, not attribute values.
_RESOURCE_META_ATTRIBUTES = frozenset({"count", "for_each", "depends_on", "provider"})
_RESOURCE_META_BLOCKS = frozenset({"lifecycle", "provisioner", "connection"})
_MODULE_META_ATTRIBUTES = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})
_MAX_MODULE_DEPTH = 64

Node = tuple  # (module path, kind, name); kind: var, local, resource, data, call, output
ModuleKey = tuple  # ((call name, index), ...) from the root: one module instance


@dataclass
class Module:
    """One module in the tree, as written (not expanded)."""

    path: tuple[str, ...]
    directory: str
    relative_dir: str  # path.module as Terraform gives it: "." for the root
    variables: dict[str, ast.Block] = field(default_factory=dict)
    locals: dict[str, ast.Attribute] = field(default_factory=dict)
    outputs: dict[str, ast.Block] = field(default_factory=dict)
    resources: dict[str, ast.Block] = field(default_factory=dict)  # "TYPE.NAME"
    data: dict[str, ast.Block] = field(default_factory=dict)
    calls: dict[str, ast.Block] = field(default_factory=dict)
    checks: dict[str, ast.Block] = field(default_factory=dict)
    children: dict[str, Module | None] = field(default_factory=dict)  # None: source not resolved
    loaded: bool = True  # False when its files could not be read: its blocks are unknown, not absent


def _default_loader(cache_dir: str | None) -> Callable[[str], list[ast.File]]:
    from policies_app.iac.loader import load_module

    def load(directory: str) -> list[ast.File]:
        return list(load_module(directory, cache_dir=cache_dir).files)

    return load


def _default_hcl_file_parser() -> Callable[[str], ast.File]:
    from policies_app.iac.loader import parse_file

    return parse_file


def _default_expression_parser() -> Callable[[str, str], ast.Expr] | None:
    from policies_app.iac.loader import parse_expression

    return parse_expression


def format_index(index: Any) -> str:
    if index is None or index is UNKNOWN_INDEX:
        return ""
    if isinstance(index, int):
        return f"[{index}]"
    return "[" + json.dumps(index, ensure_ascii=False) + "]"


def module_address(key: ModuleKey) -> str:
    return ".".join(f"module.{name}{format_index(index)}" for name, index in key)


def node_name(node: Node) -> str:
    """A node as a user reads it: ``module.app.local.a``, ``aws_instance.web``, ``output.x``."""
    path, kind, name = node
    prefix = "".join(f"module.{p}." for p in path)
    label = {
        "var": "var.",
        "local": "local.",
        "data": "data.",
        "call": "module.",
        "output": "output.",
        "check": "check.",
    }
    return prefix + label.get(kind, "") + name


class ConfigurationEvaluator:
    """Builds the graph of a configuration and evaluates it (lazily or wholly)."""

    def __init__(
        self,
        root_dir: str,
        *,
        variables: dict[str, Any] | None = None,
        var_files: Iterable[str] = (),
        cache_dir: str | None = None,
        loader: Callable[[str], list[ast.File]] | None = None,
        parse_hcl_file: Callable[[str], ast.File] | None = None,
        parse_expression: Callable[[str, str], ast.Expr] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.root_dir = os.path.abspath(root_dir)
        # Terraform runs in the root module's directory: relative paths in file() and friends, and
        # path.cwd, are relative to it, not to wherever this process happens to run.
        self.cwd = os.path.abspath(cwd or self.root_dir)
        self._load_files = loader or _default_loader(cache_dir)
        self._parse_expression = parse_expression or (None if loader else _default_expression_parser())
        hcl_file_parser = parse_hcl_file or (None if loader else _default_hcl_file_parser())
        self.diagnostics: list[Diagnostic] = []
        self._seen_diagnostics: set[tuple] = set()
        self.evaluation_count = 0  # nodes evaluated: each node at most once
        self.graph = Graph()
        self.values: dict[Node, dict[ModuleKey, Any]] = {}
        self.instances: dict[tuple[str, ...], list[ModuleKey]] = {(): [()]}
        self._instance_names: dict[ModuleKey, dict[str, Any]] = {(): {}}
        self._unknown_module_instance: set[ModuleKey] = set()
        self._call_children: dict[tuple[ModuleKey, str], tuple[str, list[tuple[Any, ModuleKey]]]] = {}
        self._scopes: dict[ModuleKey, Scope] = {}
        self._in_progress: set[Node] = set()
        self._self_referencing: set[Node] = set()
        self._resource_entries: list[tuple[tuple, dict]] = []  # (sort key, entry)
        self._warnings: list[Diagnostic] = []
        self._type_cache: dict[Node, types.TypeConstraint | None] = {}
        self.modules: dict[tuple[str, ...], Module] = {}
        self._modules_manifest = self._read_modules_manifest()

        root_values, problems = collect_root_values(
            self.root_dir, list(var_files), variables, hcl_file_parser
        )
        self._root_values: dict[str, VariableValue] = root_values
        for problem in problems:
            self._add(problem)
        self.root = self._load_tree()
        for name, given in root_values.items():
            if name not in self.root.variables and given.source != "var":
                self._add(
                    Diagnostic.at(
                        "warning",
                        "Value for undeclared variable",
                        f"a variables file sets {name!r}, which is not declared",
                        given.pos,
                    )
                )
            elif name not in self.root.variables:
                self._add(
                    Diagnostic(
                        "error",
                        "Value for undeclared variable",
                        f"a variable named {name!r} was assigned but is not declared",
                    )
                )
        self._build_graph()
        self._order, cycles = topological_order(self.graph)
        for cycle in cycles:
            first = self._node_pos(cycle[0])
            self._add(
                Diagnostic.at(
                    "error", "Cycle in the configuration", " -> ".join(node_name(n) for n in cycle), first
                )
            )
            for node in cycle:
                self.values[node] = {}  # every instance reads as unknown

    # -- diagnostics -------------------------------------------------------------------------------------

    def _add(self, diagnostic: Diagnostic) -> None:
        key = (
            diagnostic.severity,
            diagnostic.summary,
            diagnostic.detail,
            diagnostic.file,
            diagnostic.line,
            diagnostic.column,
        )
        if key not in self._seen_diagnostics:
            self._seen_diagnostics.add(key)
            self.diagnostics.append(diagnostic)

    def _error(self, summary: str, detail: str, pos: ast.Pos | None) -> None:
        self._add(Diagnostic.at("error", summary, detail, pos))

    # -- loading the module tree -------------------------------------------------------------------------

    def _read_modules_manifest(self) -> dict[str, str]:
        path = os.path.join(self.root_dir, ".terraform", "modules", "modules.json")
        try:
            with open(path, encoding="utf-8") as handle:
                entries = json.load(handle).get("Modules", [])
        except (OSError, ValueError, AttributeError):
            return {}
        manifest = {}
        for entry in entries:
            if isinstance(entry, dict) and entry.get("Key") and isinstance(entry.get("Dir"), str):
                manifest[entry["Key"]] = os.path.normpath(os.path.join(self.root_dir, entry["Dir"]))
        return manifest

    def _load_tree(self) -> Module:
        root = Module((), self.root_dir, ".")
        pending = [root]
        while pending:
            module = pending.pop()
            self.modules[module.path] = module
            self._load_module_blocks(module)
            for name, call in module.calls.items():
                child_dir = self._resolve_source(module, name, call)
                if child_dir is None:
                    module.children[name] = None
                    continue
                if len(module.path) >= _MAX_MODULE_DEPTH:
                    self._error(
                        "Module nesting too deep",
                        f"module.{name}: more than {_MAX_MODULE_DEPTH} "
                        "levels of modules (does a module call itself?)",
                        call.pos,
                    )
                    module.children[name] = None
                    continue
                relative = os.path.relpath(child_dir, self.root_dir)
                child = Module((*module.path, name), child_dir, relative)
                module.children[name] = child
                pending.append(child)
        return root

    def _resolve_source(self, module: Module, name: str, call: ast.Block) -> str | None:
        attribute = call.body.attributes.get("source")
        if attribute is None:
            self._error("Missing required argument", f'module "{name}" needs a "source" argument', call.pos)
            return None
        try:
            source = EVALUATOR.evaluate(attribute.expr, constant_scope())
        except EvalError as error:
            self._add(Diagnostic.from_error(error))
            return None
        if not isinstance(source, str):
            self._error("Invalid module source", f"module {name}: the source must be a string", attribute.pos)
            return None
        if source.startswith("./") or source.startswith("../") or source in (".", ".."):
            directory = os.path.normpath(os.path.join(module.directory, source))
            if not os.path.isdir(directory):
                self._error(
                    "Module not found",
                    f"module {name}: the directory {source!r} does not exist",
                    attribute.pos,
                )
                return None
            return directory
        key = ".".join((*module.path, name))
        directory = self._modules_manifest.get(key)
        if directory is not None and os.path.isdir(directory):
            return directory
        self._add(
            Diagnostic.at(
                "warning",
                "Module source not resolved",
                f"module {name}: source {source} not resolved (run terraform init to "
                "download it); its outputs are unknown",
                attribute.pos,
            )
        )
        return None

    def _load_module_blocks(self, module: Module) -> None:
        try:
            files = self._load_files(module.directory)
        except Exception as error:  # the loader's ConfigSyntaxError or an OS error
            self._add(
                Diagnostic(
                    "error",
                    "Failed to load configuration",
                    getattr(error, "message", str(error)),
                    getattr(error, "file", module.directory),
                    getattr(error, "line", None),
                    getattr(error, "column", None),
                )
            )
            module.loaded = False
            return
        for parsed in files:
            for block in parsed.body.blocks:
                self._register_block(module, block)

    def _register_block(self, module: Module, block: ast.Block) -> None:
        kind, labels = block.type, block.labels
        if kind == "locals":
            for name, attribute in block.body.attributes.items():
                if name in module.locals:
                    self._error(
                        "Duplicate local value definition",
                        f"a local value named {name!r} was already defined",
                        attribute.pos,
                    )
                else:
                    module.locals[name] = attribute
            return
        targets = {
            "variable": (module.variables, 1),
            "output": (module.outputs, 1),
            "module": (module.calls, 1),
            "resource": (module.resources, 2),
            "data": (module.data, 2),
            "check": (module.checks, 1),
        }
        if kind not in targets:
            return  # terraform, provider, moved, import, removed, ephemeral: no values of ours
        table, label_count = targets[kind]
        if len(labels) != label_count:
            self._error("Invalid block", f"a {kind} block needs {label_count} label(s)", block.pos)
            return
        name = ".".join(labels)
        if name in table:
            self._error(f"Duplicate {kind} definition", f"{kind} {name!r} is defined twice", block.pos)
            return
        table[name] = block

    # -- the graph ---------------------------------------------------------------------------------------

    def _targets(self, module: Module, reference: tuple) -> list[Node]:
        kind = reference[0]
        path = module.path
        if kind == "var" or kind == "local":
            return [(path, kind, reference[1])]
        if kind == "resource" or kind == "data":
            return [(path, kind, f"{reference[1]}.{reference[2]}")]
        name, output = reference[1], reference[2]
        nodes: list[Node] = [(path, "call", name)]
        child = module.children.get(name)
        if child is not None:
            outputs = [output] if output is not None else list(child.outputs)
            nodes.extend((child.path, "output", out) for out in outputs)
        return nodes

    def _link(self, node: Node, module: Module, references: Iterable[tuple]) -> None:
        graph = self.graph
        for reference in references:
            for target in self._targets(module, reference):
                if target != node:
                    graph.add_edge(node, target)
                elif node[1] != "var" and node not in self._self_referencing:
                    # A variable's validation reads its own value; any other block cannot.
                    self._self_referencing.add(node)
                    self._error(
                        "Self-referential block",
                        f"the configuration of {node_name(node)} refers to itself",
                        self._node_pos(node),
                    )

    def _build_graph(self) -> None:
        graph = self.graph
        for module in self.modules.values():
            path = module.path
            parent_call: Node | None = None
            if path:
                parent_call = (path[:-1], "call", path[-1])
            parent = self.modules.get(path[:-1]) if path else None
            nodes: list[Node] = []
            for name, block in module.variables.items():
                node = (path, "var", name)
                graph.add_node(node)
                nodes.append(node)
                for nested in block.body.blocks:
                    if nested.type == "validation":
                        self._link(node, module, body_references(nested.body))
                if parent is not None:
                    argument = parent.calls[path[-1]].body.attributes.get(name)
                    if argument is not None:
                        self._link(node, parent, expression_references(argument.expr))
            for name, attribute in module.locals.items():
                node = (path, "local", name)
                graph.add_node(node)
                nodes.append(node)
                self._link(node, module, expression_references(attribute.expr))
            for kind, table in (("resource", module.resources), ("data", module.data)):
                for name, block in table.items():
                    node = (path, kind, name)
                    graph.add_node(node)
                    nodes.append(node)
                    self._link(node, module, body_references(block.body))
            for name, block in module.calls.items():
                node = (path, "call", name)
                graph.add_node(node)
                nodes.append(node)
                self._link(
                    node,
                    module,
                    body_references(
                        ast.Body(
                            {k: v for k, v in block.body.attributes.items() if k in _MODULE_META_ATTRIBUTES}
                        )
                    ),
                )
                child = module.children.get(name)
                if child is not None and child.loaded:
                    for argument, attribute in block.body.attributes.items():
                        if argument not in _MODULE_META_ATTRIBUTES and argument not in child.variables:
                            self._error(
                                "Unsupported argument",
                                f"module {name}: an argument named {argument!r} is not expected "
                                "(no such variable in the module)",
                                attribute.pos,
                            )
            for name, block in module.outputs.items():
                node = (path, "output", name)
                graph.add_node(node)
                nodes.append(node)
                self._link(node, module, body_references(block.body))
            for name, block in module.checks.items():
                node = (path, "check", name)
                graph.add_node(node)
                nodes.append(node)
                self._link(node, module, body_references(block.body))
            if parent_call is not None:
                for node in nodes:
                    graph.add_edge(node, parent_call)

    def _node_block(self, node: Node) -> Any:
        path, kind, name = node
        module = self.modules[path]
        table = {
            "var": module.variables,
            "local": module.locals,
            "resource": module.resources,
            "data": module.data,
            "call": module.calls,
            "output": module.outputs,
            "check": module.checks,
        }[kind]
        return table[name]

    def _node_pos(self, node: Node) -> ast.Pos | None:
        try:
            return self._node_block(node).pos
        except KeyError:
            return None

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

    def value_of(self, node: Node, key: ModuleKey = (), pos: ast.Pos | None = None) -> Any:
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
                    pos or self._node_pos(node),
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
        path, kind, name = node
        module = self.modules[path]
        handler = {
            "var": self._eval_variable,
            "local": self._eval_local,
            "resource": self._eval_resource,
            "data": self._eval_resource,
            "call": self._eval_call,
            "output": self._eval_output,
            "check": self._eval_check,
        }[kind]
        try:
            for key in self.instances.get(path, ()):
                try:
                    results[key] = handler(module, node, key)
                except (RecursionError, TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
                    # A defect of ours, or a construct we do not handle, must cost one value, not the
                    # evaluation of the whole configuration.
                    results[key] = UNKNOWN
                    self._error(
                        "Internal error of the evaluator",
                        f"{node_name(node)}: {error!r}",
                        self._node_pos(node),
                    )
        finally:
            self.values[node] = results
            self._in_progress.discard(node)
            for warning in self._warnings:
                self._add(warning)
            self._warnings.clear()

    def scope(self, module: Module, key: ModuleKey) -> Scope:
        scope = self._scopes.get(key)
        if scope is None:
            names = {
                "path": {"module": module.relative_dir, "root": ".", "cwd": self.cwd},
                "terraform": {"workspace": "default"},
            }
            function_context = self._function_context(module)
            scope = Scope(
                names,
                _InstanceResolver(self, module, key),
                function_context=function_context,
                warnings=self._warnings,
            )
            self._scopes[key] = scope
        return scope

    def _function_context(self, module: Module) -> FunctionContext:
        context = FunctionContext(module_dir=module.directory, root_dir=self.root_dir, cwd=self.cwd)

        def render_template(text: str, filename: str, variables: dict) -> Any:
            return self._render_template(text, filename, variables, context)

        context.render_template = render_template
        return context

    def _render_template(self, text: str, filename: str, variables: dict, context: Any) -> Any:
        from policies_app.iac.loader import parse_template

        try:
            template = parse_template(text, filename)
        except Exception as error:
            raise EvalError(
                "Invalid template",
                ast.Pos(filename, getattr(error, "line", 0), getattr(error, "column", 0) or 0),
                getattr(error, "message", str(error)),
            ) from None
        # A template sees only the variables given to it (no var., local. or resource references).
        scope = Scope(
            dict(variables), constant_scope().resolver, warnings=self._warnings, function_context=context
        )
        return EVALUATOR.evaluate(template, scope)

    def _try(self, expr: ast.Expr, scope: Scope, default: Any = UNKNOWN) -> Any:
        """The value, or ``default`` after recording the error as a diagnostic."""
        try:
            return EVALUATOR.evaluate(expr, scope)
        except EvalError as error:
            self._add(Diagnostic.from_error(error))
            return default

    # locals and outputs

    def _eval_local(self, module: Module, node: Node, key: ModuleKey) -> Any:
        return self._try(module.locals[node[2]].expr, self.scope(module, key))

    def _eval_output(self, module: Module, node: Node, key: ModuleKey) -> Any:
        block = module.outputs[node[2]]
        scope = self.scope(module, key)
        self._check_conditions(block.body, scope, f"output {node[2]!r}", ("precondition",))
        attribute = block.body.attributes.get("value")
        if attribute is None:
            self._error(
                "Missing required argument", f'output "{node[2]}" needs a "value" argument', block.pos
            )
            return UNKNOWN
        value = self._try(attribute.expr, scope)
        if self._declared_sensitive(block):
            return mark(value)  # what reads module.NAME.OUTPUT gets a sensitive value
        if not module.path and contains_sensitive(value):
            self._error(
                "Output refers to sensitive values",
                f"output {node[2]!r}: to reduce the risk of "
                "accidentally exporting sensitive data that was intended to be only internal, "
                "Terraform requires that any root module output containing sensitive data be "
                "explicitly marked as sensitive (sensitive = true), to confirm your intent",
                block.pos,
            )
        return value

    def _declared_sensitive(self, block: ast.Block) -> bool:
        """``sensitive = true`` in a variable or output block (a literal: it may not refer to anything)."""
        attribute = block.body.attributes.get("sensitive")
        if attribute is None:
            return False
        return unmark_deep(self._try(attribute.expr, constant_scope(), False)) is True

    def _eval_check(self, module: Module, node: Node, key: ModuleKey) -> Any:
        """A check block's assertions: a failure is a warning, as in Terraform. Its scoped data source
        is read only at apply time, so the assertions that use it are unknown and skipped."""
        block = module.checks[node[2]]
        scoped = {
            f"{b.labels[0]}.{b.labels[1]}"
            for b in block.body.blocks
            if b.type == "data" and len(b.labels) == 2
        }
        base = self.scope(module, key)
        scope = Scope({}, _CheckResolver(base.resolver, scoped), base, base.function_context, base.warnings)
        prefix = module_address(key)
        for assertion in block.body.blocks:
            if assertion.type != "assert" or "condition" not in assertion.body.attributes:
                continue
            result = unmark_deep(self._try(assertion.body.attributes["condition"].expr, scope))
            if result is False:
                message_attr = assertion.body.attributes.get("error_message")
                message = unmark_deep(self._try(message_attr.expr, scope, "")) if message_attr else ""
                where = f"{prefix}.check.{node[2]}" if prefix else f"check.{node[2]}"
                self._add(
                    Diagnostic.at(
                        "warning",
                        "Check block assertion failed",
                        f"{where}: {message}",
                        assertion.body.attributes["condition"].pos,
                    )
                )
        return None

    def _check_conditions(self, body: ast.Body, scope: Scope, what: str, kinds: tuple[str, ...]) -> None:
        for block in body.blocks:
            if block.type not in kinds:
                continue
            condition = block.body.attributes.get("condition")
            if condition is None:
                continue
            result = unmark_deep(self._try(condition.expr, scope))
            if result is UNKNOWN or result is True:
                continue
            if result is not False:
                self._error(
                    "Invalid condition result",
                    f"{what}: a {block.type} condition must be a bool",
                    condition.pos,
                )
                continue
            message_attr = block.body.attributes.get("error_message")
            message = unmark_deep(self._try(message_attr.expr, scope, "")) if message_attr else ""
            message = message if isinstance(message, str) else "(error message not known)"
            summary = (
                "Resource postcondition failed"
                if block.type == "postcondition"
                else f"{block.type.capitalize()} failed"
            )
            self._error(summary, f"{what}: {message}", condition.pos)

    # variables

    def _var_type(self, module: Module, node: Node) -> types.TypeConstraint | None:
        if node in self._type_cache:
            return self._type_cache[node]
        block = module.variables[node[2]]
        attribute = block.body.attributes.get("type")
        constraint = None
        if attribute is not None:
            text = _type_text(attribute.expr)
            if text is None:
                self._error(
                    "Invalid type specification",
                    f"variable {node[2]!r}: the type is not a type expression",
                    attribute.pos,
                )
            else:
                try:
                    constraint = types.parse_type(text)
                except types.TypeSyntaxError as error:
                    self._error("Invalid type specification", f"variable {node[2]!r}: {error}", attribute.pos)
        self._type_cache[node] = constraint
        return constraint

    def _eval_variable(self, module: Module, node: Node, key: ModuleKey) -> Any:
        name = node[2]
        block = module.variables[name]
        constraint = self._var_type(module, node)
        attributes = block.body.attributes
        raw: Any = _NOT_SET
        pos = block.pos
        if not module.path:
            given = self._root_values.get(name)
            if given is not None:
                raw, pos = given.value, given.pos or block.pos
                if given.from_cli_string:
                    try:
                        raw = cli_string_value(raw, constraint, block.pos, self._parse_expression)
                    except EvalError as error:
                        self._error(
                            "Invalid value for variable", f"variable {name!r}: {error.detail}", block.pos
                        )
                        return UNKNOWN
        else:
            call = self.modules[module.path[:-1]].calls[module.path[-1]]
            argument = call.body.attributes.get(name)
            if argument is not None:
                parent_scope = self.scope(self.modules[module.path[:-1]], key[:-1])
                names = self._instance_names.get(key, {})
                raw = self._try(argument.expr, parent_scope.child(names) if names else parent_scope)
                pos = argument.pos
        nullable = True
        if "nullable" in attributes:
            nullable_value = unmark_deep(self._try(attributes["nullable"].expr, constant_scope(), True))
            nullable = nullable_value is not False
        if raw is _NOT_SET or (raw is None and not nullable):
            if "default" in attributes:
                raw = self._try(attributes["default"].expr, constant_scope())
            elif raw is _NOT_SET:
                where = f"module.{module.path[-1]}: " if module.path else ""
                self._error(
                    "No value for required variable",
                    f"{where}the variable {name!r} is required, but no value was given",
                    block.pos,
                )
                return UNKNOWN
        # A module argument may carry marks (a parent's sensitive value): its own mark is kept; marks
        # inside it are kept unless the value has to be converted (then the whole value is sensitive).
        raw, marked = unmark(raw)
        if raw is None and not nullable:
            self._error("Required variable not set", f"the variable {name!r} must not be null", pos)
            return UNKNOWN
        value = raw
        if constraint is not None:
            plain = unmark_deep(raw)
            try:
                value = types.convert(plain, constraint)
            except types.ConversionError as error:
                self._error("Invalid value for variable", f"variable {name!r}: {error}", pos)
                return UNKNOWN
            if plain is not raw:
                value = (
                    raw if type(value) is type(plain) and types.values_equal(value, plain) else mark(value)
                )
        if marked or self._declared_sensitive(block):
            value = mark(value)
        self._validate(module, node, key, value)
        return value

    def _validate(self, module: Module, node: Node, key: ModuleKey, value: Any) -> None:
        blocks = [b for b in module.variables[node[2]].body.blocks if b.type == "validation"]
        if not blocks:
            return
        # The validation reads var.NAME: make the value visible before the node is finished.
        self.values.setdefault(node, {})[key] = value
        scope = self.scope(module, key)
        for block in blocks:
            condition = block.body.attributes.get("condition")
            if condition is None:
                continue
            result = unmark_deep(self._try(condition.expr, scope))
            if result is False:
                message_attr = block.body.attributes.get("error_message")
                message = unmark_deep(self._try(message_attr.expr, scope, "")) if message_attr else ""
                prefix = module_address(key)
                where = f"{prefix}.var.{node[2]}" if prefix else f"var.{node[2]}"
                self._error("Invalid value for variable", f"{where}: {message}", condition.pos)
            elif result is not True and result is not UNKNOWN:
                self._error(
                    "Invalid validation condition",
                    f"var.{node[2]}: the condition must be a bool",
                    condition.pos,
                )
        del self.values[node][key]

    # count and for_each

    def _expansion(self, block: ast.Block, scope: Scope, what: str) -> tuple[str, list[tuple[Any, dict]]]:
        """("none"|"count"|"for_each"|"unknown", [(index, names to bind)])."""
        attributes = block.body.attributes
        count, for_each = attributes.get("count"), attributes.get("for_each")
        unknown = (
            "unknown",
            [(UNKNOWN_INDEX, {"count": {"index": UNKNOWN}, "each": {"key": UNKNOWN, "value": UNKNOWN}})],
        )
        if count is not None and for_each is not None:
            self._error(
                'Invalid combination of "count" and "for_each"',
                f"{what}: the count and for_each meta-arguments are mutually exclusive",
                count.pos,
            )
            return unknown
        if count is not None:
            value = unmark_deep(self._try(count.expr, scope, None))  # a sensitive count is allowed
            if value is UNKNOWN:
                return unknown
            problem = None
            number = None
            if value is None:
                problem = "the given count argument value is null; an integer is required"
            else:
                try:
                    number = to_number(value, count.pos, "count")
                except EvalError as error:
                    problem = error.detail
            if problem is None and (not isinstance(number, int) or number < 0):
                problem = f"the count must be a whole non-negative number, not {value!r}"
            if problem is not None:
                self._error("Invalid count argument", f"{what}: {problem}", count.pos)
                return unknown
            return "count", [(i, {"count": {"index": i}}) for i in range(number)]  # type: ignore[arg-type]
        if for_each is not None:
            value = self._try(for_each.expr, scope, None)
            problem = None
            if value.__class__ is Sensitive:
                # Instance keys show in addresses and in the plan: Terraform refuses sensitive ones.
                self._error(
                    "Invalid for_each argument",
                    f"{what}: sensitive values, or values derived from "
                    "sensitive values, cannot be used as for_each arguments; if you do intend to "
                    "use it, wrap it in nonsensitive()",
                    for_each.pos,
                )
                return unknown
            if value is UNKNOWN:
                return unknown
            items: list[tuple[Any, dict]] = []
            if value is None:
                problem = "the given for_each argument value is null; a map, or set of strings, is allowed"
            elif isinstance(value, TfSet):
                if any(v is UNKNOWN for v in value):
                    return unknown
                if not all(isinstance(v, str) for v in value):
                    problem = (
                        "the given for_each argument value is unsuitable: for_each supports maps and "
                        "sets of strings, but you have provided a set containing type "
                        f"{_first_non_string_type(value)}"
                    )
                else:
                    items = [(v, {"each": {"key": v, "value": v}}) for v in value]
            elif isinstance(value, (list, tuple)):
                problem = (
                    "the given for_each argument value is unsuitable: the for_each argument must be a "
                    "map, or set of strings, and you have provided a value of type tuple (a list); "
                    "convert it with toset() or build a map"
                )
            elif isinstance(value, dict):
                items = [(k, {"each": {"key": k, "value": value[k]}}) for k in sorted(value)]
            else:
                problem = (
                    "the given for_each argument value is unsuitable: the for_each argument must be a "
                    f"map, or set of strings, and you have provided a value of type "
                    f"{types.type_name(value)}"
                )
            if problem is not None:
                self._error("Invalid for_each argument", f"{what}: {problem}", for_each.pos)
                return unknown
            return "for_each", items
        return "none", [(None, {})]

    # module calls

    def _eval_call(self, module: Module, node: Node, key: ModuleKey) -> Any:
        name = node[2]
        block = module.calls[name]
        child = module.children.get(name)
        scope = self.scope(module, key)
        mode, items = self._expansion(block, scope, f"module.{name}")
        children: list[tuple[Any, ModuleKey]] = []
        if child is not None:
            instance_list = self.instances.setdefault(child.path, [])
            for index, names in items:
                child_key = (*key, (name, index))
                instance_list.append(child_key)
                self._instance_names[child_key] = names
                if index is UNKNOWN_INDEX or key in self._unknown_module_instance:
                    self._unknown_module_instance.add(child_key)
                children.append((index, child_key))
        self._call_children[(key, name)] = (mode, children)
        return mode

    def module_object(self, module: Module, key: ModuleKey, name: str) -> Any:
        """``module.NAME`` seen from an instance of ``module``: an object of outputs, or a list/map of
        them for a module with count/for_each; UNKNOWN when not resolved or not yet expandable."""
        child = module.children.get(name)
        if child is None or not child.loaded:
            return UNKNOWN
        entry = self._call_children.get((key, name))
        if entry is None:
            self.request([(module.path, "call", name)])
            entry = self._call_children.get((key, name))
            if entry is None:
                return UNKNOWN
        mode, children = entry
        if mode == "unknown":
            return UNKNOWN
        objects = []
        for index, child_key in children:
            outputs = {out: self.value_of((child.path, "output", out), child_key) for out in child.outputs}
            objects.append((index, outputs))
        if mode == "none":
            return objects[0][1] if objects else UNKNOWN
        if mode == "count":
            return [obj for _, obj in objects]
        return {index: obj for index, obj in objects}

    def module_output(
        self,
        module: Module,
        key: ModuleKey,
        name: str,
        has_index: bool,
        index: Any,
        output: str,
        pos: ast.Pos | None = None,
    ) -> Any:
        """``module.NAME.OUTPUT`` or ``module.NAME[INDEX].OUTPUT``: that one output's node, and only it,
        is read (the graph's edges say the same). NotImplemented for any other shape (a missing output,
        an index that does not fit the expansion): the caller then uses the whole module object."""
        child = module.children.get(name)
        if child is None or not child.loaded:
            return UNKNOWN
        if output not in child.outputs:
            return NotImplemented
        entry = self._call_children.get((key, name))
        if entry is None:
            self.value_of((module.path, "call", name), key, pos)
            entry = self._call_children.get((key, name))
            if entry is None:
                return UNKNOWN
        mode, children = entry
        if mode == "unknown":
            return UNKNOWN
        node = (child.path, "output", output)
        if mode == "none" and not has_index:
            return self.value_of(node, children[0][1], pos) if children else UNKNOWN
        if mode == "none" or not has_index or index is UNKNOWN:
            return UNKNOWN if index is UNKNOWN else NotImplemented
        if mode == "count" and (isinstance(index, bool) or not isinstance(index, int)):
            return NotImplemented
        if mode == "for_each" and not isinstance(index, str):
            return NotImplemented
        for child_index, child_key in children:
            if child_index == index:
                return self.value_of(node, child_key, pos)
        return NotImplemented

    # resources and data sources

    def _eval_resource(self, module: Module, node: Node, key: ModuleKey) -> Any:
        kind = node[1]
        block = (module.resources if kind == "resource" else module.data)[node[2]]
        resource_type, resource_name = block.labels[0], block.labels[1]
        scope = self.scope(module, key)
        what = ("data." if kind == "data" else "") + node[2]
        prefix = module_address(key)
        mode, items = self._expansion(block, scope, f"{prefix + '.' if prefix else ''}{what}")
        objects: list[tuple[Any, Any]] = []
        in_unknown_module = key in self._unknown_module_instance
        for index, names in items:
            inner = scope.child(names) if names else scope
            values = self._eval_body(block.body, inner, top_level=True)
            values, reference = _instance_views(kind, resource_type, values)
            self._check_conditions(_lifecycle_body(block), inner, what, ("precondition",))
            self_scope = inner.child({"self": reference})
            self._check_conditions(_lifecycle_body(block), self_scope, what, ("postcondition",))
            self._check_provisioners(block.body, self_scope)
            objects.append((index, reference))
            address = f"{prefix + '.' if prefix else ''}{what}{format_index(index)}"
            entry = {
                "address": address,
                "module": prefix,
                "mode": "managed" if kind == "resource" else "data",
                "type": resource_type,
                "name": resource_name,
                "index": None if index is UNKNOWN_INDEX else index,
                "values": to_json_compatible(values),
                "unknown": unknown_tree(values),
                "sensitive": sensitive_tree(values),
                "expansion": "unknown" if in_unknown_module else mode,
            }
            sort_key = (
                tuple((name, _index_sort_key(i)) for name, i in key),
                kind == "data",
                resource_type,
                resource_name,
                _index_sort_key(index),
            )
            self._resource_entries.append((sort_key, entry))
        if mode == "unknown":
            return UNKNOWN
        if mode == "none":
            return objects[0][1]
        if mode == "count":
            return [obj for _, obj in objects]
        return {index: obj for index, obj in objects}

    def _check_provisioners(self, body: ast.Body, scope: Scope) -> None:
        # Provisioner and connection arguments are not values, but their errors (a bad self.x) are.
        pending = [b for b in body.blocks if b.type in ("provisioner", "connection")]
        while pending:
            block = pending.pop()
            for attribute in block.body.attributes.values():
                self._try(attribute.expr, scope)
            pending.extend(b for b in block.body.blocks if b.type == "connection")

    def _eval_body(self, body: ast.Body, scope: Scope, top_level: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for name, attribute in body.attributes.items():
            if top_level and name in _RESOURCE_META_ATTRIBUTES:
                continue
            result[name] = self._try(attribute.expr, scope)
        for block in body.blocks:
            if top_level and block.type in _RESOURCE_META_BLOCKS:
                continue
            if block.type == "dynamic" and block.labels:
                label = block.labels[0]
                expanded = self._expand_dynamic(block, scope)
                current = result.get(label, [])
                if expanded is UNKNOWN or current is UNKNOWN:
                    result[label] = UNKNOWN
                else:
                    result[label] = [*current, *expanded]
                continue
            nested = self._eval_body(block.body, scope)
            current = result.get(block.type, [])
            if current is not UNKNOWN:
                # A new list each time: an attribute of the same name may hold a list shared with a local.
                result[block.type] = [*current, nested] if isinstance(current, list) else [nested]
        return result

    def _expand_dynamic(self, block: ast.Block, scope: Scope) -> Any:
        attributes = block.body.attributes
        for_each = attributes.get("for_each")
        if for_each is None:
            self._error("Missing required argument", f'dynamic "{block.labels[0]}" needs for_each', block.pos)
            return []
        collection, marked = unmark(self._try(for_each.expr, scope))
        if collection is UNKNOWN:
            return UNKNOWN
        if marked:
            self._error(
                "Invalid dynamic for_each value",
                f'dynamic "{block.labels[0]}": cannot use a '
                "sensitive value (or one derived from it) in for_each",
                for_each.pos,
            )
            return UNKNOWN
        iterator = block.labels[0]
        if "iterator" in attributes:
            iterator = keyword_of(attributes["iterator"].expr) or iterator
        content = next((b for b in block.body.blocks if b.type == "content"), None)
        if content is None:
            self._error(
                "Missing content block", f'dynamic "{block.labels[0]}" needs a content block', block.pos
            )
            return []
        try:
            pairs = iterate_collection(collection, for_each.pos)
        except EvalError as error:
            self._add(Diagnostic.from_error(error))
            return UNKNOWN
        return [
            self._eval_body(content.body, scope.child({iterator: {"key": k, "value": v}})) for k, v in pairs
        ]

    # -- the document ----------------------------------------------------------------------------------------

    def document(self) -> dict:
        """Evaluate everything and return the JSON-compatible document (see the module docstring)."""
        self.evaluate_all()
        outputs = {}
        for name, block in self.root.outputs.items():
            value = self.values.get(((), "output", name), {}).get((), UNKNOWN)
            sensitive = self._declared_sensitive(block)
            # A wholly known output is plain false, as a plan's output_changes say.
            plain, finite = _finite_json(to_json_compatible(value))
            if not finite:
                self._error(
                    "Failed to serialize output value",
                    f"output {name!r}: cannot serialize infinity as JSON",
                    block.pos,
                )
            outputs[name] = {
                "value": plain,
                "sensitive": sensitive,
                "unknown": unknown_tree(value) if contains_unknown(value) else False,
            }
        # Terraform's order: by module instance, then mode, type, name and index (numbers as numbers).
        resources = [entry for _, entry in sorted(self._resource_entries, key=lambda pair: pair[0])]
        for entry in resources:
            entry["values"], finite = _finite_json(entry["values"])
            if not finite:
                self._add(
                    Diagnostic(
                        "error",
                        "Failed to serialize resource value",
                        f"{entry['address']}: cannot serialize infinity as JSON",
                    )
                )
        return {
            "outputs": outputs,
            "resources": resources,
            "diagnostics": [d.as_dict() for d in self.diagnostics],
        }


class _InstanceResolver:
    """Answers var/local/module/resource/data references for one module instance."""

    __slots__ = ("_config", "_module", "_key", "_path")

    def __init__(self, config: ConfigurationEvaluator, module: Module, key: ModuleKey) -> None:
        self._config = config
        self._module = module
        self._key = key
        self._path = module.path

    def _get(self, node: Node, pos: ast.Pos, summary: str, detail: str) -> Any:
        config = self._config
        values = config.values.get(node)
        if values is not None:
            return values.get(self._key, UNKNOWN)
        if node not in config.graph:
            raise EvalError(summary, pos, detail)
        return config.value_of(node, self._key, pos)

    def variable(self, name: str, pos: ast.Pos) -> Any:
        return self._get(
            (self._path, "var", name),
            pos,
            "Reference to undeclared input variable",
            f"an input variable with the name {name!r} has not been declared",
        )

    def local(self, name: str, pos: ast.Pos) -> Any:
        return self._get(
            (self._path, "local", name),
            pos,
            "Reference to undeclared local value",
            f"a local value with the name {name!r} has not been declared",
        )

    def resource(self, type_: str, name: str, pos: ast.Pos) -> Any:
        return self._get(
            (self._path, "resource", f"{type_}.{name}"),
            pos,
            "Reference to undeclared resource",
            f'a managed resource "{type_}" "{name}" has not been declared',
        )

    def data(self, type_: str, name: str, pos: ast.Pos) -> Any:
        return self._get(
            (self._path, "data", f"{type_}.{name}"),
            pos,
            "Reference to undeclared resource",
            f'a data resource "{type_}" "{name}" has not been declared',
        )

    def module(self, name: str, pos: ast.Pos) -> Any:
        if name not in self._module.calls:
            raise EvalError(
                "Reference to undeclared module",
                pos,
                f"no module call named {name!r} is declared in this module",
            )
        return self._config.module_object(self._module, self._key, name)

    def module_output(self, name: str, has_index: bool, index: Any, output: str, pos: ast.Pos) -> Any:
        if name not in self._module.calls:
            raise EvalError(
                "Reference to undeclared module",
                pos,
                f"no module call named {name!r} is declared in this module",
            )
        return self._config.module_output(self._module, self._key, name, has_index, index, output, pos)


class _CheckResolver:
    """The module's resolver, except for a check block's own scoped data sources (unknown)."""

    __slots__ = ("_inner", "_scoped")

    def __init__(self, inner: _InstanceResolver, scoped: set[str]) -> None:
        self._inner = inner
        self._scoped = scoped

    def data(self, type_: str, name: str, pos: ast.Pos) -> Any:
        if f"{type_}.{name}" in self._scoped:
            return ResourceObject()
        return self._inner.data(type_, name, pos)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _type_text(expr: ast.Expr) -> str | None:
    """The text of a variable's type expression, whatever node the loader made of it."""
    text = getattr(expr, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(expr, ast.Literal) and isinstance(expr.value, str):
        return expr.value  # JSON syntax: "type": "list(string)"
    if isinstance(expr, ast.Reference):
        return expr.name
    return None


def _lifecycle_body(block: ast.Block) -> ast.Body:
    conditions = [
        b for lifecycle in block.body.blocks if lifecycle.type == "lifecycle" for b in lifecycle.body.blocks
    ]
    return ast.Body({}, conditions)


def _first_non_string_type(values: TfSet) -> str:
    for value in values:
        if not isinstance(value, str):
            return types.type_name(value)
    return "string"


def _instance_views(kind: str, resource_type: str, values: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """What the plan shows for an instance, and what expressions see when they refer to it.

    Attributes not set in the configuration exist only after apply (ResourceObject reads them as
    unknown). Everything a data source returns is known only once it is read.
    """
    if kind == "data":
        return values, ResourceObject()
    if resource_type == "terraform_data":
        # The builtin provider's schema: output mirrors input but is only known after apply.
        values = {
            "id": UNKNOWN,
            "input": values.get("input"),
            "output": None,
            "triggers_replace": values.get("triggers_replace"),
            **{k: v for k, v in values.items() if k not in ("input", "triggers_replace")},
        }
        values["output"] = None if unmark(values["input"])[0] is None else UNKNOWN
        values["id"] = UNKNOWN
    return values, ResourceObject(values)


def _finite_json(value: Any) -> tuple[Any, bool]:
    """``value`` with infinite numbers (1/0) replaced by null, and whether it had none: JSON has no
    infinity, and terraform refuses to write a plan holding one."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, False
    if isinstance(value, dict):
        finite = True
        result = {}
        for key, inner in value.items():
            result[key], ok = _finite_json(inner)
            finite = finite and ok
        return (result, True) if finite else (result, False)
    if isinstance(value, list):
        pairs = [_finite_json(inner) for inner in value]
        return [v for v, _ in pairs], all(ok for _, ok in pairs)
    return value, True


def _index_sort_key(index: Any) -> tuple:
    if isinstance(index, int):
        return (1, index, "")
    if isinstance(index, str):
        return (2, 0, index)
    return (0, 0, "")  # no index, or an unknown one


def evaluate_configuration(
    directory: str,
    *,
    variables: dict[str, Any] | None = None,
    var_files: Iterable[str] = (),
    cache_dir: str | None = None,
) -> dict:
    """The statically known values of a configuration: outputs, resources and diagnostics.

    Never raises for problems in the configuration: they are diagnostics. ``variables`` are -var
    values (a ``str`` is read as Terraform reads a -var string, by the variable's type).
    """
    # The parsed trees are hundreds of thousands of small objects that live until the end: without this,
    # the cyclic garbage collector rescans them again and again and doubles the evaluation time. The
    # evaluation makes few reference cycles, so collection is only postponed to the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        evaluator = ConfigurationEvaluator(
            directory, variables=variables, var_files=var_files, cache_dir=cache_dir
        )
        return evaluator.document()
    except (RecursionError, MemoryError, LookupError, TypeError, ValueError, AttributeError) as error:
        # A defect of ours must not take the deployment's evaluation down with it: say so instead.
        where = traceback.extract_tb(error.__traceback__)[-1]
        detail = f"{error!r} at {os.path.basename(where.filename)}:{where.lineno}"
        return {
            "outputs": {},
            "resources": [],
            "diagnostics": [
                {
                    "severity": "error",
                    "summary": "Internal error of the evaluator",
                    "detail": detail,
                    "file": None,
                    "line": None,
                    "column": None,
                }
            ],
        }
    finally:
        if collecting:
            gc.enable()
