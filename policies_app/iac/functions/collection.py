"""Collection functions: alltrue anytrue chunklist coalesce coalescelist compact concat contains distinct
element flatten index keys length lookup matchkeys merge one range reverse setintersection setproduct
setsubtract setunion slice sort sum transpose values zipmap.

Why this module is long: one small function per Terraform collection function (30 of them, as
Terraform's documentation groups them), each with Terraform's own edge cases.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from policies_app.iac.functions.base import (
    ArgumentError,
    is_sequence,
    number,
    register,
    want_bool,
    want_int,
    want_mapping,
    want_number,
    want_sequence,
    want_string,
)
from policies_app.iac.functions.strings import graphemes
from policies_app.iac.type_constraints import (
    ANY,
    NUMBER,
    ConversionError,
    ListType,
    MapType,
    ObjectType,
    SetType,
    TupleType,
    convert,
    equal_with_unknowns,
    infer_type,
    unify,
    values_equal,
)
from policies_app.iac.values import UNKNOWN, TfMap, TfSet, UnknownValue, contains_unknown, is_unknown


def _list_not_set(value: Any, what: str = "argument") -> list[Any]:
    if isinstance(value, TfSet):
        raise ArgumentError(f"{what} must be a list or a tuple, not a set (convert it with tolist())")
    return want_sequence(value, what)


def _unified(values: list[Any], what: str = "elements") -> list[Any]:
    """The values converted to one common type, as cty does for a function taking list(any)."""
    common = unify([infer_type(v) for v in values])
    if common is None:
        raise ArgumentError(f"all {what} must have the same type")
    try:
        return [convert(v, common) for v in values]
    except ConversionError as exc:  # pragma: no cover - unify only picks types every value converts to
        raise ArgumentError(str(exc)) from None


@register("length", 1, unknowns="handled", marks="elements")
def length(value: Any) -> Any:
    if is_unknown(value):
        # A tuple's or an object's length is its type's; a collection's may be known by refinement.
        if isinstance(value.type, TupleType):
            return len(value.type.elements)
        if isinstance(value.type, ObjectType):
            return len(value.type.attributes)
        if value.known_length is not None:
            return value.known_length
        if value.prefix:
            # cty's Strlen of a string with a known beginning: at least that beginning's length.
            return UnknownValue(NUMBER, True, number_range=(len(graphemes(value.prefix)), math.inf))
        if value.length == (0, None) and not isinstance(value.type, (ListType, SetType, MapType)):
            return UNKNOWN  # of any type, or a string: no bounds (cty's Length, Strlen)
        # cty's Length of an unknown collection: within its length's bounds.
        low, high = value.length
        return UnknownValue(NUMBER, True, number_range=(low, math.inf if high is None else high))
    if isinstance(value, str):
        return len(graphemes(value))
    if isinstance(value, TfSet) and len(value) > 1 and any(contains_unknown(v) for v in value):
        # Elements holding unknowns may turn out equal to others and merge; a lone element cannot.
        return UNKNOWN
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    if value is None:
        raise ArgumentError("argument must not be null")
    raise ArgumentError(f"argument must be a string, a collection type, or a structural type, got {value!r}")


@register("keys", 1, unknowns="handled", marks="elements")
def keys(value: Any) -> Any:
    if is_unknown(value):
        # An object's attribute names are its type's, known before its values (cty's keys).
        return sorted(value.type.attribute_types) if isinstance(value.type, ObjectType) else UNKNOWN
    return sorted(want_mapping(value))


@register("values", 1, unknowns="handled", marks="elements")
def values(value: Any) -> Any:
    if is_unknown(value):
        return UNKNOWN
    mapping = want_mapping(value)
    return [mapping[k] for k in sorted(mapping)]


@register("concat", 1, None, unknowns="handled", marks="elements")
def concat(*lists: Any) -> Any:
    if any(is_unknown(v) for v in lists):
        return UNKNOWN
    result: list[Any] = []
    for position, items in enumerate(lists):
        result.extend(_list_not_set(items, f"argument {position + 1}"))
    return result


@register("merge", 0, None, unknowns="handled", marks="elements")
def merge(*maps: Any) -> Any:
    if any(is_unknown(v) for v in maps):
        return UNKNOWN
    result: dict[str, Any] = {}
    for position, mapping in enumerate(maps):
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            raise ArgumentError(
                f"arguments must be maps or objects, got {mapping!r} as argument {position + 1}"
            )
        result.update(mapping)
    return dict(sorted(result.items()))  # maps iterate in key order in terraform; keep that order here too


@register("element", 2, unknowns="handled", marks="elements")
def element(items: Any, index: Any) -> Any:
    if is_unknown(items) or is_unknown(index):
        return UNKNOWN
    sequence = _list_not_set(items, "the first argument")
    i = want_int(index, "the index")
    if not sequence:
        raise ArgumentError("cannot use element function with an empty list")
    # Go's remainder keeps the dividend's sign: -1 wraps to 0 in a one-element list, but fails otherwise.
    position = abs(i) % len(sequence) * (1 if i >= 0 else -1)
    if position < 0:
        raise ArgumentError("cannot use element function with a negative index")
    return sequence[position]


@register("lookup", 2, 3, unknowns="handled", marks="elements")
def lookup(mapping: Any, key: Any, *default: Any) -> Any:
    if is_unknown(mapping) or is_unknown(key):
        return UNKNOWN
    table = want_mapping(mapping, "the first argument")
    name = want_string(key, "the key")
    if name in table:
        return table[name]
    if default:
        if isinstance(table, TfMap) and table.element is not None:
            # A map's lookup has the map's element type: the default is converted to it.
            try:
                return convert(default[0], table.element)
            except ConversionError:
                raise ArgumentError("the default value must have the same type as the map elements") from None
        return default[0]
    raise ArgumentError(f'the given key "{name}" does not exist in the map, and no default was given')


@register("coalesce", 1, None, unknowns="handled", wants_declared_types=True)
def coalesce(*args: Any, declared_types: list[Any]) -> Any:
    # The result has the type all arguments unify to, a typed null's included: coalesce(var.port,
    # 5432) with var.port a null string is "5432".
    inferred = [infer_type(a) for a in args if not is_unknown(a) and a is not None]
    common = unify(inferred + [t for t in declared_types if t is not None and t is not ANY])
    if common is None:
        raise ArgumentError("all arguments must have the same type")
    for arg in args:
        if is_unknown(arg):
            return UNKNOWN
        if arg is None:
            continue
        try:
            converted = convert(arg, common)
        except ConversionError as exc:
            raise ArgumentError(str(exc)) from None
        if converted != "":
            return converted
    raise ArgumentError("no non-null, non-empty-string arguments")


@register("coalescelist", 1, None, unknowns="handled", wants_declared_types=True)
def coalescelist(*lists: Any, declared_types: list[Any]) -> Any:
    for position, items in enumerate(lists):
        if is_unknown(items):
            return UNKNOWN
        if items is None and declared_types[position] is not ANY:
            continue  # a list-typed null, such as a module's optional list attribute
        if items is None:
            raise ArgumentError(f"argument {position + 1} must not be null")
        if not is_sequence(items) or isinstance(items, TfSet):
            raise ArgumentError(f"argument {position + 1} must be a list or a tuple")
        if items:
            return list(items)
    raise ArgumentError("no non-null arguments")


@register("compact", 1)
def compact(items: Any) -> list[str]:
    return [want_string(v) for v in want_sequence(items) if v is not None and v != ""]


@register("contains", 2, unknowns="handled")
def contains(items: Any, value: Any) -> Any:
    # Found is found, whatever else the list holds; not found is unknown while some element is.
    if is_unknown(items) or is_unknown(value):
        return UNKNOWN
    if value is None:
        raise ArgumentError("the value to look for must not be null")
    undecided = False
    for item in want_sequence(items, "the first argument"):
        equal = equal_with_unknowns(item, value)
        if equal is True:
            return True
        undecided = undecided or is_unknown(equal)
    return UNKNOWN if undecided else False


@register("distinct", 1)
def distinct(items: Any) -> list[Any]:
    result: list[Any] = []
    for item in _unified(want_sequence(items)):
        if not any(values_equal(item, seen) for seen in result):
            result.append(item)
    return result


@register("flatten", 1, unknowns="handled", marks="elements")
def flatten(items: Any) -> Any:
    # Element by element: what is not a list is kept as it is, unknowns inside it included. An unknown
    # where a list could be leaves the length of the result unknown.
    result: list[Any] = []

    def walk(values: list[Any]) -> bool:
        for v in values:
            if is_unknown(v):
                return False
            if is_sequence(v):
                if not walk(list(v)):
                    return False
            else:
                result.append(v)
        return True

    if is_unknown(items):
        return UNKNOWN
    return result if walk(want_sequence(items)) else UNKNOWN


@register("index", 2)
def index(items: Any, value: Any) -> int:
    for position, item in enumerate(_list_not_set(items, "the first argument")):
        if values_equal(item, value):
            return position
    raise ArgumentError("item not found")


@register("matchkeys", 3)
def matchkeys(values_: Any, keys_: Any, searchset: Any) -> list[Any]:
    value_list, key_list = want_sequence(values_), want_sequence(keys_)
    wanted = want_sequence(searchset)
    if len(value_list) != len(key_list):
        raise ArgumentError("length of keys and values should be equal")
    return [v for v, k in zip(value_list, key_list, strict=True) if any(values_equal(k, s) for s in wanted)]


@register("one", 1, unknowns="handled", marks="elements")
def one(items: Any) -> Any:
    # Only an unknown collection makes the result unknown: a known one's element is the result with
    # whatever it holds unknown (one([{a = 1, b = unknown}]) still has a = 1). A set whose elements
    # hold unknowns may still merge them, so the length of a larger one is not known yet.
    if is_unknown(items) or (isinstance(items, TfSet) and len(items) > 1 and contains_unknown(items)):
        return UNKNOWN
    sequence = want_sequence(items)
    if len(sequence) > 1:
        raise ArgumentError("must be a list, set, or tuple value with either zero or one elements")
    return sequence[0] if sequence else None


_RANGE_LIMIT = 1024


@register("range", 1, 3)
def range_(*args: Any) -> list[int | float]:
    numbers = [want_number(a) for a in args]
    if len(numbers) == 1:
        start, limit = 0, numbers[0]
        step = 1 if limit >= 0 else -1
    elif len(numbers) == 2:
        start, limit = numbers
        step = 1 if limit >= start else -1
    else:
        start, limit, step = numbers
    if step == 0:
        raise ArgumentError("step must not be zero")
    if (start < limit and step < 0) or (start > limit and step > 0):
        raise ArgumentError("step must be negative when start is greater than limit, and positive otherwise")
    result: list[int | float] = []
    current = start
    while (current < limit) if step > 0 else (current > limit):
        if len(result) >= _RANGE_LIMIT:
            raise ArgumentError(
                f"more than {_RANGE_LIMIT} values were generated; either decrease the "
                "difference between start and end or use a smaller step"
            )
        result.append(number(current))
        current += step
    return result


@register("reverse", 1, unknowns="handled", marks="elements")
def reverse(items: Any) -> Any:
    if is_unknown(items):
        return UNKNOWN
    return list(reversed(want_sequence(items)))


@register("slice", 3, unknowns="handled", marks="elements")
def slice_(items: Any, start: Any, end: Any) -> Any:
    if is_unknown(items) or contains_unknown(start) or contains_unknown(end):
        return UNKNOWN
    sequence = _list_not_set(items, "the first argument")
    first, last = want_int(start, "start_index"), want_int(end, "end_index")
    if first < 0:
        raise ArgumentError("the starting index must be non-negative")
    if last > len(sequence):
        raise ArgumentError("end index must not be greater than the length of the list")
    if first > last:
        raise ArgumentError("the start index must not be greater than the end index")
    return sequence[first:last]


@register("chunklist", 2, unknowns="handled", marks="elements")
def chunklist(items: Any, size: Any) -> Any:
    if is_unknown(items) or contains_unknown(size):
        return UNKNOWN
    sequence = want_sequence(items)
    n = want_int(size, "the size")
    if n < 0:
        raise ArgumentError("the size argument must be positive")
    if n == 0:
        return [sequence]
    return [sequence[i : i + n] for i in range(0, len(sequence), n)]


@register("sort", 1, unknowns="handled")
def sort(items: Any) -> Any:
    if is_unknown(items):
        return UNKNOWN
    sequence = want_sequence(items)
    if any(contains_unknown(item) for item in sequence):
        return [UNKNOWN] * len(sequence)  # the order is not known yet, the length is
    strings: list[str] = []
    for i, item in enumerate(sequence):
        if item is None:
            raise ArgumentError(f"given list element {i} is null; a null string cannot be sorted")
        strings.append(want_string(item, f"element {i}"))
    return sorted(strings)


@register("sum", 1)
def sum_(items: Any) -> int | float:
    sequence = want_sequence(items)
    if not sequence:
        raise ArgumentError("cannot sum an empty list")
    total: int | float = 0
    for i, item in enumerate(sequence):
        if item is None:
            raise ArgumentError(f"argument must be list, set, or tuple of number values; element {i} is null")
        total += want_number(item, f"element {i}")
    return number(total)


def _bool_elements(items: Any) -> list[Any]:
    return [v if v is None or is_unknown(v) else want_bool(v) for v in want_sequence(items)]


@register("alltrue", 1, unknowns="handled")
def alltrue(items: Any) -> Any:
    if is_unknown(items):
        return UNKNOWN
    flags = _bool_elements(items)
    if any(v is False or v is None for v in flags):
        return False
    return UNKNOWN if any(is_unknown(v) for v in flags) else True


@register("anytrue", 1, unknowns="handled")
def anytrue(items: Any) -> Any:
    if is_unknown(items):
        return UNKNOWN
    flags = _bool_elements(items)
    if any(v is True for v in flags):
        return True
    return UNKNOWN if any(is_unknown(v) for v in flags) else False


@register("transpose", 1)
def transpose(mapping: Any) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    table = want_mapping(mapping)
    for key in sorted(table):
        for value in want_sequence(table[key], f'the value of "{key}"'):
            result.setdefault(want_string(value), []).append(key)
    return dict(sorted(result.items()))


@register("zipmap", 2, unknowns="handled", marks="elements")
def zipmap(keys_: Any, values_: Any) -> Any:
    if is_unknown(keys_) or is_unknown(values_) or contains_unknown(keys_):
        return UNKNOWN
    key_list, value_list = want_sequence(keys_), want_sequence(values_)
    if len(key_list) != len(value_list):
        raise ArgumentError(
            f"number of keys ({len(key_list)}) does not match number of values ({len(value_list)})"
        )
    result = {want_string(k): v for k, v in zip(key_list, value_list, strict=True)}
    return dict(sorted(result.items()))


# --- sets ----------------------------------------------------------------------------------------------------


def _as_sets(args: tuple[Any, ...]) -> list[TfSet]:
    collections = [want_sequence(a, f"argument {i + 1}") for i, a in enumerate(args)]
    common = unify([infer_type(v) for items in collections for v in items])
    if common is None:
        raise ArgumentError("all sets must have elements of the same type")
    return [convert(items, SetType(common if common is not None else ANY)) for items in collections]


@register("setunion", 1, None, unknowns="handled")
def setunion(*args: Any) -> Any:
    if any(is_unknown(a) for a in args):
        return UNKNOWN
    return TfSet(v for s in _as_sets(args) for v in s)


@register("setintersection", 1, None)
def setintersection(*args: Any) -> TfSet:
    sets = _as_sets(args)
    return TfSet(v for v in sets[0] if all(any(values_equal(v, w) for w in other) for other in sets[1:]))


@register("setsubtract", 2)
def setsubtract(a: Any, b: Any) -> TfSet:
    first, second = _as_sets((a, b))
    return TfSet(v for v in first if not any(values_equal(v, w) for w in second))


_PRODUCT_LIMIT = 1_000_000  # terraform has no limit; an evaluation service needs one


@register("setproduct", 1, None, unknowns="handled", marks="elements")
def setproduct(*args: Any) -> Any:
    if any(is_unknown(a) for a in args):
        return UNKNOWN
    if any(isinstance(a, TfSet) and contains_unknown(a) for a in args):
        return UNKNOWN  # the size of a set holding unknowns is not known yet
    if len(args) < 2:
        raise ArgumentError("at least two arguments are required")
    # A tuple's elements are converted to the one type they unify to, as cty does: routes written as
    # objects of different attributes become maps of strings.
    collections = [
        want_sequence(a, f"argument {i + 1}")
        if isinstance(a, TfSet)
        else _unified(want_sequence(a, f"argument {i + 1}"))
        for i, a in enumerate(args)
    ]
    size = 1
    for items in collections:
        size *= len(items)
    if size > _PRODUCT_LIMIT:
        raise ArgumentError(
            f"the product would have {size} elements, more than the {_PRODUCT_LIMIT} we produce"
        )
    product = [list(combination) for combination in itertools.product(*collections)]
    return TfSet(product) if all(isinstance(a, TfSet) for a in args) else product
