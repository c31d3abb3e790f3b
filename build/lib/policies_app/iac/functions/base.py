"""The registry, the call context and the argument helpers shared by every function family."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policies_app.iac.types import (
    ConversionError,
    normalize_number,
    to_bool,
    to_number,
    to_string,
    type_name,
)
from policies_app.iac.values import UNKNOWN


@dataclass
class FunctionContext:
    module_dir: str  # absolute path of the module whose expression calls the function
    root_dir: str  # absolute path of the root module: filesystem functions may not leave its tree
    cwd: str
    # (template_text, filename, vars) -> str; supplied by the evaluator for templatefile()/templatestring()
    render_template: Callable[[str, str, dict], Any] | None = None


class FunctionError(ValueError):
    """A function called with arguments it cannot accept; the message names the function."""


class UnsupportedFunction(FunctionError):
    def __init__(self, name: str) -> None:
        super().__init__(f"function {name} is not supported")
        self.name = name


class ArgumentError(FunctionError):
    """Raised inside an implementation; call_function adds the function's name to the message."""


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    implementation: Callable[..., Any]
    min_args: int
    max_args: int | None  # None: variadic
    # False: any unknown anywhere in the arguments makes the result unknown before the call.
    # True: the implementation looks at unknowns itself (length(), keys(), concat(), ...).
    handles_unknown: bool
    needs_context: bool


REGISTRY: dict[str, FunctionSpec] = {}


def register(
    name: str,
    min_args: int,
    max_args: int | None = -1,
    *,
    handles_unknown: bool = False,
    needs_context: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a built-in; ``max_args`` defaults to ``min_args`` (fixed arity), None means variadic."""

    def decorate(implementation: Callable[..., Any]) -> Callable[..., Any]:
        upper = min_args if max_args == -1 else max_args
        REGISTRY[name] = FunctionSpec(name, implementation, min_args, upper, handles_unknown, needs_context)
        return implementation

    return decorate


# --- argument helpers: each raises ArgumentError with a message a user can act on -------------------------


def want_string(value: Any, what: str = "argument") -> str:
    if value is None:
        raise ArgumentError(f"{what} must not be null")
    if isinstance(value, (list, tuple, dict)):
        raise ArgumentError(f"{what} must be a string, got {type_name(value)}")
    try:
        return to_string(value)
    except ConversionError as exc:
        raise ArgumentError(f"{what}: {exc}") from None


def want_number(value: Any, what: str = "argument") -> int | float:
    if value is None:
        raise ArgumentError(f"{what} must not be null")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArgumentError(f"{what} must be a number, got {type_name(value)}")
    try:
        return to_number(value)
    except ConversionError as exc:
        raise ArgumentError(f"{what}: {exc}") from None


def want_int(value: Any, what: str = "argument") -> int:
    number = want_number(value, what)
    if isinstance(number, float):
        raise ArgumentError(f"{what} must be a whole number, got {number}")
    return number


def want_bool(value: Any, what: str = "argument") -> bool:
    if value is None:
        raise ArgumentError(f"{what} must not be null")
    if not isinstance(value, (bool, str)):
        raise ArgumentError(f"{what} must be a bool, got {type_name(value)}")
    try:
        return to_bool(value)
    except ConversionError as exc:
        raise ArgumentError(f"{what}: {exc}") from None


def is_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def want_sequence(value: Any, what: str = "argument") -> list[Any]:
    """A list, tuple or set argument as a Python list."""
    if value is None:
        raise ArgumentError(f"{what} must not be null")
    if not is_sequence(value):
        raise ArgumentError(f"{what} must be a list, a tuple or a set, got {type_name(value)}")
    return list(value)


def want_mapping(value: Any, what: str = "argument") -> dict[str, Any]:
    if value is None:
        raise ArgumentError(f"{what} must not be null")
    if not isinstance(value, dict):
        raise ArgumentError(f"{what} must be a map or an object, got {type_name(value)}")
    return value


def number(value: float | int) -> int | float:
    return normalize_number(value)


__all__ = [
    "UNKNOWN",
    "ArgumentError",
    "FunctionContext",
    "FunctionError",
    "FunctionSpec",
    "REGISTRY",
    "UnsupportedFunction",
    "register",
]
