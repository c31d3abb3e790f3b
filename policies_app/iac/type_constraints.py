"""Terraform type constraints and the conversions between values of different types.

``parse_type`` reads a type expression (``list(string)``, ``object({name=string, size=optional(number, 3)})``)
into a ``TypeConstraint``; ``convert`` applies Terraform's conversion rules to a value (see values.py for
how values are represented). The implicit conversions that operators and templates make (``"1" + 1``,
``"${true}"``) are ``to_number``, ``to_string`` and ``to_bool``.

The rules follow cty, the type system underneath Terraform: a string converts to a number when it is a
decimal representation of one and to a bool only when it is exactly ``true`` or ``false``; numbers and bools
always convert to strings; lists, sets and tuples convert between each other element by element; maps and
objects likewise; ``null`` converts to every type and stays ``null``; an unknown value stays unknown.

Why this module is long: it is one type system. The constraint classes, the parser of type
expressions, and conversion, equality and unification all dispatch on the same classes and follow one
set of cty rules; split apart, each part would import all the others.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

# The types themselves and their unification live in their own modules; they are re-exported here,
# where every other module has always found them.
from policies_app.iac.type_kinds import (
    ANY,
    BOOL,
    NUMBER,
    STRING,
    AnyType,
    ListType,
    MapType,
    ObjectType,
    OptionalAttribute,
    PrimitiveType,
    SetType,
    TupleType,
    TypeConstraint,
    object_type,
)
from policies_app.iac.type_unification import converted_unknown, convertible, has_any, infer_type, unify
from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfMap,
    TfSet,
    UnknownValue,
    contains_unknown,
    definitely_not_null,
    is_unknown,
)


class TypeSyntaxError(ValueError):
    """A type expression that is not valid HCL type syntax."""


class ConversionError(ValueError):
    """A value that cannot be converted to the type asked for."""


# --- parsing type expressions -------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>\#[^\n]*|//[^\n]*|/\*.*?\*/)
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_-]*)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<punct>[()\[\]{},=:])
      | (?P<other>.)
    )""",
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(token: str) -> str:
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt in "uU":
                width = 4 if nxt == "u" else 8
                out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
                i += 2 + width
                continue
            raise TypeSyntaxError(f"invalid escape sequence \\{nxt} in {token}")
        out.append(ch)
        i += 1
    # "$${" and "%%{" are the template escapes for a literal "${" / "%{".
    return "".join(out).replace("$${", "${").replace("%%{", "%{")


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:  # pragma: no cover - "other" matches any character
            raise TypeSyntaxError(f"unexpected character {text[pos:].lstrip()[:1]!r} in type expression")
        pos = match.end()
        kind = match.lastgroup
        if kind != "comment":
            tokens.append((kind, match.group(kind)))
    return tokens


class _TypeParser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise TypeSyntaxError("unexpected end of type expression")
        self.i += 1
        return token

    def expect(self, punct: str) -> None:
        kind, value = self.take()
        if kind != "punct" or value != punct:
            raise TypeSyntaxError(f"expected {punct!r} but found {value!r} in type expression")

    def accept(self, punct: str) -> bool:
        token = self.peek()
        if token == ("punct", punct):
            self.i += 1
            return True
        return False

    def parse_type(self, allow_optional: bool = False) -> TypeConstraint | tuple[str, Any]:
        kind, value = self.take()
        if kind == "string":
            # Terraform 0.11's quoted type names, still accepted with a warning.
            legacy = {"string": STRING, "list": ListType(STRING), "map": MapType(STRING)}
            if _unquote(value) in legacy:
                return legacy[_unquote(value)]
            raise TypeSyntaxError(f"invalid legacy type name {value}")
        if kind != "ident":
            raise TypeSyntaxError(f"a type name is required, found {value!r}")
        if value in ("string", "number", "bool"):
            return PrimitiveType(value)
        if value == "any":
            return ANY
        if value in ("list", "set", "map"):
            if not self.accept("("):
                raise TypeSyntaxError(
                    f'the {value} type constructor requires one argument specifying the element type, as in "{value}(string)"'
                )
            element = self._plain_type()
            self._close_call()
            return {"list": ListType, "set": SetType, "map": MapType}[value](element)
        if value == "tuple":
            self.expect("(")
            self.expect("[")
            elements: list[TypeConstraint] = []
            while not self.accept("]"):
                elements.append(self._plain_type())
                if not self.accept(","):
                    self.expect("]")
                    break
            self._close_call()
            return TupleType(tuple(elements))
        if value == "object":
            return self._object()
        if value == "optional":
            if not allow_optional:
                raise TypeSyntaxError("optional() is only allowed for an attribute of an object type")
            self.expect("(")
            inner = self._plain_type()
            marker = OptionalAttribute()
            if self.accept(",") and self.peek() != ("punct", ")"):
                marker = OptionalAttribute(True, _LiteralParser(self).value())
            self._close_call()
            return ("optional", (inner, marker))
        raise TypeSyntaxError(f'the keyword "{value}" is not a valid type')

    def _close_call(self) -> None:
        """The ``)`` closing a type constructor's arguments, after an optional trailing comma: HCL
        reads ``list(string,)`` and ``optional(list(string), )`` as calls like any other, and a call's
        arguments may end with a comma (the second is an optional attribute without a default)."""
        self.accept(",")
        self.expect(")")

    def _plain_type(self) -> TypeConstraint:
        result = self.parse_type()
        assert isinstance(result, TypeConstraint)
        return result

    def _object(self) -> ObjectType:
        self.expect("(")
        self.expect("{")
        attributes: dict[str, TypeConstraint] = {}
        optional: dict[str, OptionalAttribute] = {}
        while not self.accept("}"):
            kind, name = self.take()
            if kind == "string":
                name = _unquote(name)
            elif kind != "ident":
                raise TypeSyntaxError(f"an attribute name is required, found {name!r}")
            if not (self.accept("=") or self.accept(":")):
                raise TypeSyntaxError(f'"=" is required after the attribute name "{name}"')
            result = self.parse_type(allow_optional=True)
            if isinstance(result, tuple):
                inner, marker = result[1]
                attributes[name] = inner
                optional[name] = marker
            else:
                attributes[name] = result
            self.accept(",")
        self._close_call()
        for name, marker in list(optional.items()):
            if marker.has_default and marker.default is not None:
                try:
                    optional[name] = OptionalAttribute(True, convert(marker.default, attributes[name]))
                except ConversionError as exc:
                    raise TypeSyntaxError(
                        f'invalid default value for optional attribute "{name}": {exc}'
                    ) from None
        return object_type(attributes, optional)


class _LiteralParser:
    """Reads the constant default of ``optional(type, default)``: literals, tuples and objects."""

    def __init__(self, parser: _TypeParser) -> None:
        self.p = parser

    def value(self) -> Any:
        kind, token = self.p.take()
        if kind == "number":
            return normalize_number(float(token)) if any(c in token for c in ".eE") else int(token)
        if kind == "string":
            return _unquote(token)
        if kind == "ident":
            literals = {"true": True, "false": False, "null": None}
            if token in literals:
                return literals[token]
            raise TypeSyntaxError(f"a default value must be a constant, found {token!r}")
        if token == "[":
            items: list[Any] = []
            while not self.p.accept("]"):
                items.append(self.value())
                if not self.p.accept(","):
                    self.p.expect("]")
                    break
            return items
        if token == "{":
            obj: dict[str, Any] = {}
            while not self.p.accept("}"):
                key_kind, key = self.p.take()
                if key_kind == "string":
                    key = _unquote(key)
                elif key_kind not in ("ident", "number"):
                    raise TypeSyntaxError(f"an object key is required, found {key!r}")
                if not (self.p.accept("=") or self.p.accept(":")):
                    raise TypeSyntaxError(f'"=" is required after the key "{key}"')
                obj[key] = self.value()
                self.p.accept(",")
            return obj
        raise TypeSyntaxError(f"a default value must be a constant, found {token!r}")


def parse_type(text: str) -> TypeConstraint:
    """The type that an HCL type expression such as ``map(object({a=optional(string, "x")}))`` names."""
    parser = _TypeParser(text)
    result = parser._plain_type()
    leftover = parser.peek()
    if leftover is not None:
        raise TypeSyntaxError(f"unexpected {leftover[1]!r} after the type expression")
    return result


# --- numbers and primitive conversions ----------------------------------------------------------------

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def normalize_number(value: int | float) -> int | float:
    """A number in the representation values.py asks for: ``int`` whenever it is whole."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def format_number(value: int | float) -> str:
    """A number as Terraform prints it: no exponent, shortest digits that round-trip."""
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer():
        return str(int(value))
    return format(Decimal(decimal_digits(value)), "f")


def decimal_digits(value: float) -> str:
    """The shortest decimal text for a float, forgiving binary rounding noise of an ulp or two.

    Terraform computes with 512-bit decimal-friendly floats, so ``0.1 + 0.2`` prints as ``0.3`` there; with
    Python floats it is 0.30000000000000004. A 15-digit form within two ulps is the value terraform meant.
    """
    text = repr(value)
    short = format(value, ".15g")
    if short != text and math.isfinite(value) and abs(float(short) - value) <= 2 * math.ulp(value):
        return short
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_number(text: str) -> int | float:
    """A decimal number in a string, as tonumber() reads it; raises ConversionError otherwise."""
    if not _DECIMAL.fullmatch(text):
        raise ConversionError(
            f'cannot convert "{text}" to number; given string must be a decimal representation of a number'
        )
    try:
        exact = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern above already rejects these
        raise ConversionError(f'cannot convert "{text}" to number') from None
    if exact == exact.to_integral_value():
        return int(exact)
    return float(exact)


def to_number(value: Any) -> Any:
    if is_unknown(value):
        return UNKNOWN
    if _is_number(value):
        return normalize_number(value)
    if isinstance(value, str):
        return parse_number(value)
    if value is None:
        raise ConversionError("a number is required, but the value is null")
    raise ConversionError(f"a number is required, got {type_name(value)}")


def to_string(value: Any) -> Any:
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return format_number(value)
    if value is None:
        raise ConversionError("a string is required, but the value is null")
    raise ConversionError(f"a string is required, got {type_name(value)}")


def to_bool(value: Any) -> Any:
    if is_unknown(value):
        return UNKNOWN
    if isinstance(value, bool):
        return value
    # cty also reads "1" and "0" as booleans (measured: tobool("1") is true in terraform 1.11).
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    if isinstance(value, str):
        raise ConversionError(
            f'cannot convert "{value}" to bool; only the strings "true", "false", "1" or "0" are allowed'
        )
    if value is None:
        raise ConversionError("a bool is required, but the value is null")
    raise ConversionError(f"a bool is required, got {type_name(value)}")


def type_name(value: Any) -> str:
    """The kind of a value in Terraform's words, for error messages."""
    if value is None:
        return "null"
    if is_unknown(value):
        return "unknown"
    primitive = primitive_kind(value)
    if primitive is not None:
        return primitive
    if isinstance(value, TfSet):
        return "set"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def values_equal(a: Any, b: Any) -> bool:
    """Terraform's ``==``: same kind and same content (a list equals a tuple holding the same).

    Callers decide about unknown values first: an unknown operand makes ``==`` itself unknown.
    """
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, TfSet) or isinstance(b, TfSet):
        if not (isinstance(a, TfSet) and isinstance(b, TfSet)) or len(a) != len(b):
            return False
        return all(any(values_equal(x, y) for y in b) for x in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return a is b


def equal_with_unknowns(left: Any, right: Any) -> Any:
    """Terraform's ``==`` on values that may hold unknowns (cty's Equals): true, false or UNKNOWN.

    A comparison with null is decided as soon as the other side is known as a whole, whatever it holds
    (``{a = unknown} != null`` is true); values whose known parts already differ in shape (kind,
    length, attribute names) are unequal; otherwise elements are compared in order (map and object
    keys sorted), and the first that is unknown makes the whole unknown.
    """
    if is_unknown(left) or is_unknown(right):
        # An unknown refined as not null is certainly not equal to null.
        if (left is None and definitely_not_null(right)) or (right is None and definitely_not_null(left)):
            return False
        unknown, other = (left, right) if is_unknown(left) else (right, left)
        if other is not None and not is_unknown(other) and not _may_become(unknown, other):
            return False
        return UNKNOWN
    if left is None or right is None:
        return left is None and right is None
    if not (contains_unknown(left) or contains_unknown(right)):
        return values_equal(left, right)
    if isinstance(left, TfSet) or isinstance(right, TfSet) or not _same_shape(left, right):
        return UNKNOWN if _same_shape(left, right) else False
    return _equal_elements(left, right)


def _may_become(unknown: UnknownValue, known: Any) -> bool:
    """Whether the unknown may turn out to be the known (non-null) value, as far as its refinements
    tell (cty's ValueRange.Includes): a value of another primitive type, or a string not starting
    with its known prefix, it cannot become."""
    if known.__class__ is Sensitive:
        known = known.value
    if isinstance(unknown.type, PrimitiveType) and primitive_kind(known) != unknown.type.name:
        return False
    low, high = unknown.number_range
    if _is_number(known) and not low <= known <= high:
        return False
    return not (unknown.prefix and isinstance(known, str) and not known.startswith(unknown.prefix))


def _same_shape(left: Any, right: Any) -> bool:
    """Whether the two could be of one type: an unknown part fits any."""
    if is_unknown(left) or is_unknown(right) or left is None or right is None:
        return True
    kind = primitive_kind(left)
    if kind is not None:
        return kind == primitive_kind(right)
    if isinstance(left, (list, tuple)):
        return (
            isinstance(right, (list, tuple))
            and isinstance(left, TfSet) == isinstance(right, TfSet)
            and len(left) == len(right)
            and all(_same_shape(a, b) for a, b in zip(left, right, strict=True))
        )
    if isinstance(left, dict):
        return (
            isinstance(right, dict)
            and left.keys() == right.keys()
            and all(_same_shape(left[k], right[k]) for k in left)
        )
    return False


def _equal_elements(left: Any, right: Any) -> Any:
    if isinstance(left, dict):
        pairs = [(left[k], right[k]) for k in sorted(left)]
    elif isinstance(left, (list, tuple)):
        pairs = list(zip(left, right, strict=True))
    else:
        return values_equal(left, right)
    for a, b in pairs:
        equal = equal_with_unknowns(a, b)
        if equal is not True:
            return equal
    return True


def primitive_kind(value: Any) -> str | None:
    """ "bool", "number" or "string" for a primitive value, else None."""
    if isinstance(value, bool):
        return "bool"
    if _is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


# --- conversion ------------------------------------------------------------------------------------------


def convert(value: Any, constraint: TypeConstraint) -> Any:
    """The value converted to the type, with optional() defaults filled in; raises ConversionError."""
    return _convert(value, constraint, "")


def _fail(path: str, message: str) -> ConversionError:
    return ConversionError(f"{path}{message}")


def _describe(t: TypeConstraint) -> str:
    if isinstance(t, PrimitiveType):
        return f"a {t.name}" if t.name != "bool" else "a bool"
    if isinstance(t, (ListType, SetType, MapType)):
        kind = type(t).__name__[:-4].lower()
        return f"{kind} of {t.element}"
    if isinstance(t, TupleType):
        return "a tuple"
    return "an object"


def _convert(value: Any, t: TypeConstraint, path: str) -> Any:
    if value is None or isinstance(t, AnyType):
        return value
    if is_unknown(value):
        # The plain unknown stays as it is (nothing known of it is lost); a refined one takes the type.
        return value if value is UNKNOWN else converted_unknown(value, t)
    if value.__class__ is Sensitive:  # a converted element keeps its mark (tolist, tomap)
        return Sensitive(_convert(value.value, t, path))
    if isinstance(t, PrimitiveType):
        try:
            if t.name == "string":
                if isinstance(value, (str, bool)) or _is_number(value):
                    return to_string(value)
            elif t.name == "number":
                if isinstance(value, str) or _is_number(value):
                    return to_number(value)
            elif isinstance(value, (str, bool)):
                return to_bool(value)
        except ConversionError as exc:
            raise _fail(path, str(exc)) from None
        raise _fail(path, f"{_describe(t)} is required, got {type_name(value)}")
    if isinstance(t, (ListType, SetType)):
        if not isinstance(value, (list, tuple)):
            raise _fail(path, f"{_describe(t)} is required, got {type_name(value)}")
        items = _convert_elements(list(value), t.element, path)
        return TfSet(items) if isinstance(t, SetType) else items
    if isinstance(t, TupleType):
        if not isinstance(value, (list, tuple)) or isinstance(value, TfSet):
            raise _fail(path, f"a tuple is required, got {type_name(value)}")
        if len(value) != len(t.elements):
            raise _fail(path, f"a tuple of {len(t.elements)} elements is required, got {len(value)}")
        return [
            _convert(v, et, f"{path}element {i}: ")
            for i, (v, et) in enumerate(zip(value, t.elements, strict=True))
        ]
    if isinstance(t, MapType):
        if not isinstance(value, dict):
            raise _fail(path, f"{_describe(t)} is required, got {type_name(value)}")
        keys = sorted(value)  # maps iterate in key order in terraform
        converted = _convert_elements([value[k] for k in keys], t.element, path, keys)
        element = t.element
        if has_any(element):
            element = unify([infer_type(v) for v in converted]) or element
        return TfMap(zip(keys, converted, strict=True), element)
    if isinstance(t, ObjectType):
        if not isinstance(value, dict):
            raise _fail(path, f"an object is required, got {type_name(value)}")
        optional = t.optional_attributes
        result: dict[str, Any] = {}
        for name, attribute_type in t.attributes:
            inner_path = f'{path}attribute "{name}": '
            if name not in value and name not in optional:
                raise _fail(path, f'attribute "{name}" is required')
            raw = value.get(name)
            if raw is None and name in optional:
                result[name] = optional[name].default
                continue
            result[name] = _convert(raw, attribute_type, inner_path)
        return result
    raise _fail(path, f"unsupported type {t}")  # pragma: no cover


def _convert_elements(
    items: list[Any], element: TypeConstraint, path: str, keys: list[str] | None = None
) -> list[Any]:
    def where(i: int) -> str:
        return f'{path}element "{keys[i]}": ' if keys is not None else f"{path}element {i}: "

    converted = [_convert(v, element, where(i)) for i, v in enumerate(items)]
    if not has_any(element):
        return converted
    # A collection holds one element type. Where the constraint leaves it open ("any"), cty decides it by
    # unifying the converted elements, then converts them all to it: list(any) of ["a", 1] is strings, and
    # map(list(any)) of {a = [1], b = ["x"]} is map(list(string)).
    unified = unify([infer_type(v) for v in converted])
    if unified is None:
        what = "map" if keys is not None else "list"
        raise _fail(path, f"all {what} elements must have the same type")
    if isinstance(unified, AnyType):
        return converted
    return [_convert(v, unified, where(i)) for i, v in enumerate(converted)]


__all__ = [
    "ANY",
    "BOOL",
    "NUMBER",
    "STRING",
    "AnyType",
    "ConversionError",
    "ListType",
    "MapType",
    "ObjectType",
    "OptionalAttribute",
    "PrimitiveType",
    "SetType",
    "TupleType",
    "TypeConstraint",
    "TypeSyntaxError",
    "convert",
    "convertible",
    "equal_with_unknowns",
    "format_number",
    "infer_type",
    "normalize_number",
    "object_type",
    "parse_type",
    "primitive_kind",
    "to_bool",
    "to_number",
    "to_string",
    "type_name",
    "unify",
    "values_equal",
]
