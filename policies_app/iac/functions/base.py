"""The registry, the call context and the argument helpers shared by every function family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from policies_app.iac.records import FrozenRecord, Record
from policies_app.iac.type_constraints import (
    ConversionError,
    normalize_number,
    to_bool,
    to_number,
    to_string,
    type_name,
)
from policies_app.iac.values import UNKNOWN

_set = object.__setattr__


class FunctionContext(Record):
    """What a function call may read: its module, the template's source, the sandbox."""

    module_dir: str  # absolute path of the module whose expression calls the function
    # The template's source (its checkout, holding the root module and its local modules): file
    # functions may not read outside it.
    source_root: str
    cwd: str
    # (template_text, filename, vars) -> str; supplied by the evaluator for templatefile()/templatestring()
    render_template: Callable[[str, str, dict], Any] | None
    plan_timestamp: str | None  # plantimestamp(): when the evaluation (the "plan") started

    _fields = ("module_dir", "source_root", "cwd", "render_template", "plan_timestamp")

    def __init__(
        self,
        module_dir: str,
        source_root: str,
        cwd: str,
        render_template: Callable[[str, str, dict], Any] | None = None,
        plan_timestamp: str | None = None,
    ) -> None:
        self.module_dir = module_dir
        self.source_root = source_root
        self.cwd = cwd
        self.render_template = render_template
        self.plan_timestamp = plan_timestamp


class FunctionError(ValueError):
    """A function called with arguments it cannot accept; the message names the function."""


class UnsupportedFunction(FunctionError):
    def __init__(self, name: str) -> None:
        super().__init__(f"function {name} is not supported")
        self.name = name


class ArgumentError(FunctionError):
    """Raised inside an implementation; call_function adds the function's name to the message."""


# What a function does with an argument that is or holds an unknown value:
# "propagate": the result is unknown, and the implementation never sees it (cty's default);
# "handled": the implementation gets it and knows better (length([unknown]) is 1).
Unknowns = Literal["propagate", "handled"]
# What happens to sensitive marks (values.Sensitive) on its arguments:
# "whole": the implementation gets the values without marks; the result is sensitive as a whole when
#     any argument held one (jsonencode({a = var.secret}));
# "elements": marks inside the arguments stay on the elements the function moves (concat([var.secret],
#     ["a"]) is a list whose first element is sensitive); an argument's own mark marks the result; a set
#     cannot hold marks, so a resulting set holding any is sensitive as a whole;
# "own": the function works on marks itself (sensitive, nonsensitive, issensitive).
Marks = Literal["whole", "elements", "own"]


class FunctionSpec(FrozenRecord):
    """Everything known about a built-in function, declared where it is implemented (``register``)."""

    name: str
    implementation: Callable[..., Any]
    min_args: int
    max_args: int | None  # None: variadic
    unknowns: Unknowns
    marks: Marks
    needs_context: bool
    # True: the implementation also gets ``declared_types``, one per argument: the type a variable's
    # declaration gives it, ANY when nothing types it (the literal null), None when unknown (a null
    # read from an attribute, typed in terraform): terraform's nulls are typed, ours are not.
    wants_declared_types: bool
    # The type of the result whatever the arguments, when it has one that a null result keeps
    # (toset(null) is a null set: `cond ? toset(x) : []` is a set either way).
    result_type: Any
    # Whether a result unknown for now is known not to be null (cty's RefineResult: refineNonNull,
    # which nearly every function declares: upper(x) != null is true before x is known).
    refines_not_null: bool

    _fields = (
        "name",
        "implementation",
        "min_args",
        "max_args",
        "unknowns",
        "marks",
        "needs_context",
        "wants_declared_types",
        "result_type",
        "refines_not_null",
    )

    def __init__(
        self,
        name: str,
        implementation: Callable[..., Any],
        min_args: int,
        max_args: int | None,
        unknowns: Unknowns,
        marks: Marks,
        needs_context: bool,
        wants_declared_types: bool,
        result_type: Any,
        refines_not_null: bool,
    ) -> None:
        _set(self, "name", name)
        _set(self, "implementation", implementation)
        _set(self, "min_args", min_args)
        _set(self, "max_args", max_args)
        _set(self, "unknowns", unknowns)
        _set(self, "marks", marks)
        _set(self, "needs_context", needs_context)
        _set(self, "wants_declared_types", wants_declared_types)
        _set(self, "result_type", result_type)
        _set(self, "refines_not_null", refines_not_null)


# The functions whose unknown result may still be null, measured with terraform 1.11 (f(unknown) !=
# null stays unknown): the conversions and mark functions pass their argument's refinements on
# unchanged, and these others declare no refinement.
_UNREFINED_RESULTS = frozenset(
    {
        "tostring",
        "tonumber",
        "tobool",
        "tolist",
        "toset",
        "tomap",
        "sensitive",
        "nonsensitive",
        "issensitive",
        "ephemeralasnull",
        "lookup",
        "element",
        "one",
        "jsondecode",
        "yamldecode",
        "csvdecode",
        "yamlencode",
        "templatefile",
        "timeadd",
        "strcontains",
    }
)


REGISTRY: dict[str, FunctionSpec] = {}


def register(
    name: str,
    min_args: int,
    max_args: int | None = -1,
    *,
    unknowns: Unknowns = "propagate",
    marks: Marks = "whole",
    needs_context: bool = False,
    wants_declared_types: bool = False,
    result_type: Any = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a built-in; ``max_args`` defaults to ``min_args`` (fixed arity), None means variadic.
    Measured against terraform: iac_corpus/functions_over_unknowns and functions_over_sensitive."""

    def decorate(implementation: Callable[..., Any]) -> Callable[..., Any]:
        upper = min_args if max_args == -1 else max_args
        REGISTRY[name] = FunctionSpec(
            name,
            implementation,
            min_args,
            upper,
            unknowns,
            marks,
            needs_context,
            wants_declared_types,
            result_type,
            name not in _UNREFINED_RESULTS,
        )
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
