"""Terraform's built-in functions over plain values (see values.py for the representation).

``call_function(name, args, ctx)`` is the one entry point. Arguments arrive already evaluated; ``try``
and ``can`` need lazy evaluation and stay with the evaluator. Unknown values: by default an unknown
anywhere in the arguments makes the result unknown; functions where Terraform knows better (length of a
list holding unknowns, keys of a map with unknown values, concat/merge/coalesce...) decide for themselves.
"""

from __future__ import annotations

import re
from typing import Any

from policies_app.iac.functions import (  # noqa: F401  (importing a family registers its functions)
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
from policies_app.iac.functions.base import (
    REGISTRY,
    ArgumentError,
    FunctionContext,
    FunctionError,
    UnsupportedFunction,
)
from policies_app.iac.types import ConversionError
from policies_app.iac.values import UNKNOWN, contains_unknown

SUPPORTED_FUNCTIONS: frozenset[str] = frozenset(REGISTRY)


def call_function(name: str, args: list[Any], ctx: FunctionContext) -> Any:
    """The result of the built-in ``name`` applied to ``args``; raises FunctionError on bad arguments."""
    spec = REGISTRY.get(name)
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
    if not spec.handles_unknown and any(contains_unknown(a) for a in args):
        return UNKNOWN
    try:
        if spec.needs_context:
            return spec.implementation(ctx, *args)
        return spec.implementation(*args)
    except UnsupportedFunction:
        raise
    except (ArgumentError, ConversionError) as exc:
        raise FunctionError(f"invalid call to {name}(): {exc}") from None
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
        raise FunctionError(f"invalid call to {name}(): {exc}") from None


__all__ = [
    "SUPPORTED_FUNCTIONS",
    "FunctionContext",
    "FunctionError",
    "UnsupportedFunction",
    "call_function",
]
