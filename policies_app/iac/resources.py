"""Resources and data sources: each instance's arguments (nested and dynamic blocks included), its
conditions, and its entry in the plan (resource_views.py says what the plan shows of it)."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.conditions import check_conditions, lifecycle_body
from policies_app.iac.config_graph import Node
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expansion import (
    UNKNOWN_INDEX,
    ModuleKey,
    expand,
    format_index,
    index_sort_key,
    module_address,
)
from policies_app.iac.expressions import Diagnostic, EvalError, Scope, iterate_collection
from policies_app.iac.graph import keyword_of
from policies_app.iac.module_tree import Module
from policies_app.iac.resource_views import instance_views
from policies_app.iac.values import (
    UNKNOWN,
    is_unknown,
    sensitive_tree,
    to_json_compatible,
    unknown_tree,
    unmark,
)

# Arguments of resource blocks that are instructions to Terraform, not attribute values.
_META_ATTRIBUTES = frozenset({"count", "for_each", "depends_on", "provider"})
_META_BLOCKS = frozenset({"lifecycle", "provisioner", "connection"})


def evaluate_resource(evaluation: EvaluationState, module: Module, node: Node, key: ModuleKey) -> Any:
    """Every instance of a resource (or data source) in one module instance: its plan entries are
    recorded, and the value that references see is returned (an object, a list, a map, UNKNOWN)."""
    kind = node[1]
    block = (module.resources if kind == "resource" else module.data)[node[2]]
    reporter = evaluation.reporter
    resource_type, resource_name = block.labels[0], block.labels[1]
    scope = evaluation.scope(module, key)
    what = ("data." if kind == "data" else "") + node[2]
    prefix = module_address(key)
    mode, items = expand(block, scope, f"{prefix + '.' if prefix else ''}{what}", reporter)
    objects: list[tuple[Any, Any]] = []
    in_unknown_module = key in evaluation.unknown_module_instances
    conditions = lifecycle_body(block)
    for index, names in items:
        inner = scope.child(names) if names else scope
        values = evaluate_body(reporter, block.body, inner, top_level=True)
        values, reference = instance_views(kind, block, values, evaluation.schemas, reporter, what)
        check_conditions(reporter, conditions, inner, what, ("precondition",))
        self_scope = inner.child({"self": reference})
        check_conditions(reporter, conditions, self_scope, what, ("postcondition",))
        _check_provisioners(reporter, block.body, self_scope)
        objects.append((index, reference))
        entry = {
            "address": f"{prefix + '.' if prefix else ''}{what}{format_index(index)}",
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
            tuple((name, index_sort_key(i)) for name, i in key),
            kind == "data",
            resource_type,
            resource_name,
            index_sort_key(index),
        )
        evaluation.resource_entries.append((sort_key, entry))
    if mode == "unknown":
        return UNKNOWN
    if mode == "none":
        return objects[0][1]
    if mode == "count":
        return [obj for _, obj in objects]
    return {index: obj for index, obj in objects}


def _check_provisioners(reporter: Reporter, body: syntax_nodes.Body, scope: Scope) -> None:
    # Provisioner and connection arguments are not values, but their errors (a bad self.x) are.
    pending = [b for b in body.blocks if b.type in ("provisioner", "connection")]
    while pending:
        block = pending.pop()
        for attribute in block.body.attributes.values():
            reporter.value(attribute.expr, scope)
        pending.extend(b for b in block.body.blocks if b.type == "connection")


def evaluate_body(
    reporter: Reporter, body: syntax_nodes.Body, scope: Scope, top_level: bool = False
) -> dict[str, Any]:
    """A block body's arguments: attributes, and nested blocks as lists of objects."""
    result: dict[str, Any] = {}
    for name, attribute in body.attributes.items():
        if top_level and name in _META_ATTRIBUTES:
            continue
        result[name] = reporter.value(attribute.expr, scope)
    for block in body.blocks:
        if top_level and block.type in _META_BLOCKS:
            continue
        if block.type == "dynamic" and block.labels:
            label = block.labels[0]
            expanded = _expand_dynamic(reporter, block, scope)
            current = result.get(label, [])
            if is_unknown(expanded) or is_unknown(current):
                result[label] = UNKNOWN
            else:
                result[label] = [*current, *expanded]
            continue
        nested = evaluate_body(reporter, block.body, scope)
        current = result.get(block.type, [])
        if not is_unknown(current):
            # A new list each time: an attribute of the same name may hold a list shared with a local.
            result[block.type] = [*current, nested] if isinstance(current, list) else [nested]
    return result


def _expand_dynamic(reporter: Reporter, block: syntax_nodes.Block, scope: Scope) -> Any:
    attributes = block.body.attributes
    label = block.labels[0]
    for_each = attributes.get("for_each")
    if for_each is None:
        reporter.error("Missing required argument", f'dynamic "{label}" needs for_each', block.pos)
        return []
    collection, marked = unmark(reporter.value(for_each.expr, scope))
    if is_unknown(collection):
        return UNKNOWN
    if marked:
        reporter.error(
            "Invalid dynamic for_each value",
            f'dynamic "{label}": cannot use a sensitive value (or one derived from it) in for_each',
            for_each.pos,
        )
        return UNKNOWN
    iterator = label
    if "iterator" in attributes:
        iterator = keyword_of(attributes["iterator"].expr) or iterator
    content = next((b for b in block.body.blocks if b.type == "content"), None)
    if content is None:
        reporter.error("Missing content block", f'dynamic "{label}" needs a content block', block.pos)
        return []
    try:
        pairs = iterate_collection(collection, for_each.pos)
    except EvalError as error:
        reporter.add(Diagnostic.from_error(error))
        return UNKNOWN
    return [
        evaluate_body(reporter, content.body, scope.child({iterator: {"key": k, "value": v}}))
        for k, v in pairs
    ]
