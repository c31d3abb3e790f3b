"""Record classes without ``@dataclass``, for the classes the command makes on every start.

``@dataclass`` compiles an ``__init__``, ``__repr__`` and ``__eq__`` (five methods when frozen) for each
class whenever the module is imported, ~0.4 ms a class, and importing ``dataclasses`` imports
``inspect`` (with ``ast``, ``dis`` and ``tokenize``): together ~30 ms of a start-up that must stay under
0.1 s. A record writes its ``__init__`` out (compiled once into the bytecode cache) and takes the rest
from here, behaving as the dataclass did: equal when of the same class with equal fields, the same
``repr``; ``Record`` is mutable and unhashable, ``FrozenRecord`` immutable, hashed on its fields and
picklable. The fields are ``__slots__`` when the class has slots, else ``_fields``, in order.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any


def _no_fields(obj: object) -> tuple:
    return ()


class Record:
    """Equality and ``repr`` from the fields, in order; unhashable (a mutable dataclass's)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _key: Any = staticmethod(_no_fields)  # the fields' values (an attrgetter: one C call)
    __hash__ = None  # type: ignore[assignment]

    def __init_subclass__(cls) -> None:
        slots = cls.__dict__.get("__slots__")
        if slots:
            cls._fields = tuple(slots)
        if cls._fields:
            cls._key = attrgetter(*cls._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key(self) == self._key(other)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{self.__class__.__qualname__}({fields})"


class FrozenRecord(Record):
    """Immutable, hashed on its fields (``_hashed``: those in the hash, when not all) and picklable (a
    frozen dataclass's). Its ``__init__`` sets the fields with ``object.__setattr__``."""

    __slots__ = ()
    _hashed: tuple[str, ...] | None = None
    _hash_key: Any = staticmethod(_no_fields)

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if cls._fields:
            cls._hash_key = attrgetter(*(cls._hashed or cls._fields))

    def __hash__(self) -> int:
        return hash(self._hash_key(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (self.__class__, tuple(getattr(self, n) for n in self._fields))
