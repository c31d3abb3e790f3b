"""A JSON reader that keeps positions: json.loads forgets where each value was, which a configuration
error must name (file, line, column). Each value keeps its offset (string scanning itself is json's C
``scanstring``), and offsets become lines and columns with a bisect. Objects keep their keys' order and
duplicates, as OpenTofu's JSON syntax needs.
"""

from __future__ import annotations

import bisect
import re
from json.decoder import scanstring
from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.template_syntax import ConfigSyntaxError


class JsonNode:
    """A JSON value with where it starts. ``value`` is a python scalar, a list of JsonNode (array) or a
    list of (key, key_offset, JsonNode) (object, duplicates and order kept)."""

    __slots__ = ("kind", "value", "offset")

    def __init__(self, kind: str, value: Any, offset: int) -> None:
        self.kind = kind  # object | array | string | number | bool | null
        self.value = value
        self.offset = offset


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")


class JsonReader:
    """Reads one JSON document, keeping where each value starts; errors name the file, line and column."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_left(self.newlines, offset)
        start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1

    def pos(self, offset: int) -> syntax_nodes.Pos:
        line, column = self.line_col(offset)
        return syntax_nodes.Pos(self.path, line, column)

    def error(self, offset: int, message: str) -> ConfigSyntaxError:
        line, column = self.line_col(offset)
        return ConfigSyntaxError(self.path, line, column, message)

    def skip(self, i: int) -> int:
        return _WS.match(self.text, i).end()

    def read_document(self) -> JsonNode:
        i = self.skip(0)
        value, i = self.read_value(i)
        i = self.skip(i)
        if i != len(self.text):
            raise self.error(i, "extra data after the JSON value")
        return value

    def read_value(self, i: int) -> tuple[JsonNode, int]:
        text = self.text
        if i >= len(text):
            raise self.error(i, "unexpected end of JSON input")
        ch = text[i]
        if ch == "{":
            return self.read_object(i)
        if ch == "[":
            return self.read_array(i)
        if ch == '"':
            try:
                s, end = scanstring(text, i + 1)
            except ValueError as exc:
                raise self.error(i, f"invalid JSON string: {exc.msg}") from None
            return JsonNode("string", s, i), end
        if text.startswith("true", i):
            return JsonNode("bool", True, i), i + 4
        if text.startswith("false", i):
            return JsonNode("bool", False, i), i + 5
        if text.startswith("null", i):
            return JsonNode("null", None, i), i + 4
        m = _NUMBER.match(text, i)
        if m:
            if m.group(1) or m.group(2):
                number: int | float = float(m.group(0))
                if number.is_integer() and abs(number) < 2**63:
                    number = int(number)  # Terraform numbers: whole values are ints (values.py)
            else:
                number = int(m.group(0))
            return JsonNode("number", number, i), m.end()
        raise self.error(i, f"unexpected character {ch!r} in JSON")

    def read_object(self, start: int) -> tuple[JsonNode, int]:
        text = self.text
        items: list[tuple[str, int, JsonNode]] = []
        i = self.skip(start + 1)
        if text.startswith("}", i):
            return JsonNode("object", items, start), i + 1
        while True:
            if not text.startswith('"', i):
                raise self.error(i, "expected a property name in double quotes")
            try:
                key, j = scanstring(text, i + 1)
            except ValueError as exc:
                raise self.error(i, f"invalid JSON string: {exc.msg}") from None
            j = self.skip(j)
            if not text.startswith(":", j):
                raise self.error(j, "expected ':' after a property name")
            value, j = self.read_value(self.skip(j + 1))
            items.append((key, i, value))
            j = self.skip(j)
            if text.startswith(",", j):
                i = self.skip(j + 1)
                continue
            if text.startswith("}", j):
                return JsonNode("object", items, start), j + 1
            raise self.error(j, "expected ',' or '}' in object")

    def read_array(self, start: int) -> tuple[JsonNode, int]:
        text = self.text
        items: list[JsonNode] = []
        i = self.skip(start + 1)
        if text.startswith("]", i):
            return JsonNode("array", items, start), i + 1
        while True:
            value, i = self.read_value(i)
            items.append(value)
            i = self.skip(i)
            if text.startswith(",", i):
                i = self.skip(i + 1)
                continue
            if text.startswith("]", i):
                return JsonNode("array", items, start), i + 1
            raise self.error(i, "expected ',' or ']' in array")


def plain_value(j: JsonNode) -> Any:
    """The raw python value of a JSON value (for literal arguments)."""
    if j.kind == "object":
        return {k: plain_value(v) for k, _o, v in j.value}
    if j.kind == "array":
        return [plain_value(v) for v in j.value]
    return j.value
