"""Module calls and outputs: a call's instances, ``module.NAME`` and ``module.NAME.OUTPUT`` as values,
and each output's value (with its preconditions and sensitivity)."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.conditions import check_conditions
from policies_app.iac.config_graph import Node
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expansion import UNKNOWN_INDEX, ModuleKey, expand
from policies_app.iac.expressions import constant_scope
from policies_app.iac.module_tree import Module
from policies_app.iac.values import UNKNOWN, contains_sensitive, is_unknown, unmark_deep


def evaluate_call(evaluation: EvaluationState, module: Module, node: Node, key: ModuleKey) -> Any:
    """Expands a module call for one instance of its module: the child module's instances."""
    name = node[2]
    block = module.calls[name]
    child = module.children.get(name)
    scope = evaluation.scope(module, key)
    mode, items = expand(block, scope, f"module.{name}", evaluation.reporter)
    children: list[tuple[Any, ModuleKey]] = []
    if child is not None:
        instance_list = evaluation.instances.setdefault(child.path, [])
        for index, names in items:
            child_key = (*key, (name, index))
            instance_list.append(child_key)
            evaluation.instance_names[child_key] = names
            if index is UNKNOWN_INDEX or key in evaluation.unknown_module_instances:
                evaluation.unknown_module_instances.add(child_key)
            children.append((index, child_key))
    evaluation.call_children[(key, name)] = (mode, children)
    return mode


def _call_children(
    evaluation: EvaluationState,
    module: Module,
    key: ModuleKey,
    name: str,
    pos: syntax_nodes.Pos | None,
) -> tuple[str, list[tuple[Any, ModuleKey]]] | None:
    entry = evaluation.call_children.get((key, name))
    if entry is None:
        evaluation.value_of((module.path, "call", name), key, pos)
        entry = evaluation.call_children.get((key, name))
    return entry


def module_object(evaluation: EvaluationState, module: Module, key: ModuleKey, name: str) -> Any:
    """``module.NAME`` seen from an instance of ``module``: an object of outputs, or a list/map of
    them for a module with count/for_each; UNKNOWN when not resolved or not yet expandable."""
    child = module.children.get(name)
    if child is None or not child.loaded:
        return UNKNOWN
    entry = _call_children(evaluation, module, key, name, None)
    if entry is None:
        return UNKNOWN
    mode, children = entry
    if mode == "unknown":
        return UNKNOWN
    objects = []
    for index, child_key in children:
        outputs = {out: evaluation.value_of((child.path, "output", out), child_key) for out in child.outputs}
        objects.append((index, outputs))
    if mode == "none":
        return objects[0][1] if objects else UNKNOWN
    if mode == "count":
        return [obj for _, obj in objects]
    return {index: obj for index, obj in objects}


def module_output(
    evaluation: EvaluationState,
    module: Module,
    key: ModuleKey,
    name: str,
    has_index: bool,
    index: Any,
    output: str,
    pos: syntax_nodes.Pos | None = None,
) -> Any:
    """``module.NAME.OUTPUT`` or ``module.NAME[INDEX].OUTPUT``: that one output's node, and only it,
    is read (the graph's edges say the same). NotImplemented for any other shape (a missing output,
    an index that does not fit the expansion): the caller then uses the whole module object."""
    child = module.children.get(name)
    if child is None or not child.loaded:
        return UNKNOWN
    if output not in child.outputs:
        return NotImplemented
    entry = _call_children(evaluation, module, key, name, pos)
    if entry is None:
        return UNKNOWN
    mode, children = entry
    if mode == "unknown":
        return UNKNOWN
    node = (child.path, "output", output)
    if mode == "none" and not has_index:
        return evaluation.value_of(node, children[0][1], pos) if children else UNKNOWN
    if mode == "none" or not has_index or is_unknown(index):
        return UNKNOWN if is_unknown(index) else NotImplemented
    if mode == "count" and (isinstance(index, bool) or not isinstance(index, int)):
        return NotImplemented
    if mode == "for_each" and not isinstance(index, str):
        return NotImplemented
    for child_index, child_key in children:
        if child_index == index:
            return evaluation.value_of(node, child_key, pos)
    return NotImplemented


def evaluate_output(evaluation: EvaluationState, module: Module, node: Node, key: ModuleKey) -> Any:
    block = module.outputs[node[2]]
    reporter = evaluation.reporter
    scope = evaluation.scope(module, key)
    check_conditions(reporter, block.body, scope, f"output {node[2]!r}", ("precondition",))
    attribute = block.body.attributes.get("value")
    if attribute is None:
        reporter.error("Missing required argument", f'output "{node[2]}" needs a "value" argument', block.pos)
        return UNKNOWN
    value = reporter.value(attribute.expr, scope)
    # `sensitive = true` on a child module's output does not mark what its caller reads during the plan
    # (measured: issensitive(module.m.declared) is false in terraform 1.11's plan); only the values'
    # own marks travel. A root module output holding a mark must declare it.
    if not module.path and contains_sensitive(value) and not declared_sensitive(reporter, block):
        reporter.error(
            "Output refers to sensitive values",
            f"output {node[2]!r}: to reduce the risk of "
            "accidentally exporting sensitive data that was intended to be only internal, "
            "Terraform requires that any root module output containing sensitive data be "
            "explicitly marked as sensitive (sensitive = true), to confirm your intent",
            block.pos,
        )
    return value


def declared_sensitive(reporter: Reporter, block: syntax_nodes.Block) -> bool:
    """``sensitive = true`` in a variable or output block (a literal: it may not refer to anything)."""
    attribute = block.body.attributes.get("sensitive")
    if attribute is None:
        return False
    return unmark_deep(reporter.value(attribute.expr, constant_scope(), False)) is True
