"""Numeric functions: abs ceil floor log max min parseint pow signum."""

from __future__ import annotations

import math
from typing import Any

from policies_app.iac.functions.base import (
    ArgumentError,
    number,
    register,
    want_int,
    want_number,
    want_string,
)


@register("abs", 1)
def abs_(value: Any) -> int | float:
    return number(abs(want_number(value)))


@register("ceil", 1)
def ceil(value: Any) -> int | float:
    n = want_number(value)
    return n if isinstance(n, int) or math.isinf(n) else math.ceil(n)


@register("floor", 1)
def floor(value: Any) -> int | float:
    n = want_number(value)
    return n if isinstance(n, int) or math.isinf(n) else math.floor(n)


@register("log", 2)
def log(value: Any, base: Any) -> int | float:
    n, b = want_number(value), want_number(base)
    try:
        return number(math.log(n) / math.log(b))
    except (ValueError, ZeroDivisionError):
        raise ArgumentError(f"cannot take the logarithm of {n} in base {b}") from None


def _extreme(numbers: tuple[Any, ...], pick) -> int | float:
    if not numbers:
        raise ArgumentError("must pass at least one number")
    return number(pick(want_number(n) for n in numbers))


@register("max", 1, None)
def max_(*numbers: Any) -> int | float:
    return _extreme(numbers, max)


@register("min", 1, None)
def min_(*numbers: Any) -> int | float:
    return _extreme(numbers, min)


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


@register("parseint", 2)
def parseint(text: Any, base: Any) -> int:
    if not isinstance(text, str):
        raise ArgumentError("the first argument must be a string")
    s, b = want_string(text), want_int(base)
    if not 2 <= b <= 62:
        raise ArgumentError("base must be a whole number between 2 and 62 inclusive")
    digits = s[1:] if s[:1] in "+-" else s
    alphabet = _DIGITS if b <= 36 else "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    valid = alphabet[:b] if b > 36 else alphabet[:b] + alphabet[10:b].upper()
    if not digits or any(c not in valid for c in digits):
        raise ArgumentError(f"cannot parse {s!r} as a base {b} integer")
    value = 0
    for c in digits:
        value = value * b + (alphabet.index(c) if b > 36 else _DIGITS.index(c.lower()))
    return -value if s.startswith("-") else value


@register("pow", 2)
def pow_(base: Any, exponent: Any) -> int | float:
    b, e = want_number(base), want_number(exponent)
    try:
        # Exact integer powers, unless the result would be enormous (pow(10, 10**30) must not hang).
        if (
            isinstance(b, int)
            and isinstance(e, int)
            and 0 <= e
            and (abs(b) < 2 or e * abs(b).bit_length() <= 4096)
        ):
            return b**e
        return number(math.pow(b, e))
    except (OverflowError, ValueError):
        raise ArgumentError(f"pow({b}, {e}) has no finite result") from None


@register("signum", 1)
def signum(value: Any) -> int:
    n = want_int(value)  # cty converts to an integer first: signum(0.5) is an error
    return (n > 0) - (n < 0)
