"""Type conversion functions: tobool tolist tomap tonumber toset tostring sensitive nonsensitive issensitive.

Sensitivity is not modelled by the static evaluator (it matters for what terraform prints, not for the
values a policy sees), so the sensitivity functions are identities.
"""

from __future__ import annotations

from typing import Any

from policies_app.iac.functions.base import ArgumentError, register
from policies_app.iac.types import (
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
from policies_app.iac.values import UNKNOWN, Sensitive, mark, unmark


def _to(value: Any, constraint: Any, name: str) -> Any:
    try:
        return convert(value, constraint)
    except ConversionError as exc:
        raise ArgumentError(f"cannot convert to {name}: {exc}") from None


@register("tostring", 1, handles_unknown=True)
def tostring(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        raise ArgumentError(f"cannot convert {_kind(value)} to string")
    return _to(value, STRING, "string")


@register("tonumber", 1, handles_unknown=True)
def tonumber(value: Any) -> Any:
    return _to(value, NUMBER, "number")


@register("tobool", 1, handles_unknown=True)
def tobool(value: Any) -> Any:
    return _to(value, BOOL, "bool")


@register("tolist", 1, handles_unknown=True)
def tolist(value: Any) -> Any:
    return _to(value, ListType(ANY), "list")


@register("toset", 1, handles_unknown=True)
def toset(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and any(v is UNKNOWN for v in value):
        return UNKNOWN  # two unknown elements might turn out equal: the set's size is not known yet
    return _to(value, SetType(ANY), "set")


@register("tomap", 1, handles_unknown=True)
def tomap(value: Any) -> Any:
    return _to(value, MapType(ANY), "map")


# The evaluator hands these three their argument with its marks (values.Sensitive) untouched.


@register("sensitive", 1, handles_unknown=True)
def sensitive(value: Any) -> Any:
    return mark(value)


@register("nonsensitive", 1, handles_unknown=True)
def nonsensitive(value: Any) -> Any:
    # Terraform (since 1.8) accepts a value that is not sensitive, and removes only the value's own
    # mark: the sensitive attributes of an object stay sensitive.
    return unmark(value)[0]


@register("issensitive", 1, handles_unknown=True)
def issensitive(value: Any) -> Any:
    # Only the value's own mark counts (issensitive({a = var.secret}) is false). An unknown value that
    # is not marked yet might still be: the answer is unknown.
    if value.__class__ is Sensitive:
        return True
    return UNKNOWN if value is UNKNOWN else False


def _kind(value: Any) -> str:
    return "map" if isinstance(value, dict) else "list"


@register("ephemeralasnull", 1, handles_unknown=True)
def ephemeralasnull(value: Any) -> Any:
    # Ephemeral values are not modelled either: nothing the evaluator holds is ephemeral.
    return value
