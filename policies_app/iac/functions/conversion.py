"""Type conversion functions: tobool tolist tomap tonumber toset tostring sensitive nonsensitive issensitive.

Sensitivity is not modelled by the static evaluator (it matters for what terraform prints, not for the
values a policy sees), so the sensitivity functions are identities.
"""

from __future__ import annotations

from typing import Any

from policies_app.iac.functions.base import ArgumentError, register
from policies_app.iac.type_constraints import (
    ANY,
    BOOL,
    NUMBER,
    STRING,
    ConversionError,
    ListType,
    MapType,
    SetType,
    convert,
)
from policies_app.iac.type_unification import has_any
from policies_app.iac.values import UNKNOWN, Sensitive, UnknownValue, is_unknown, mark, unmark


def _to(value: Any, constraint: Any, name: str) -> Any:
    if is_unknown(value):
        # terraform's to* functions take no unknown argument: cty answers a fresh unknown of the
        # type, with nothing of what was known of the argument (not null, length, prefix) kept.
        return UNKNOWN if has_any(constraint) else UnknownValue(constraint)
    try:
        return convert(value, constraint)
    except ConversionError as exc:
        raise ArgumentError(f"cannot convert to {name}: {exc}") from None


@register("tostring", 1, unknowns="handled", result_type=STRING)
def tostring(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        raise ArgumentError(f"cannot convert {_kind(value)} to string")
    return _to(value, STRING, "string")


@register("tonumber", 1, unknowns="handled", result_type=NUMBER)
def tonumber(value: Any) -> Any:
    return _to(value, NUMBER, "number")


@register("tobool", 1, unknowns="handled", result_type=BOOL)
def tobool(value: Any) -> Any:
    return _to(value, BOOL, "bool")


@register("tolist", 1, unknowns="handled", marks="elements", result_type=ListType(ANY))
def tolist(value: Any) -> Any:
    return _to(value, ListType(ANY), "list")


@register("toset", 1, unknowns="handled", result_type=SetType(ANY))
def toset(value: Any) -> Any:
    # Elements holding unknowns stay in the set, after the known ones; its length is then unknown.
    return _to(value, SetType(ANY), "set")


@register("tomap", 1, unknowns="handled", marks="elements", result_type=MapType(ANY))
def tomap(value: Any) -> Any:
    return _to(value, MapType(ANY), "map")


# The evaluator hands these three their argument with its marks (values.Sensitive) untouched.


@register("sensitive", 1, unknowns="handled", marks="own")
def sensitive(value: Any) -> Any:
    return mark(value)


@register("nonsensitive", 1, unknowns="handled", marks="own")
def nonsensitive(value: Any) -> Any:
    # Terraform (since 1.8) accepts a value that is not sensitive, and removes only the value's own
    # mark: the sensitive attributes of an object stay sensitive.
    return unmark(value)[0]


@register("issensitive", 1, unknowns="handled", marks="own")
def issensitive(value: Any) -> Any:
    # Only the value's own mark counts (issensitive({a = var.secret}) is false). An unknown value that
    # is not marked yet might still be: the answer is unknown.
    if value.__class__ is Sensitive:
        return True
    return UNKNOWN if is_unknown(value) else False


def _kind(value: Any) -> str:
    return "map" if isinstance(value, dict) else "list"


@register("ephemeralasnull", 1, unknowns="handled")
def ephemeralasnull(value: Any) -> Any:
    # Ephemeral values are not modelled either: nothing the evaluator holds is ephemeral.
    return value
