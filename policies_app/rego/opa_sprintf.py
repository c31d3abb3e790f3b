"""``sprintf`` as OPA writes it, for regorus (which formats otherwise).

OPA hands each argument to Go's ``fmt.Sprintf``: a number as an int64 when it is whole, else as a
float64; a string as itself; anything else as the text of the Rego value. Go then writes, for
example, ``%!f(int64=15)`` for ``%.2f`` of 15 (``%!f(int64=01)`` of 1), ``%!s(int64=50)`` for ``%s`` of 50, ``-3`` for ``%d``
of -3 and ``1.2345675e+06`` for ``%v`` of 1234567.5, where regorus writes ``15.00``, ``50``,
``--3`` and ``1234567.5``. Same decision, another message: users read the message.

Policies reach this through a regorus extension: the rewrite renames every ``sprintf(`` call to
``EXTENSION(``. Only what is known to match OPA exactly is formatted here (the verbs ``%v %s %d %f``
with an optional precision for ``%f``, ordinary numbers, strings, and values made of those); anything
else raises, which makes regorus report an error, and then the policy is evaluated on OPA itself
(runner.py), which formats it as OPA does by definition.

``floor`` and ``ceil`` go the same way (``__fl_``, ``__c_``): OPA 1.20 truncates the number and steps
away from the truncated value by its sign, so between -1 and 0, where the truncated value is 0,
``floor(-0.5)`` is 0 and ``ceil(-0.5)`` is 1 (regorus: -1 and 0). A decision may hang on it
(``ceil(x) > 0``), so the platform decides as OPA does. ``upper`` and ``lower`` too (``__up_``,
``__lo_``): Go maps each character to one (``upper("ß")`` is ``ß``, regorus ``SS``).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from policies_app.rego.syntax_tree import ParsedModule, Source, kind_of, parse_module

EXTENSION = "__fmt__"  # as long as "sprintf": positions on the line stay the same
_VERB = re.compile(r"%(?:\.(\d+))?(.)")
_PRINTABLE_ASCII = re.compile(r"^[\x20-\x7e]*$")
# Numbers whose JSON text OPA reads as Go reads them here; beyond, the text takes an exponent and
# OPA's conversion differs (1e+20 becomes a string): left to OPA.
_LARGEST = 1e16
_SMALLEST = 1e-4


class Unsupported(ValueError):
    """Not formatted here: the policy is evaluated on OPA instead."""


def _go_float(value: float) -> str:
    """Go's %v of a float64: the shortest digits, with an exponent below 1e-4 or from 1e6 (%g, shortest)."""
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = len(text) + exponent - 1
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return repr(value)


def _quoted(text: str) -> str:
    if not _PRINTABLE_ASCII.match(text):
        raise Unsupported("a string with characters Go quotes otherwise")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number_text(value: int | float) -> str:
    if isinstance(value, float):
        if not math.isfinite(value) or not _SMALLEST <= abs(value) < _LARGEST:
            raise Unsupported("a number OPA may write otherwise")
        return repr(value)
    if abs(value) >= _LARGEST:
        raise Unsupported("a number OPA may write otherwise")
    return str(value)


def _term(value: Any) -> str:
    """The text of a Rego value as OPA writes it (objects by key, sets in OPA's order)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number_text(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join(_term(item) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise Unsupported("an object with keys that are not strings")
        return "{" + ", ".join(f"{_quoted(key)}: {_term(value[key])}" for key in sorted(value)) + "}"
    if isinstance(value, (set, frozenset)):
        if not value:
            return "set()"
        if all(isinstance(item, str) for item in value) or all(
            isinstance(item, (int, float)) and not isinstance(item, bool) for item in value
        ):
            return "{" + ", ".join(_term(item) for item in sorted(value)) + "}"
        raise Unsupported("a set of mixed values")
    raise Unsupported(f"a value of type {type(value).__name__}")


def _go_argument(value: Any) -> tuple[str, Any]:
    """What OPA hands to Go: ("int64", n), ("float64", f) or ("string", text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "string", value if isinstance(value, str) else _term(value)
    _number_text(value)  # refuses what OPA would write otherwise
    if isinstance(value, int):
        return "int64", value
    return "float64", value


def _verb(verb: str, precision: str | None, argument: tuple[str, Any]) -> str:
    kind, value = argument
    plain = str(value) if kind == "int64" else _go_float(value) if kind == "float64" else value
    wrong = f"%!{verb}({kind}={plain})"
    if verb == "v" and precision is None:
        return plain
    if verb == "s" and precision is None:
        return plain if kind == "string" else wrong
    if verb == "d" and precision is None:
        return plain if kind == "int64" else wrong
    if verb == "f" and kind == "float64":
        return format(value, f".{6 if precision is None else int(precision)}f")
    if verb == "f" and precision is None:
        return wrong
    if verb == "f" and kind == "int64":
        return f"%!f(int64={_go_integer(value, int(precision))})"
    raise Unsupported(f"the verb %{verb}")


def _go_integer(value: int, precision: int) -> str:
    """Go's %.Nv of an int64, which is how it names one given to %.Nf: at least N digits, padded with
    zeros (%!f(int64=01) for %.2f of 1, -003 for %.3f of -3), and nothing at all for 0 under %.0f."""
    if precision == 0 and value == 0:
        return ""
    return ("-" if value < 0 else "") + str(abs(value)).zfill(precision)


def opa_sprintf(template: Any, arguments: Any) -> str:
    """``sprintf(template, arguments)`` as OPA 1.20 returns it, or Unsupported."""
    if not isinstance(template, str) or not isinstance(arguments, list):
        raise Unsupported("sprintf expects a string and an array")
    out: list[str] = []
    position = 0
    used = 0
    for match in _VERB.finditer(template):
        out.append(template[position : match.start()])
        position = match.end()
        precision, verb = match.groups()
        if verb == "%" and precision is None:
            out.append("%")
            continue
        if used >= len(arguments):
            raise Unsupported("fewer arguments than verbs")
        out.append(_verb(verb, precision, _go_argument(arguments[used])))
        used += 1
    if used != len(arguments):
        raise Unsupported("more arguments than verbs")
    out.append(template[position:])
    return "".join(out)


def _rounded_as_opa(value: Any, *, up: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported("a value that is not a number")
    if isinstance(value, int):
        return value
    if not math.isfinite(value) or abs(value) >= _LARGEST:
        raise Unsupported("a number OPA may round otherwise")
    whole = math.trunc(value)
    if value == whole:
        return whole
    if up:
        return whole + 1 if whole >= 0 else whole
    return whole - 1 if whole < 0 else whole


def opa_floor(value: Any) -> int:
    """``floor`` as OPA 1.20 computes it (0 for a number between -1 and 0)."""
    return _rounded_as_opa(value, up=False)


def opa_ceil(value: Any) -> int:
    """``ceil`` as OPA 1.20 computes it (1 for a number between -1 and 0)."""
    return _rounded_as_opa(value, up=True)


def _per_character(text: Any, change: Any) -> str:
    if not isinstance(text, str):
        raise Unsupported("a value that is not a string")
    out = []
    for character in text:
        changed = change(character)
        if len(changed) != 1:
            raise Unsupported("a character whose case changes into several")  # Go keeps it: left to OPA
        out.append(changed)
    return "".join(out)


def opa_upper(text: Any) -> str:
    """``upper`` as Go's strings.ToUpper: one character for one (``ß`` stays; regorus writes ``SS``)."""
    return _per_character(text, str.upper)


def opa_lower(text: Any) -> str:
    """``lower`` as Go's strings.ToLower: one character for one, no final sigma."""
    return _per_character(text, str.lower)


# builtin -> (the regorus extension its calls are renamed to, as long as the name: columns stay the
# same; how many arguments; what computes it as OPA does).
EXTENSIONS: dict[str, tuple[str, int, Any]] = {
    "sprintf": (EXTENSION, 2, opa_sprintf),
    "floor": ("__fl_", 1, opa_floor),
    "ceil": ("__c_", 1, opa_ceil),
    "upper": ("__up_", 1, opa_upper),
    "lower": ("__lo_", 1, opa_lower),
}


def _renamed_calls(node: Any, found: list[tuple[int, int, str]]) -> None:
    if isinstance(node, dict):
        call = node.get("Call")
        if isinstance(call, dict) and len(node) == 1:
            function = call.get("fcn") or {}
            if kind_of(function) == "Var" and function["Var"]["value"] in EXTENSIONS:
                span = function["Var"]["span"]
                found.append((span["start"], span["end"], EXTENSIONS[function["Var"]["value"]][0]))
        for value in node.values():
            _renamed_calls(value, found)
    elif isinstance(node, list):
        for value in node:
            _renamed_calls(value, found)


def use_opa_sprintf(module: ParsedModule, *, rego_v0: bool) -> ParsedModule:
    """The module with every ``sprintf(`` (``floor(``, ``ceil(``...) call made to its extension."""
    found: list[tuple[int, int, str]] = []
    _renamed_calls(module.tree.get("rules") or [], found)
    if not found:
        return module
    edits = Source(module.data)
    for start, end, extension in found:
        edits.replace(start, end, extension)
    return parse_module(module.filename, edits.result(), rego_v0)
