"""The type of a value, and the one type several values share (cty's ``convert.UnifyUnsafe``).

Terraform unifies types wherever one result may come from several values: the two results of a
conditional, the arguments of ``coalesce``, the elements of a tuple converted to ``list(any)``. The
rules are cty's (convert/unify.go, sort_types.go, compare_types.go and which conversions exist,
conversion.go), with one difference: our nulls and unknowns are mostly untyped where terraform's carry a
type, so ``any`` among the given types stands for "a type we do not know" and is left out, where cty
would read it as DynamicPseudoType and give up on a common type (``[{a = 1}, unknown]`` unifies to the
object's type here; in terraform, to whatever type that unknown has).

Why this module is long: it is one set of cty's rules, the common type and what an unknown keeps of
its refinements when its type is decided (a conditional's result, a conversion); split, each half
would need the other's private helpers.
"""

from __future__ import annotations

import math
from typing import Any

from policies_app.iac.type_kinds import (
    ANY,
    BOOL,
    NUMBER,
    STRING,
    AnyType,
    ListType,
    MapType,
    ObjectType,
    PrimitiveType,
    SetType,
    TupleType,
    TypeConstraint,
    object_type,
)
from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfMap,
    TfSet,
    UnknownValue,
    definitely_not_null,
    length_bounds,
    number_bounds,
)


def infer_type(value: Any) -> TypeConstraint:
    """The most specific type of a value: a known value's own, an unknown's refined type; a null and a
    plain unknown give ``any``."""
    if value is None:
        return ANY
    if value.__class__ is UnknownValue:
        return value.type or ANY
    if value.__class__ is Sensitive:
        return infer_type(value.value)
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, TfSet):
        element = unify([infer_type(v) for v in value])
        return SetType(element if element is not None else ANY)
    if isinstance(value, TfMap):
        element = value.element
        if element is None or isinstance(element, AnyType):
            element = unify([infer_type(v) for v in value.values()])
        return MapType(element if element is not None else ANY)
    if isinstance(value, (list, tuple)):
        return TupleType(tuple(infer_type(v) for v in value))
    if isinstance(value, dict):
        return object_type({k: infer_type(v) for k, v in value.items()})
    return ANY


def unknown_of_either(first: Any, second: Any) -> UnknownValue:
    """What HCL knows of a conditional's result before its condition is known: an unknown of the type
    both results unify to (any when either is itself an unknown of any type), not null when neither
    is, and, when both are collections of one type, no shorter than the shorter and no longer than the
    longer (``cond ? ["a"] : ["b"]`` is a tuple of one element either way, so its length is known).
    A primitive result is refined by its type and not-null only; any other stays ``UNKNOWN``."""
    types = [infer_type(first), infer_type(second)]
    dynamic = any(
        isinstance(t, AnyType) and v is not None for t, v in zip(types, (first, second), strict=True)
    )
    result_type = None if dynamic else unify(types)
    not_null = definitely_not_null(first) and definitely_not_null(second)
    if not isinstance(result_type, (ListType, SetType, MapType, TupleType, ObjectType)):
        # A primitive result is known to be of its type and, when neither result can be null, not
        # null: `cond ? "a" : "b"` != null is true. HCL carries no string prefix through a
        # conditional, and a number's range is not modelled: unknown of any type stays the plain one.
        if result_type == NUMBER and all(_is_number_typed(v) for v in (first, second)):
            return _number_of_either(first, second, not_null)
        if isinstance(result_type, PrimitiveType):
            return UnknownValue(result_type, not_null)
        return UNKNOWN
    length: tuple[int, int | None] = (0, None)
    if isinstance(types[0], (ListType, SetType, MapType)) and types[0] == types[1]:
        (first_low, first_high), (second_low, second_high) = length_bounds(first), length_bounds(second)
        high = None if first_high is None or second_high is None else max(first_high, second_high)
        length = (min(first_low, second_low), high)
    return UnknownValue(result_type, not_null, length)


def _is_number_typed(value: Any) -> bool:
    if value.__class__ is UnknownValue:
        return value.type == NUMBER
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_of_either(first: Any, second: Any, not_null: bool) -> Any:
    """HCL's conditional over two numbers with an unknown condition: an unknown within the bounds of
    both, and the number itself when the bounds close on one (``cond ? 0 : 0`` is 0, the common
    ``count = enabled ? length(x) : 0`` with ``x`` empty)."""
    (first_low, first_high), (second_low, second_high) = number_bounds(first), number_bounds(second)
    low, high = min(first_low, second_low), max(first_high, second_high)
    if low == high and math.isfinite(low):
        return first if first.__class__ is not UnknownValue else second
    return UnknownValue(NUMBER, not_null, number_range=(low, high))


def converted_unknown(value: UnknownValue, target: TypeConstraint) -> UnknownValue:
    """An unknown converted to a type (cty's prepareUnknownResult): it has that type, and a collection
    made of a tuple or an object keeps what is known of its length."""
    source = value.type
    length: tuple[int, int | None] = (0, None)
    if isinstance(source, ObjectType) and isinstance(target, MapType):
        length = (len(source.attributes), len(source.attributes))
    elif isinstance(source, TupleType) and isinstance(target, ListType):
        length = (len(source.elements), len(source.elements))
    elif isinstance(source, TupleType) and isinstance(target, SetType):
        count = len(source.elements)
        length = (count, count) if count <= 1 else (1, count)  # equal elements merge
    elif isinstance(source, (ListType, SetType, MapType)) and isinstance(
        target, (ListType, SetType, MapType)
    ):
        low, high = value.length
        length = (min(low, 1) if isinstance(target, SetType) else low, high)
    prefix = value.prefix if target == STRING else ""  # a string's beginning survives only as a string
    kept = value.number_range if target == NUMBER and source == NUMBER else (-math.inf, math.inf)
    return UnknownValue(None if has_any(target) else target, value.not_null, length, prefix, kept)


def has_any(t: TypeConstraint) -> bool:
    """Whether ``any`` appears anywhere in the type (its value decides the rest)."""
    if isinstance(t, AnyType):
        return True
    if isinstance(t, (ListType, SetType, MapType)):
        return has_any(t.element)
    if isinstance(t, TupleType):
        return any(has_any(e) for e in t.elements)
    if isinstance(t, ObjectType):
        return any(has_any(a) for _, a in t.attributes)
    return False


def unify(types: list[TypeConstraint]) -> TypeConstraint | None:
    """The type every given type converts to, as cty chooses it, or None when there is none; ``any``
    when nothing but ``any`` (or nothing) is given."""
    return _unify(types) if types else ANY


def _unify(types: list[TypeConstraint]) -> TypeConstraint | None:
    if not types:  # cty's unify of no types at all (an empty tuple's elements): none
        return None
    concrete = [t for t in types if not isinstance(t, AnyType)]
    if not concrete:
        return ANY
    first = concrete[0]
    if all(t == first for t in concrete):
        return first
    count = len(concrete)
    maps = sum(isinstance(t, MapType) for t in concrete)
    lists = sum(isinstance(t, ListType) for t in concrete)
    sets = sum(isinstance(t, SetType) for t in concrete)
    objects = sum(isinstance(t, ObjectType) for t in concrete)
    tuples = sum(isinstance(t, TupleType) for t in concrete)
    # Types all of one structural kind may share a type none of them is; tried before the general
    # preference order, as cty does (only the first matching case is tried).
    if maps and maps == count:
        return _collection(MapType, concrete)
    if maps and maps + objects == count:
        unified = _objects_as_maps(concrete)
        if isinstance(unified, MapType):
            return unified
    elif lists and lists == count:
        return _collection(ListType, concrete)
    elif lists and lists + tuples == count:
        unified = _tuples_as_list(concrete)
        if isinstance(unified, ListType):
            return unified
    elif sets and sets == count:
        return _collection(SetType, concrete)
    elif objects and objects == count:
        return _objects(concrete)
    elif tuples and tuples == count:
        return _tuples(concrete)
    elif objects and tuples:
        return None
    for wanted in _preference_order(concrete):
        if all(t == wanted or convertible(t, wanted) for t in concrete):
            return wanted
    return None


def _all_convert(types: list[TypeConstraint], target: TypeConstraint) -> bool:
    return all(t == target or convertible(t, target) for t in types)


def _collection(kind: type, types: list[TypeConstraint]) -> TypeConstraint | None:
    element = _unify([t.element for t in types])  # type: ignore[attr-defined]
    if element is None:
        return None
    result = kind(element)
    return result if _all_convert(types, result) else None


def _objects_as_maps(types: list[TypeConstraint]) -> TypeConstraint | None:
    """Objects often hold map data: the objects unified as a map, then with the maps."""
    as_map = _objects_to_map([t for t in types if isinstance(t, ObjectType)])
    if not isinstance(as_map, MapType):
        return None
    unified = _unify([as_map if isinstance(t, ObjectType) else t for t in types])
    return unified if isinstance(unified, MapType) else None


def _tuples_as_list(types: list[TypeConstraint]) -> TypeConstraint | None:
    """Tuples are often lists in disguise: the tuples unified as a list, then with the lists."""
    as_list = _tuples_to_list([t for t in types if isinstance(t, TupleType)])
    if not isinstance(as_list, ListType):
        return None
    unified = _unify([as_list if isinstance(t, TupleType) else t for t in types])
    return unified if isinstance(unified, ListType) else None


def _objects(types: list[ObjectType]) -> TypeConstraint | None:
    """Objects with the same attribute names unify attribute by attribute; others (or when that
    fails to convert) as a map of all their attribute types."""
    names = set(types[0].attribute_types)
    if any(set(t.attribute_types) != names for t in types[1:]):
        return _objects_to_map(types)
    attributes = {}
    for name in names:
        attribute = _unify([t.attribute_types[name] for t in types])
        if attribute is None:
            return None
        attributes[name] = attribute
    result = object_type(attributes)
    return result if _all_convert(types, result) else _objects_to_map(types)


def _objects_to_map(types: list[ObjectType]) -> TypeConstraint | None:
    element = _unify([a for t in types for _, a in t.attributes])
    if element is None:
        return None
    result = MapType(element)
    return result if _all_convert(types, result) else None


def _tuples(types: list[TupleType]) -> TypeConstraint | None:
    """Tuples of one length unify element by element; others (or when that fails to convert) as a
    list of all their element types."""
    if len({len(t.elements) for t in types}) != 1:
        return _tuples_to_list(types)
    elements = []
    for column in zip(*(t.elements for t in types), strict=True):
        element = _unify(list(column))
        if element is None:
            return None
        elements.append(element)
    result = TupleType(tuple(elements))
    return result if _all_convert(types, result) else _tuples_to_list(types)


def _tuples_to_list(types: list[TupleType]) -> TypeConstraint | None:
    element = _unify([e for t in types for e in t.elements])
    if element is None:
        return None
    result = ListType(element)
    return result if _all_convert(types, result) else None


# --- which conversions exist (cty's getConversionKnown, unsafe: as convert.Convert applies them) --------

_PRIMITIVE_CONVERSIONS = {
    ("number", "string"),
    ("bool", "string"),
    ("string", "number"),  # unsafe: only when the string holds a number
    ("string", "bool"),  # unsafe: only "true" or "false"
}


def convertible(source: TypeConstraint, target: TypeConstraint) -> bool:
    """Whether a value of type ``source`` may convert to ``target`` (it still may fail for a
    particular value: "a" to a number, a map without a key the object type requires)."""
    if isinstance(target, AnyType) or isinstance(source, AnyType) or source == target:
        return True
    if isinstance(source, PrimitiveType) and isinstance(target, PrimitiveType):
        return (source.name, target.name) in _PRIMITIVE_CONVERSIONS
    if isinstance(target, ObjectType) and isinstance(source, ObjectType):
        present, optional = source.attribute_types, target.optional_attributes
        return all(
            convertible(present[name], wanted) if name in present else name in optional
            for name, wanted in target.attributes
        )
    if isinstance(target, TupleType) and isinstance(source, TupleType):
        return len(source.elements) == len(target.elements) and all(
            convertible(s, t) for s, t in zip(source.elements, target.elements, strict=True)
        )
    if isinstance(target, (ListType, SetType)) and isinstance(source, (ListType, SetType)):
        return convertible(source.element, target.element)
    if isinstance(target, MapType) and isinstance(source, MapType):
        return convertible(source.element, target.element)
    if isinstance(target, (ListType, SetType)) and isinstance(source, TupleType):
        return _elements_convert(list(source.elements), target.element)
    if isinstance(target, MapType) and isinstance(source, ObjectType):
        return _elements_convert([a for _, a in source.attributes], target.element)
    if isinstance(target, ObjectType) and isinstance(source, MapType):
        optional = target.optional_attributes
        return all(
            convertible(source.element, wanted) or name in optional for name, wanted in target.attributes
        )
    return False


def _elements_convert(elements: list[TypeConstraint], element: TypeConstraint) -> bool:
    """A tuple's elements (an object's attributes) to one collection element type; ``any`` asks for
    the type they unify to."""
    if not elements:
        return True
    if isinstance(element, AnyType):
        element = _unify(elements)
        if element is None:
            return False
    return all(convertible(e, element) for e in elements)


# --- cty's preference among candidate types (sort_types.go, compare_types.go) --------------------------


def _preference_order(types: list[TypeConstraint]) -> list[TypeConstraint]:
    """The types ordered so that earlier ones are preferable as the result (a topological sort over
    "a is preferred to b"; types with no preference between them keep their order)."""
    count = len(types)
    edges: list[list[int]] = [[] for _ in types]
    for i in range(count - 1):
        for j in range(i + 1, count):
            comparison = _compare(types[i], types[j])
            if comparison < 0:
                edges[i].append(j)
            elif comparison > 0:
                edges[j].append(i)
    in_degree = [0] * count
    for outgoing in edges:
        for j in outgoing:
            in_degree[j] += 1
    queue = [i for i in range(count) if in_degree[i] == 0]
    order = []
    while queue:
        i = queue.pop(0)
        order.append(types[i])
        for j in edges[i]:
            in_degree[j] -= 1
            if in_degree[j] == 0:
                queue.append(j)
    return order


def _compare(a: TypeConstraint, b: TypeConstraint) -> int:
    """-1 when ``a`` is preferred as a unified type (every ``b`` converts to it), 1 when ``b`` is, 0
    when neither."""
    if isinstance(a, AnyType) or isinstance(b, AnyType):  # any comes last
        if not isinstance(a, AnyType):
            return -1
        return 1 if not isinstance(b, AnyType) else 0
    if isinstance(a, PrimitiveType) and isinstance(b, PrimitiveType):
        if STRING in (a, b):
            return 0 if a == b else (-1 if a == STRING else 1)
    for kind in (ListType, SetType, MapType):
        if isinstance(a, kind) and isinstance(b, kind):
            return _compare(a.element, b.element)  # type: ignore[attr-defined]
    swap = 1
    if (
        (isinstance(a, TupleType) and isinstance(b, ListType))
        or (isinstance(a, ObjectType) and isinstance(b, MapType))
        or (isinstance(a, SetType) and isinstance(b, (TupleType, ListType)))
    ):
        a, b, swap = b, a, -1
    if isinstance(b, SetType) and isinstance(a, (TupleType, ListType)):
        return -1 * swap
    if isinstance(a, ListType) and isinstance(b, TupleType):
        return -1 * swap
    if isinstance(a, MapType) and isinstance(b, ObjectType):
        return -1 * swap
    if isinstance(a, ObjectType) and isinstance(b, ObjectType):
        left, right = a.attribute_types, b.attribute_types
        if left.keys() != right.keys():
            return 0
        return _preferred_throughout([_compare(left[k], right[k]) for k in left], swap)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        if len(a.elements) != len(b.elements):
            return 0
        return _preferred_throughout(
            [_compare(x, y) for x, y in zip(a.elements, b.elements, strict=True)], swap
        )
    return 0


def _preferred_throughout(comparisons: list[int], swap: int) -> int:
    a_preferred, b_preferred = -1 in comparisons, 1 in comparisons
    if a_preferred == b_preferred:
        return 0
    return (-1 if a_preferred else 1) * swap
