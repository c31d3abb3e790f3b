"""Terraform values as plain Python data.

Every part of the configuration engine (expressions, functions, type conversion, the graph) agrees on
this representation:

- null -> ``None``; bool -> ``bool``; string -> ``str``;
- number -> ``int`` when the value is whole, else ``float`` (``1/2`` is ``0.5``, ``4/2`` is ``2``);
- list and tuple -> ``list``; map and object -> ``dict`` with string keys;
- set -> ``TfSet`` (elements unique, in Terraform's order: strings lexically, numbers numerically);
- a value not known until apply -> ``UNKNOWN``; a collection may hold ``UNKNOWN`` inside it, as in
  Terraform, where a list of two elements, one unknown, still has a known length of two.
"""

from __future__ import annotations

from typing import Any


class UnknownValue:
    """The single value that stands for "known after apply"."""

    _instance: UnknownValue | None = None

    def __new__(cls) -> UnknownValue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "(known after apply)"

    def __reduce__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("an unknown value has no truth value yet; check is_unknown() first")


UNKNOWN = UnknownValue()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def contains_unknown(value: Any) -> bool:
    """True when the value is unknown or holds an unknown anywhere inside it."""
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_unknown(v) for v in value)
    return False


def _set_order_key(value: Any) -> tuple:
    if isinstance(value, bool):
        return (0, value)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))


class TfSet(tuple):
    """A Terraform set: unique elements in Terraform's iteration order."""

    def __new__(cls, items: Any = ()) -> TfSet:
        unique: list[Any] = []
        for item in items:
            if item not in unique:
                unique.append(item)
        if not any(v is UNKNOWN for v in unique):
            unique.sort(key=_set_order_key)
        return super().__new__(cls, unique)

    def __repr__(self) -> str:
        return f"TfSet({list(self)!r})"


def to_json_compatible(value: Any) -> Any:
    """The value with sets as lists and unknowns as None, for JSON output (see unknown_tree)."""
    if value is UNKNOWN:
        return None
    if isinstance(value, dict):
        return {k: to_json_compatible(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_compatible(v) for v in value]
    return value


def unknown_tree(value: Any) -> Any:
    """A tree parallel to the value marking what is unknown, shaped as a plan's ``after_unknown``.

    ``True`` where the value is wholly unknown; for collections, the same shape with only the unknown
    parts marked (``False`` elsewhere in lists, keys omitted in maps); ``False`` for a known leaf.
    """
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return {k: unknown_tree(v) for k, v in value.items() if contains_unknown(v)}
    if isinstance(value, (list, tuple)):
        return [unknown_tree(v) if contains_unknown(v) else False for v in value]
    return False
