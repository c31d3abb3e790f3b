"""Terraform's types as values of their own (cty's types): ``list(string)`` is ``ListType(STRING)``.

type_constraints.py reads them from type expressions and converts values to them;
type_unification.py finds the type several values share.

The classes are written out, not made by ``@dataclass(frozen=True)`` (which compiles five methods for
each class on every start of the command, ~4 ms here): they behave as those did. Immutable, equal when
of the same class with equal fields (``__slots__``, in order), hashed on their fields, picklable.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any


class FrozenRecord:
    """Equality, hash, ``repr``, pickling and immutability from ``__slots__`` (the fields, in order).

    What ``@dataclass(frozen=True)`` gives, for the classes made at every start (provider_schemas.py
    uses it too); a subclass sets its fields in ``__init__`` with ``object.__setattr__``."""

    __slots__ = ()
    _hashed: tuple[str, ...] | None = None  # the fields in the hash, when not all of them
    _key: Any = staticmethod(lambda obj: ())  # the fields' values (attrgetter: one C call)
    _hash_key: Any = staticmethod(lambda obj: ())

    def __init_subclass__(cls) -> None:
        names = cls.__slots__
        if names:
            cls._key = attrgetter(*names)
            cls._hash_key = attrgetter(*(cls._hashed or names))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key(self) == self._key(other)

    def __hash__(self) -> int:
        return hash(self._hash_key(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{self.__class__.__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (self.__class__, tuple(getattr(self, n) for n in self.__slots__))


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
