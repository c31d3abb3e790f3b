"""Terraform's format() verbs, which follow Go's fmt package (flags, width, precision, %[n] indexes)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from policies_app.iac.functions.base import ArgumentError, want_bool, want_number, want_string
from policies_app.iac.functions.encoding import json_encode
from policies_app.iac.type_constraints import decimal_digits, format_number

_VERB = re.compile(
    r"%(?P<flags>[-+# 0]*)(?:\[(?P<index>\d+)\])?(?P<width>\d+)?(?:\.(?P<precision>\d*))?(?P<verb>.)?",
    re.DOTALL,
)


def format_values(template: str, args: list[Any]) -> str:
    out: list[str] = []
    position = 0
    next_arg = 0
    used = False
    while position < len(template):
        percent = template.find("%", position)
        if percent < 0:
            out.append(template[position:])
            break
        out.append(template[position:percent])
        match = _VERB.match(template, percent)
        assert match is not None  # the pattern always matches at a "%"
        for number in (match.group("width"), match.group("precision")):
            if number and len(number) > 6:
                raise ArgumentError(f"the width or precision in {match.group(0)!r} is too large")
        position = match.end()
        verb = match.group("verb")
        if verb is None:
            raise ArgumentError(f"unterminated format verb at offset {percent}")
        if verb == "%" and not match.group("index") and not match.group("width"):
            out.append("%")
            continue
        if match.group("index"):
            next_arg = int(match.group("index")) - 1
        if next_arg >= len(args) or next_arg < 0:
            raise ArgumentError(
                f'not enough arguments for "{match.group(0)}" at {percent}: need index {next_arg + 1} '
                f"but have {len(args)} total"
            )
        value = args[next_arg]
        next_arg += 1
        used = True
        precision = match.group("precision")
        out.append(
            _format_one(
                verb,
                value,
                match.group("flags"),
                int(match.group("width")) if match.group("width") else None,
                None if precision is None else int(precision or "0"),
                percent,
            )
        )
    if used and next_arg < len(args) or (not used and args):
        raise ArgumentError("too many arguments; no verbs in the format string use the last ones")
    return "".join(out)


def _pad(text: str, flags: str, width: int | None, zero_ok: bool = False) -> str:
    if width is None or len(text) >= width:
        return text
    fill = width - len(text)
    if "-" in flags:
        return text + " " * fill
    if "0" in flags and zero_ok:
        sign = text[:1] if text[:1] in "+- " else ""
        return sign + "0" * fill + text[len(sign) :]
    return " " * fill + text


def _format_one(verb: str, value: Any, flags: str, width: int | None, precision: int | None, at: int) -> str:
    if value is None and verb != "v":
        raise ArgumentError(f'unsupported value for "%{verb}" at {at}: null value cannot be formatted')
    if verb == "v":
        if "#" in flags or not isinstance(value, (str, int, float, bool)):
            text = json_encode(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            text = _sign(value < 0, flags) + _shortest_g(abs(float(value)))
        else:
            text = want_string(value)
        return _pad(text, flags, width)
    if verb == "s":
        if isinstance(value, (list, tuple, dict)):
            raise ArgumentError(f'unsupported value for "%s" at {at}: string required')
        text = want_string(value)
        if precision is not None:
            text = text[:precision]
        return _pad(text, flags, width, zero_ok=True)
    if verb == "q":
        if isinstance(value, (list, tuple, dict)):
            raise ArgumentError(f'unsupported value for "%q" at {at}: string required')
        # cty quotes as JSON does (HTML-safe), not as Go's %q would.
        return _pad(json_encode(want_string(value)), flags, width)
    if verb == "t":
        return _pad("true" if want_bool(value) else "false", flags, width)
    if verb in "dboxX":
        number = want_number(value)
        if isinstance(number, float):
            raise ArgumentError(f'unsupported value for "%{verb}" at {at}: an integer is required')
        return _format_integer(verb, number, flags, width, precision)
    if verb in "eEfFgG":
        return _format_float(verb, float(want_number(value)), flags, width, precision)
    raise ArgumentError(f'unsupported format verb "%{verb}" at {at}')


def _sign(negative: bool, flags: str) -> str:
    if negative:
        return "-"
    return "+" if "+" in flags else (" " if " " in flags else "")


def _format_integer(verb: str, number: int, flags: str, width: int | None, precision: int | None) -> str:
    digits = {"d": "d", "b": "b", "o": "o", "x": "x", "X": "X"}[verb]
    text = format(abs(number), digits)
    if precision is not None:
        text = text.rjust(precision, "0") if not (precision == 0 and number == 0) else ""
    if "#" in flags:
        text = {"b": "0b", "o": "0", "x": "0x", "X": "0X"}.get(verb, "") + text
    text = _sign(number < 0, flags) + text
    return _pad(text, flags, width, zero_ok=precision is None)


def _format_float(verb: str, number: float, flags: str, width: int | None, precision: int | None) -> str:
    lower = verb.lower()
    if number != number or number in (float("inf"), float("-inf")):
        text = "NaN" if number != number else ("+Inf" if number > 0 else "-Inf")
        return _pad(text, flags, width)
    if lower == "g" and precision is None:
        text = _shortest_g(abs(number))
    else:
        p = 6 if precision is None else precision
        text = format(abs(number), f"{'#' if '#' in flags else ''}.{p}{lower}")
    if verb.isupper():
        text = text.upper()
    return _pad(
        _sign(number < 0 or (number == 0 and str(number).startswith("-")), flags) + text,
        flags,
        width,
        zero_ok=True,
    )


def _shortest_g(number: float) -> str:
    """Go's %g with no precision: the shortest digits, exponent form when the exponent is < -4 or >= 6."""
    if number == 0:
        return "0"
    sign, digits, exponent = Decimal(decimal_digits(number)).normalize().as_tuple()
    mantissa = "".join(map(str, digits))
    decimal_exponent = len(mantissa) + int(exponent) - 1
    if decimal_exponent < -4 or decimal_exponent >= 6:
        body = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        return f"{body}e{'-' if decimal_exponent < 0 else '+'}{abs(decimal_exponent):02d}"
    return format_number(number)
