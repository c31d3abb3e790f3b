"""Terraform's types as values of their own (cty's types): ``list(string)`` is ``ListType(STRING)``.

type_constraints.py reads them from type expressions and converts values to them;
type_unification.py finds the type several values share.

The classes are records (records.py), not frozen dataclasses: they behave as those did.
"""

from __future__ import annotations

from typing import Any

from policies_app.iac.records import FrozenRecord

_set = object.__setattr__


class TypeConstraint(FrozenRecord):
    """Base of every type; ``str(t)`` gives the HCL spelling, used in error messages."""

    __slots__ = ()


class PrimitiveType(TypeConstraint):
    """``string``, ``number`` or ``bool``."""

    name: str  # "string", "number" or "bool"

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        _set(self, "name", name)

    def __str__(self) -> str:
        return self.name


class AnyType(TypeConstraint):
    """``any``: the type is decided by the value (cty's DynamicPseudoType)."""

    __slots__ = ()

    def __str__(self) -> str:
        return "any"


class ListType(TypeConstraint):
    """``list(element)``."""

    element: TypeConstraint

    __slots__ = ("element",)

    def __init__(self, element: TypeConstraint) -> None:
        _set(self, "element", element)

    def __str__(self) -> str:
        return f"list({self.element})"


class SetType(TypeConstraint):
    """``set(element)``."""

    element: TypeConstraint

    __slots__ = ("element",)

    def __init__(self, element: TypeConstraint) -> None:
        _set(self, "element", element)

    def __str__(self) -> str:
        return f"set({self.element})"


class MapType(TypeConstraint):
    """``map(element)``."""

    element: TypeConstraint

    __slots__ = ("element",)

    def __init__(self, element: TypeConstraint) -> None:
        _set(self, "element", element)

    def __str__(self) -> str:
        return f"map({self.element})"


class TupleType(TypeConstraint):
    """``tuple([elements...])``."""

    elements: tuple[TypeConstraint, ...]

    __slots__ = ("elements",)

    def __init__(self, elements: tuple[TypeConstraint, ...]) -> None:
        _set(self, "elements", elements)

    def __str__(self) -> str:
        return "tuple([" + ", ".join(str(e) for e in self.elements) + "])"


class OptionalAttribute(FrozenRecord):
    """How an ``optional(...)`` attribute is filled when absent or null; ``has_default`` tells a
    missing default apart from an explicit ``null`` default (both give null)."""

    has_default: bool
    default: Any  # may be a list or dict: kept out of the hash

    __slots__ = ("has_default", "default")
    _hashed = ("has_default",)

    def __init__(self, has_default: bool = False, default: Any = None) -> None:
        _set(self, "has_default", has_default)
        _set(self, "default", default)


class ObjectType(TypeConstraint):
    """``object({attributes...})``, optional attributes with their defaults."""

    attributes: tuple[tuple[str, TypeConstraint], ...]
    optional: tuple[tuple[str, OptionalAttribute], ...]

    __slots__ = ("attributes", "optional")

    def __init__(
        self,
        attributes: tuple[tuple[str, TypeConstraint], ...],
        optional: tuple[tuple[str, OptionalAttribute], ...] = (),
    ) -> None:
        _set(self, "attributes", attributes)
        _set(self, "optional", optional)

    @property
    def attribute_types(self) -> dict[str, TypeConstraint]:
        return dict(self.attributes)

    @property
    def optional_attributes(self) -> dict[str, OptionalAttribute]:
        return dict(self.optional)

    def __str__(self) -> str:
        optional = self.optional_attributes

        def spelled(name: str, t: TypeConstraint) -> str:
            if name not in optional:
                return str(t)
            marker = optional[name]
            return f"optional({t}, {marker.default!r})" if marker.has_default else f"optional({t})"

        return "object({" + ", ".join(f"{k}={spelled(k, v)}" for k, v in self.attributes) + "})"


STRING = PrimitiveType("string")
NUMBER = PrimitiveType("number")
BOOL = PrimitiveType("bool")
ANY = AnyType()


def object_type(attributes: dict[str, TypeConstraint], optional: dict[str, OptionalAttribute] | None = None):
    return ObjectType(tuple(sorted(attributes.items())), tuple(sorted((optional or {}).items())))
