"""Terraform's types as values of their own (cty's types): ``list(string)`` is ``ListType(STRING)``.

type_constraints.py reads them from type expressions and converts values to them;
type_unification.py finds the type several values share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class TypeConstraint:
    """Base of every type; ``str(t)`` gives the HCL spelling, used in error messages."""

    __slots__ = ()


@dataclass(frozen=True)
class PrimitiveType(TypeConstraint):
    """``string``, ``number`` or ``bool``."""

    name: str  # "string", "number" or "bool"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AnyType(TypeConstraint):
    """``any``: the type is decided by the value (cty's DynamicPseudoType)."""

    def __str__(self) -> str:
        return "any"


@dataclass(frozen=True)
class ListType(TypeConstraint):
    """``list(element)``."""

    element: TypeConstraint

    def __str__(self) -> str:
        return f"list({self.element})"


@dataclass(frozen=True)
class SetType(TypeConstraint):
    """``set(element)``."""

    element: TypeConstraint

    def __str__(self) -> str:
        return f"set({self.element})"


@dataclass(frozen=True)
class MapType(TypeConstraint):
    """``map(element)``."""

    element: TypeConstraint

    def __str__(self) -> str:
        return f"map({self.element})"


@dataclass(frozen=True)
class TupleType(TypeConstraint):
    """``tuple([elements...])``."""

    elements: tuple[TypeConstraint, ...]

    def __str__(self) -> str:
        return "tuple([" + ", ".join(str(e) for e in self.elements) + "])"


@dataclass(frozen=True)
class OptionalAttribute:
    """How an ``optional(...)`` attribute is filled when absent or null; ``has_default`` tells a
    missing default apart from an explicit ``null`` default (both give null)."""

    has_default: bool = False
    default: Any = field(default=None, hash=False)  # may be a list or dict: kept out of the hash


@dataclass(frozen=True)
class ObjectType(TypeConstraint):
    """``object({attributes...})``, optional attributes with their defaults."""

    attributes: tuple[tuple[str, TypeConstraint], ...]
    optional: tuple[tuple[str, OptionalAttribute], ...] = field(default=())

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
