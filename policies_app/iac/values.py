"""Terraform values as plain Python data.

Every part of the configuration engine (expressions, functions, type conversion, the graph) agrees on
this representation:

- null -> ``None``; bool -> ``bool``; string -> ``str``;
- number -> ``int`` when the value is whole, else ``float`` (``1/2`` is ``0.5``, ``4/2`` is ``2``);
- list and tuple -> ``list``; map and object -> ``dict`` with string keys; a value converted to a map
  type (a variable's ``map(string)``, ``tomap``) is a ``TfMap``, a dict that knows its element type,
  where terraform's result depends on it (``lookup`` converts its default to the element type);
- set -> ``TfSet`` (elements unique, in Terraform's order: strings lexically, numbers numerically);
- a value not known until apply -> ``UNKNOWN``, or an ``UnknownValue`` refined with what is already
  known of it; a collection may hold unknowns inside it, as in
  Terraform, where a list of two elements, one unknown, still has a known length of two;
- a sensitive value -> ``Sensitive(value)``, a mark around any of the above (``Sensitive(UNKNOWN)`` too).
  As in Terraform, the mark sits where it was put: ``{a = var.secret}`` is a plain dict holding a
  ``Sensitive``; the dict itself is not sensitive. Operators and functions take the mark off their
  operands and put it on their result (see expressions.py); code that inspects a value must
  ``unmark`` it first. A wrapper rather than a side table: a value that holds no mark costs nothing,
  and the chain of 4,000 locals pays one ``type() is`` test per operand.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any


class UnknownValue:
    """A value not known until apply ("known after apply").

    ``UNKNOWN`` is the one of which nothing more is known (cty's DynamicVal). Others are refined, as
    cty refines an unknown: they still say what is already certain of the value to come, its type
    (a type_constraints.TypeConstraint: ``length`` of an unknown tuple is known), that it is not null,
    the bounds of its length as a collection (``cond ? ["a"] : ["b"]`` with an unknown condition is
    an unknown of length 1), a string's known beginning (``"a-${x}"`` starts with "a-": cty's
    StringPrefix, already cut to what no following text can change, see ``safe_known_prefix``), or
    a number's bounds (``cond ? 1 : 2`` lies within [1, 2], so it is less than 3). Every unknown is recognised by its class (``is_unknown``); code that
    only propagates unknowns returns ``UNKNOWN``, which drops the refinements and is never wrong.
    """

    __slots__ = ("type", "not_null", "length", "prefix", "number_range")

    def __init__(
        self,
        type: Any = None,
        not_null: bool = False,
        length: tuple[int, int | None] = (0, None),
        prefix: str = "",
        number_range: tuple[float, float] = (-math.inf, math.inf),
    ):
        self.type = type  # None: any type
        self.not_null = not_null
        self.length = length  # (lower, upper) bounds of a collection's length; upper None: unbounded
        self.prefix = prefix  # what a string certainly starts with ("" when nothing is known)
        self.number_range = number_range  # (lowest, highest) a number may be, both included

    def __repr__(self) -> str:
        return "(known after apply)"

    def __reduce__(self) -> Any:
        if self is UNKNOWN:
            return "UNKNOWN"
        return (UnknownValue, (self.type, self.not_null, self.length, self.prefix, self.number_range))

    def __bool__(self) -> bool:
        raise TypeError("an unknown value has no truth value yet; check is_unknown() first")

    @property
    def known_length(self) -> int | None:
        """The collection's length when its bounds meet, else None."""
        lower, upper = self.length
        return lower if lower == upper else None


UNKNOWN = UnknownValue()


def is_unknown(value: Any) -> bool:
    return value.__class__ is UnknownValue


def definitely_not_null(value: Any) -> bool:
    """Whether the value is certain not to be null (cty's ValueRange.DefinitelyNotNull)."""
    if value.__class__ is Sensitive:
        value = value.value
    if value.__class__ is UnknownValue:
        return value.not_null
    return value is not None


# The characters cty keeps at the end of a known prefix (ctystrings.sequenceMustEndGraphemeCluster):
# delimiters that no following character can combine with.
_PREFIX_DELIMITERS = frozenset("-_:;/\\,.(){}[]|?!~ \t@#$%^&*+\"'")
# HCL keeps at most this many bytes of a template's known beginning.
_TEMPLATE_PREFIX_BYTES = 128


def safe_known_prefix(text: str) -> str:
    """The part of a known beginning that stays the beginning whatever follows it (cty's
    StringPrefix, ctystrings.SafeKnownPrefix): the last character is dropped, because a combining
    mark appended after it would change it ("ab" keeps "a"), unless it is one of the delimiters
    nothing combines with ("a-" stays "a-"). Beyond ASCII we keep only what ends in such a
    delimiter: shorter than cty's grapheme-cluster rules may keep, never longer."""
    text = unicodedata.normalize("NFC", text)
    if not text:
        return ""
    if not text.isascii():
        cut = max((i for i, c in enumerate(text) if c in _PREFIX_DELIMITERS), default=-1)
        if cut < 0 or (cut > 0 and unicodedata.combining(text[cut - 1])):
            return ""
        return text[: cut + 1]
    return text if text[-1] in _PREFIX_DELIMITERS else text[:-1]


def template_prefix(known: str) -> str:
    """The refined prefix of a template whose rendering became unknown after ``known`` (HCL's
    TemplateExpr: at most 128 bytes of it, then cty's StringPrefix)."""
    encoded = known.encode()
    if len(encoded) > _TEMPLATE_PREFIX_BYTES:
        known = encoded[:_TEMPLATE_PREFIX_BYTES].decode(errors="ignore")
    return safe_known_prefix(known)


def known_prefix(value: Any) -> str:
    """What a string value certainly starts with: a known string is its own, a refined unknown its
    prefix, anything else nothing."""
    if value.__class__ is Sensitive:
        value = value.value
    if value.__class__ is UnknownValue:
        return value.prefix
    return value if isinstance(value, str) else ""


def number_bounds(value: Any) -> tuple[float, float]:
    """The bounds of a number: a known one is its own, a refined unknown has its range
    (cty's ValueRange.NumberLowerBound/UpperBound), anything else is unbounded."""
    if value.__class__ is Sensitive:
        value = value.value
    if value.__class__ is UnknownValue:
        return value.number_range
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value, value
    return -math.inf, math.inf


def length_bounds(value: Any) -> tuple[int, int | None]:
    """The bounds of a collection's length: exact for a known one (a set holding unknowns may still
    shrink to one element), a refined unknown's own bounds (cty's ValueRange.LengthLowerBound/Upper)."""
    if value.__class__ is Sensitive:
        value = value.value
    if value.__class__ is UnknownValue:
        return value.length
    if isinstance(value, TfSet) and len(value) > 1 and contains_unknown(value):
        return 1, len(value)
    return (len(value), len(value)) if isinstance(value, (list, tuple, dict)) else (0, None)


class Sensitive:
    """A value marked sensitive (a variable with ``sensitive = true``, ``sensitive()``, what is derived
    from them). Never nested directly: ``mark`` of a marked value returns it unchanged."""

    __slots__ = ("value",)
    # Set once any value of the process is marked. Until then no value can hold a mark, and the deep
    # walks looking for one (every resource's sensitive tree, every function argument) are skipped:
    # a configuration without sensitive values pays nothing for them.
    created = False

    def __init__(self, value: Any) -> None:
        self.value = value
        Sensitive.created = True

    def __repr__(self) -> str:
        return f"Sensitive({self.value!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Sensitive)
            and type(self.value) is type(other.value)
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash(("sensitive", repr(self.value)))


def mark(value: Any) -> Any:
    """The value marked sensitive (once: marks do not nest)."""
    return value if value.__class__ is Sensitive else Sensitive(value)


def unmark(value: Any) -> tuple[Any, bool]:
    """The value without its own (top-level) mark, and whether it had one; marks inside stay."""
    if value.__class__ is Sensitive:
        return value.value, True
    return value, False


def contains_sensitive(value: Any) -> bool:
    """True when the value is sensitive or holds a sensitive value anywhere inside it."""
    if not Sensitive.created:
        return False
    return _contains_sensitive(value)


def _contains_sensitive(value: Any) -> bool:
    if value.__class__ is Sensitive:
        return True
    if isinstance(value, dict):
        return any(_contains_sensitive(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_sensitive(v) for v in value)
    return False


def unmark_deep(value: Any) -> Any:
    """The value with every mark removed, at any depth (the same object when it holds none)."""
    if value.__class__ is Sensitive:
        return unmark_deep(value.value)
    if isinstance(value, dict):
        if not any(contains_sensitive(v) for v in value.values()):
            return value
        result = {k: unmark_deep(v) for k, v in value.items()}
        if isinstance(value, TfMap):
            return TfMap(result, value.element)
        return type(value)(result) if type(value) is not dict else result
    if isinstance(value, (list, tuple)):
        if not any(contains_sensitive(v) for v in value):
            return value
        items = [unmark_deep(v) for v in value]
        return (
            TfSet(items) if isinstance(value, TfSet) else items if isinstance(value, list) else tuple(items)
        )
    return value


def sensitive_tree(value: Any) -> Any:
    """A tree parallel to the value marking what is sensitive, in the shape of a plan's
    ``after_sensitive`` reduced to what leads to a mark: ``True`` where the value is sensitive; for
    collections, only the sensitive parts (``False`` elsewhere in lists, keys omitted in maps);
    ``False`` for anything else."""
    if not Sensitive.created:
        return (
            {}
            if isinstance(value, dict)
            else [False] * len(value)
            if isinstance(value, (list, tuple))
            else False
        )
    if value.__class__ is Sensitive:
        return True
    if isinstance(value, dict):
        return {k: sensitive_tree(v) for k, v in value.items() if contains_sensitive(v)}
    if isinstance(value, (list, tuple)):
        return [sensitive_tree(v) if contains_sensitive(v) else False for v in value]
    return False


def contains_unknown(value: Any) -> bool:
    """True when the value is unknown or holds an unknown anywhere inside it."""
    if value.__class__ is UnknownValue:
        return True
    if value.__class__ is Sensitive:
        return contains_unknown(value.value)
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


class TfMap(dict):
    """A map: a dict whose elements all have one type, ``element`` (a types.TypeConstraint)."""

    def __init__(self, items: Any = (), element: Any = None) -> None:
        super().__init__(items)
        self.element = element

    def __repr__(self) -> str:
        return f"TfMap({dict(self)!r}, {self.element})"


class TfSet(tuple):
    """A Terraform set: unique elements in Terraform's iteration order. Elements holding unknowns come
    last, each kept (two of them may still turn out different), as cty orders them."""

    def __new__(cls, items: Any = ()) -> TfSet:
        unique: list[Any] = []
        pending: list[Any] = []
        for item in items:
            if contains_unknown(item):
                pending.append(item)
            elif item not in unique:
                unique.append(item)
        unique.sort(key=_set_order_key)
        return super().__new__(cls, unique + pending)

    def __repr__(self) -> str:
        return f"TfSet({list(self)!r})"


def to_json_compatible(value: Any) -> Any:
    """The value with sets as lists and unknowns as None, for JSON output (see unknown_tree)."""
    if value.__class__ is UnknownValue:
        return None
    if value.__class__ is Sensitive:
        return to_json_compatible(value.value)
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
    if value.__class__ is UnknownValue:
        return True
    if value.__class__ is Sensitive:
        return unknown_tree(value.value)
    if isinstance(value, dict):
        return {k: unknown_tree(v) for k, v in value.items() if contains_unknown(v)}
    if isinstance(value, (list, tuple)):
        return [unknown_tree(v) if contains_unknown(v) else False for v in value]
    return False
