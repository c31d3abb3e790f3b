"""Terraform's built-in functions over plain values (see values.py for the representation).

``call_function(name, args, ctx)`` is the one entry point. Arguments arrive already evaluated; ``try``
and ``can`` need lazy evaluation and stay with the evaluator. Each function is declared once, with
``register`` (base.py), with everything the evaluator needs to know of it: its arity, what it does with
unknown arguments (by default an unknown anywhere makes the result unknown; functions where terraform
knows better, such as length of a list holding unknowns, handle them), and what happens to sensitive
marks on its arguments.
"""

from __future__ import annotations

import re
from typing import Any

from policies_app.iac.functions.base import (
    REGISTRY,
    ArgumentError,
    FunctionContext,
    FunctionError,
    FunctionSpec,
    UnsupportedFunction,
)
from policies_app.iac.type_constraints import ANY, ConversionError
from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfSet,
    UnknownValue,
    contains_sensitive,
    contains_unknown,
    mark,
    unmark_deep,
)

_families_loaded = False


def registry() -> dict[str, FunctionSpec]:
    """Every built-in function by name. Importing a family registers its functions; the families are
    imported when a function is first needed, so that a configuration calling none does not pay for
    them at start-up (about a third of the evaluator's imports)."""
    global _families_loaded
    if not _families_loaded:
        from policies_app.iac.functions import (  # noqa: F401
            collection,
            conversion,
            dates,
            encoding,
            filesystem,
            hashing,
            ipnet,
            numeric,
            rsa,
            strings,
        )

        _families_loaded = True
    return REGISTRY


def __getattr__(name: str) -> Any:
    if name == "SUPPORTED_FUNCTIONS":  # frozenset of every built-in's name
        return frozenset(registry())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def call_function(
    name: str, args: list[Any], ctx: FunctionContext, declared_types: list[Any] | None = None
) -> Any:
    """The result of the built-in ``name`` applied to ``args``; raises FunctionError on bad arguments.

    What the function does with unknown and sensitive arguments is declared with it (``register``).
    ``declared_types`` are the types the arguments' declarations give them, for the functions that
    want them."""
    spec = registry().get(name)
    if spec is None:
        # provider::aws::arn_parse and friends run inside provider plugins, which we never start.
        raise UnsupportedFunction(name)
    if len(args) < spec.min_args or (spec.max_args is not None and len(args) > spec.max_args):
        if spec.max_args is None:
            expected = f"at least {spec.min_args}"
        elif spec.min_args == spec.max_args:
            expected = str(spec.min_args)
        else:
            expected = f"{spec.min_args} to {spec.max_args}"
        plural = "" if expected == "1" else "s"
        raise FunctionError(f"function {name}() takes {expected} argument{plural}, {len(args)} given")
    marked = False
    if spec.marks != "own" and Sensitive.created:
        args = list(args)
        for position, arg in enumerate(args):
            if arg.__class__ is Sensitive:
                arg = args[position] = arg.value
                marked = True
            if spec.marks == "whole" and contains_sensitive(arg):
                args[position] = unmark_deep(arg)
                marked = True
    if spec.unknowns == "propagate" and any(contains_unknown(a) for a in args):
        result: Any = UNKNOWN
    else:
        extra = {}
        if spec.wants_declared_types:  # without declarations, arguments are literals: their nulls untyped
            extra["declared_types"] = declared_types or [ANY] * len(args)
        result = _call(spec, args, ctx, extra)
    if result.__class__ is UnknownValue and spec.refines_not_null and not result.not_null:
        result = UnknownValue(result.type, True, result.length, result.prefix, result.number_range)
    if spec.marks == "elements" and isinstance(result, TfSet) and contains_sensitive(result):
        result, marked = unmark_deep(result), True
    return mark(result) if marked else result


def _call(spec: FunctionSpec, args: list[Any], ctx: FunctionContext, extra: dict[str, Any]) -> Any:
    try:
        if spec.needs_context:
            return spec.implementation(ctx, *args, **extra)
        return spec.implementation(*args, **extra)
    except UnsupportedFunction:
        raise
    except (ArgumentError, ConversionError) as exc:
        raise FunctionError(f"invalid call to {spec.name}(): {exc}") from None
    except FunctionError:
        raise
    except (
        ValueError,
        TypeError,
        ArithmeticError,
        LookupError,
        AttributeError,
        OSError,
        re.error,
        RecursionError,
    ) as exc:
        # A defect of ours or an argument shape nobody anticipated: still an error about this call,
        # never a crash of the evaluation.
        raise FunctionError(f"invalid call to {spec.name}(): {exc}") from None


__all__ = [
    "SUPPORTED_FUNCTIONS",  # noqa: F822 - computed on first access (__getattr__)
    "FunctionContext",
    "FunctionError",
    "UnsupportedFunction",
    "call_function",
    "registry",
]
