"""count and for_each: which instances a resource, data source or module call has, and their addresses."""

from __future__ import annotations

import json
from typing import Any

from policies_app.iac import syntax_nodes, type_constraints
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.expressions import EvalError, Scope, to_number
from policies_app.iac.values import UNKNOWN, Sensitive, TfSet, contains_unknown, is_unknown, unmark_deep

ModuleKey = tuple  # ((call name, index), ...) from the root: one module instance


class _UnknownIndex:
    """The index of the single instance standing for an expansion whose count/for_each is unknown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "[?]"


UNKNOWN_INDEX = _UnknownIndex()

# (mode, [(index, names bound in the instance: count.index, each.key, each.value)])
Expansion = tuple[str, list[tuple[Any, dict]]]
_UNKNOWN_EXPANSION: Expansion = (
    "unknown",
    [(UNKNOWN_INDEX, {"count": {"index": UNKNOWN}, "each": {"key": UNKNOWN, "value": UNKNOWN}})],
)


def format_index(index: Any) -> str:
    if index is None or index is UNKNOWN_INDEX:
        return ""
    if isinstance(index, int):
        return f"[{index}]"
    return "[" + json.dumps(index, ensure_ascii=False) + "]"


def module_address(key: ModuleKey) -> str:
    return ".".join(f"module.{name}{format_index(index)}" for name, index in key)


def index_sort_key(index: Any) -> tuple:
    """Terraform's order of instances: numbers as numbers, then keys; no index (or unknown) first."""
    if isinstance(index, int):
        return (1, index, "")
    if isinstance(index, str):
        return (2, 0, index)
    return (0, 0, "")


def expand(block: syntax_nodes.Block, scope: Scope, what: str, reporter: Reporter) -> Expansion:
    """("none"|"count"|"for_each"|"unknown", [(index, names to bind)]) of a block."""
    attributes = block.body.attributes
    count, for_each = attributes.get("count"), attributes.get("for_each")
    if count is not None and for_each is not None:
        reporter.error(
            'Invalid combination of "count" and "for_each"',
            f"{what}: the count and for_each meta-arguments are mutually exclusive",
            count.pos,
        )
        return _UNKNOWN_EXPANSION
    if count is not None:
        return _count(count, scope, what, reporter)
    if for_each is not None:
        return _for_each(for_each, scope, what, reporter)
    return "none", [(None, {})]


def _count(count: syntax_nodes.Attribute, scope: Scope, what: str, reporter: Reporter) -> Expansion:
    value = unmark_deep(reporter.value(count.expr, scope, None))  # a sensitive count is allowed
    if is_unknown(value):
        return _UNKNOWN_EXPANSION
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
        reporter.error("Invalid count argument", f"{what}: {problem}", count.pos)
        return _UNKNOWN_EXPANSION
    return "count", [(i, {"count": {"index": i}}) for i in range(number)]  # type: ignore[arg-type]


def _for_each(for_each: syntax_nodes.Attribute, scope: Scope, what: str, reporter: Reporter) -> Expansion:
    value = reporter.value(for_each.expr, scope, None)
    if value.__class__ is Sensitive:
        # Instance keys show in addresses and in the plan: Terraform refuses sensitive ones.
        reporter.error(
            "Invalid for_each argument",
            f"{what}: sensitive values, or values derived from "
            "sensitive values, cannot be used as for_each arguments; if you do intend to "
            "use it, wrap it in nonsensitive()",
            for_each.pos,
        )
        return _UNKNOWN_EXPANSION
    if is_unknown(value):
        return _UNKNOWN_EXPANSION
    problem = None
    items: list[tuple[Any, dict]] = []
    if value is None:
        problem = "the given for_each argument value is null; a map, or set of strings, is allowed"
    elif isinstance(value, TfSet):
        if any(contains_unknown(v) for v in value):
            return _UNKNOWN_EXPANSION
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
            f"map, or set of strings, and you have provided a value of type {type_constraints.type_name(value)}"
        )
    if problem is not None:
        reporter.error("Invalid for_each argument", f"{what}: {problem}", for_each.pos)
        return _UNKNOWN_EXPANSION
    return "for_each", items


def _first_non_string_type(values: TfSet) -> str:
    for value in values:
        if not isinstance(value, str):
            return type_constraints.type_name(value)
    return "string"
