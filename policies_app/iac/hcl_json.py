"""JSON syntax files (``.tf.json``/``.tofu.json``) -> syntax_nodes.File, following OpenTofu's JSON rules.

The rules (see shared/seeds/opentofu-json-configuration-syntax.ru.txt): a string where an expression
is expected is a string template (a lone ``${...}`` yields the inner value); block labels are nested
object levels; a block type's value may be an object or an array of objects (to keep order or repeat
a block); ``"//"`` is a comment in block bodies and at the root but an ordinary key in expression
objects; some arguments are literal or static references instead of expressions (per block type).

Without provider schemas we cannot know which JSON objects inside a resource are nested blocks, so
they are attribute expressions, except the meta blocks (lifecycle, provisioner, connection, dynamic).

Positions: json.loads forgets them, so a small scanner here records each value's offset (string
scanning itself is json's C ``scanstring``) and offsets are turned into line/column with a bisect.
"""

from __future__ import annotations

import bisect
import re
from json.decoder import scanstring
from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.hcl_native import parse_expression, parse_template, parse_traversal
from policies_app.iac.template_syntax import ConfigSyntaxError

# --------------------------------------------------------------------------------------------------
# Position-keeping JSON reader
# --------------------------------------------------------------------------------------------------


class _J:
    """A JSON value with where it starts. ``value`` is a python scalar, a list of _J (array) or a
    list of (key, key_offset, _J) (object, duplicates and order kept)."""

    __slots__ = ("kind", "value", "offset")

    def __init__(self, kind: str, value: Any, offset: int) -> None:
        self.kind = kind  # object | array | string | number | bool | null
        self.value = value
        self.offset = offset


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")


class _Reader:
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

    def read_document(self) -> _J:
        i = self.skip(0)
        value, i = self.read_value(i)
        i = self.skip(i)
        if i != len(self.text):
            raise self.error(i, "extra data after the JSON value")
        return value

    def read_value(self, i: int) -> tuple[_J, int]:
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
            return _J("string", s, i), end
        if text.startswith("true", i):
            return _J("bool", True, i), i + 4
        if text.startswith("false", i):
            return _J("bool", False, i), i + 5
        if text.startswith("null", i):
            return _J("null", None, i), i + 4
        m = _NUMBER.match(text, i)
        if m:
            if m.group(1) or m.group(2):
                number: int | float = float(m.group(0))
                if number.is_integer() and abs(number) < 2**63:
                    number = int(number)  # Terraform numbers: whole values are ints (values.py)
            else:
                number = int(m.group(0))
            return _J("number", number, i), m.end()
        raise self.error(i, f"unexpected character {ch!r} in JSON")

    def read_object(self, start: int) -> tuple[_J, int]:
        text = self.text
        items: list[tuple[str, int, _J]] = []
        i = self.skip(start + 1)
        if text.startswith("}", i):
            return _J("object", items, start), i + 1
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
                return _J("object", items, start), j + 1
            raise self.error(j, "expected ',' or '}' in object")

    def read_array(self, start: int) -> tuple[_J, int]:
        text = self.text
        items: list[_J] = []
        i = self.skip(start + 1)
        if text.startswith("]", i):
            return _J("array", items, start), i + 1
        while True:
            value, i = self.read_value(i)
            items.append(value)
            i = self.skip(i)
            if text.startswith(",", i):
                i = self.skip(i + 1)
                continue
            if text.startswith("]", i):
                return _J("array", items, start), i + 1
            raise self.error(i, "expected ',' or ']' in array")


def _plain(j: _J) -> Any:
    """The raw python value of a JSON value (for literal arguments)."""
    if j.kind == "object":
        return {k: _plain(v) for k, _o, v in j.value}
    if j.kind == "array":
        return [_plain(v) for v in j.value]
    return j.value


# --------------------------------------------------------------------------------------------------
# Block schemas: what each JSON property means in each block type
# --------------------------------------------------------------------------------------------------

# attribute modes
EXPR = "expr"  # an expression: strings are templates
LITERAL = "literal"  # the raw JSON value, as a Literal (dict/list values allowed)
TYPE = "type"  # a type expression as a string -> TypeExpr
TRAVERSAL = "traversal"  # one static reference in a string
TRAVERSALS = "traversals"  # an array of static references
KEYWORD_OR_TRAVERSALS = "keyword_or_traversals"  # ignore_changes: "all" or an array of references
PROVIDER_MAP = "provider_map"  # module providers: {"aws": "aws.usw1"}


class _Schema:
    """How to read one block type's body. ``other`` is the mode for properties not listed; with
    ``other_blocks`` set, unlisted object values are nested blocks read with that schema instead."""

    def __init__(
        self,
        labels: int = 0,
        attrs: dict[str, str] | None = None,
        blocks: dict[str, _Schema] | None = None,
        other: str = EXPR,
        other_blocks: _Schema | None = None,
    ) -> None:
        self.labels = labels
        self.attrs = attrs or {}
        self.blocks = blocks or {}
        self.other = other
        self.other_blocks = other_blocks


_CONDITION = _Schema()  # precondition/postcondition/validation/assert: condition + error_message
_CONNECTION = _Schema(attrs={"type": LITERAL})
_PROVISIONER = _Schema(
    labels=1, attrs={"when": TRAVERSAL, "on_failure": TRAVERSAL}, blocks={"connection": _CONNECTION}
)
_LIFECYCLE = _Schema(
    attrs={"ignore_changes": KEYWORD_OR_TRAVERSALS, "replace_triggered_by": TRAVERSALS},
    blocks={"precondition": _CONDITION, "postcondition": _CONDITION},
)
_DYNAMIC_CONTENT = _Schema()
_DYNAMIC = _Schema(labels=1, attrs={"iterator": TRAVERSAL}, blocks={"content": _DYNAMIC_CONTENT})
_DYNAMIC.blocks["dynamic"] = _DYNAMIC
_DYNAMIC_CONTENT.blocks["dynamic"] = _DYNAMIC
_RESOURCE = _Schema(
    labels=2,
    attrs={"depends_on": TRAVERSALS, "provider": TRAVERSAL},
    blocks={
        "lifecycle": _LIFECYCLE,
        "provisioner": _PROVISIONER,
        "connection": _CONNECTION,
        "dynamic": _DYNAMIC,
    },
)
_DATA = _Schema(
    labels=2,
    attrs={"depends_on": TRAVERSALS, "provider": TRAVERSAL},
    blocks={"lifecycle": _LIFECYCLE, "dynamic": _DYNAMIC},
)
_BACKEND = _Schema(labels=1)
_LITERAL_BLOCK = _Schema(other=LITERAL)
_ENCRYPTION_REF = _Schema(attrs={"method": TRAVERSAL}, blocks={})
_ENCRYPTION_REF.blocks["fallback"] = _ENCRYPTION_REF
_ENCRYPTION = _Schema(
    blocks={
        "key_provider": _Schema(labels=2, attrs={"chain": TRAVERSAL}),
        "method": _Schema(labels=2, attrs={"keys": TRAVERSAL}),
        "state": _ENCRYPTION_REF,
        "plan": _ENCRYPTION_REF,
        "remote_state_data_sources": _Schema(
            blocks={
                "default": _ENCRYPTION_REF,
                "remote_state_data_source": _Schema(
                    labels=1, attrs={"method": TRAVERSAL}, blocks={"fallback": _ENCRYPTION_REF}
                ),
            }
        ),
    }
)
_TERRAFORM = _Schema(
    other=LITERAL,
    blocks={
        "backend": _BACKEND,
        "cloud": _Schema(other=LITERAL, blocks={"workspaces": _LITERAL_BLOCK}),
        "required_providers": _LITERAL_BLOCK,
        "provider_meta": _Schema(labels=1),
        "encryption": _ENCRYPTION,
    },
)
_VARIABLE = _Schema(
    labels=1,
    attrs={"type": TYPE, "default": LITERAL, "description": LITERAL},
    blocks={"validation": _CONDITION},
)
_OUTPUT = _Schema(
    labels=1,
    attrs={"description": LITERAL, "sensitive": LITERAL, "depends_on": TRAVERSALS},
    blocks={"precondition": _CONDITION},
)
_MODULE = _Schema(
    labels=1,
    attrs={"source": LITERAL, "version": LITERAL, "providers": PROVIDER_MAP, "depends_on": TRAVERSALS},
)
_PROVIDER = _Schema(labels=1, attrs={"alias": LITERAL, "version": LITERAL})
_CHECK = _Schema(labels=1, blocks={"data": _DATA, "assert": _CONDITION})
_MOVED = _Schema(attrs={"from": TRAVERSAL, "to": TRAVERSAL})
_IMPORT = _Schema(attrs={"to": TRAVERSAL, "provider": TRAVERSAL})
_REMOVED = _Schema(
    attrs={"from": TRAVERSAL},
    blocks={"lifecycle": _LIFECYCLE, "provisioner": _PROVISIONER, "connection": _CONNECTION},
)

_ROOT: dict[str, _Schema] = {
    "terraform": _TERRAFORM,
    "variable": _VARIABLE,
    "output": _OUTPUT,
    "module": _MODULE,
    "provider": _PROVIDER,
    "resource": _RESOURCE,
    "data": _DATA,
    "ephemeral": _RESOURCE,
    "check": _CHECK,
    "moved": _MOVED,
    "import": _IMPORT,
    "removed": _REMOVED,
}


# --------------------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------------------


class _Converter:
    def __init__(self, reader: _Reader) -> None:
        self.r = reader
        self.path = reader.path

    def file(self, root: _J) -> syntax_nodes.File:
        if root.kind != "object":
            raise self.r.error(root.offset, "the root of a JSON configuration file must be an object")
        blocks: list[syntax_nodes.Block] = []
        for key, key_offset, value in root.value:
            if key == "//":
                continue
            if key == "locals":
                blocks.extend(self.locals_blocks(value, key_offset))
                continue
            schema = _ROOT.get(key)
            if schema is None:
                raise self.r.error(key_offset, f'unsupported block type "{key}"')
            blocks.extend(self.blocks(key, value, schema, key_offset))
        return syntax_nodes.File(self.path, syntax_nodes.Body({}, blocks))

    def locals_blocks(self, value: _J, key_offset: int) -> list[syntax_nodes.Block]:
        out = []
        for obj in value.value if value.kind == "array" else [value]:
            if obj.kind != "object":
                raise self.r.error(obj.offset, "locals must be a JSON object of expressions")
            attrs: dict[str, syntax_nodes.Attribute] = {}
            for name, offset, expr in obj.value:
                if name == "//":
                    continue
                self._check_duplicate(attrs, name, offset)
                attrs[name] = syntax_nodes.Attribute(name, self.expr(expr), self.r.pos(offset))
            out.append(syntax_nodes.Block("locals", [], syntax_nodes.Body(attrs, []), self.r.pos(key_offset)))
        return out

    def blocks(
        self, block_type: str, value: _J, schema: _Schema, key_offset: int
    ) -> list[syntax_nodes.Block]:
        """One property naming a block type -> its blocks (label levels, arrays, then bodies)."""
        out: list[syntax_nodes.Block] = []

        def expand(j: _J, labels: list[str], offset: int) -> None:
            if j.kind == "array":
                for item in j.value:
                    expand(item, labels, item.offset)
                return
            if j.kind != "object":
                raise self.r.error(
                    j.offset,
                    f'a "{block_type}" block must be a JSON object'
                    + (" (one level per label)" if schema.labels else ""),
                )
            if len(labels) < schema.labels:
                for label, label_offset, inner in j.value:
                    if label == "//":
                        continue
                    expand(inner, labels + [label], label_offset)
                return
            out.append(syntax_nodes.Block(block_type, labels, self.body(j, schema), self.r.pos(offset)))

        expand(value, [], key_offset)
        return out

    def body(self, obj: _J, schema: _Schema) -> syntax_nodes.Body:
        attrs: dict[str, syntax_nodes.Attribute] = {}
        blocks: list[syntax_nodes.Block] = []
        for name, offset, value in obj.value:
            if name == "//":  # a comment in a block body
                continue
            nested = schema.blocks.get(name)
            if nested is None and schema.other_blocks is not None and value.kind in ("object", "array"):
                nested = schema.other_blocks
            if nested is not None and name not in schema.attrs:
                blocks.extend(self.blocks(name, value, nested, offset))
                continue
            mode = schema.attrs.get(name, schema.other)
            self._check_duplicate(attrs, name, offset)
            attrs[name] = syntax_nodes.Attribute(name, self.argument(value, mode), self.r.pos(offset))
        return syntax_nodes.Body(attrs, blocks)

    def _check_duplicate(self, attrs: dict, name: str, offset: int) -> None:
        if name in attrs:
            raise self.r.error(
                offset,
                f'attribute "{name}" is already defined in this block (first at line {attrs[name].pos.line})',
            )

    def argument(self, j: _J, mode: str) -> syntax_nodes.Expr:
        if mode == EXPR:
            return self.expr(j)
        pos = self.r.pos(j.offset)
        if mode == LITERAL:
            return syntax_nodes.Literal(_plain(j), pos)
        if mode == TYPE:
            if j.kind != "string":
                raise self.r.error(j.offset, "a variable type must be a string holding a type expression")
            try:  # the parsed form too, as the native syntax gives it; the text is what counts
                parsed = parse_expression(j.value, self.path, pos.line, pos.column + 1)
            except ConfigSyntaxError:
                parsed = None
            return syntax_nodes.TypeExpr(j.value, pos, parsed)
        if mode == TRAVERSAL:
            return self.traversal(j)
        if mode == TRAVERSALS:
            if j.kind != "array":
                raise self.r.error(j.offset, "expected an array of reference strings")
            return syntax_nodes.TupleExpr([self.traversal(item) for item in j.value], pos)
        if mode == KEYWORD_OR_TRAVERSALS:
            if j.kind == "string":  # "all"
                return self.traversal(j)
            return self.argument(j, TRAVERSALS)
        if mode == PROVIDER_MAP:
            if j.kind != "object":
                raise self.r.error(j.offset, "providers must be an object of provider addresses")
            items = [(syntax_nodes.Literal(k, self.r.pos(o)), self.traversal(v)) for k, o, v in j.value]
            return syntax_nodes.ObjectExpr(items, pos)
        raise AssertionError(mode)  # pragma: no cover

    def traversal(self, j: _J) -> syntax_nodes.Expr:
        if j.kind != "string":
            raise self.r.error(j.offset, "expected a string holding a reference")
        line, column = self.r.line_col(j.offset)
        text = j.value
        if "${" in text:  # a template is accepted too, as HCL's JSON traversal reader does
            return parse_template(text, self.path, line, column + 1)
        return parse_traversal(text, self.path, line)

    def expr(self, j: _J) -> syntax_nodes.Expr:
        kind = j.kind
        if kind == "string":
            line, column = self.r.line_col(j.offset)
            return parse_template(j.value, self.path, line, column + 1)
        if kind == "object":
            items = []
            for key, key_offset, value in j.value:
                line, column = self.r.line_col(key_offset)
                # keys of expression objects are templates too; "//" is an ordinary key here
                items.append((parse_template(key, self.path, line, column + 1), self.expr(value)))
            return syntax_nodes.ObjectExpr(items, self.r.pos(j.offset))
        if kind == "array":
            return syntax_nodes.TupleExpr([self.expr(item) for item in j.value], self.r.pos(j.offset))
        return syntax_nodes.Literal(j.value, self.r.pos(j.offset))


def parse_json(text: str, path: str) -> syntax_nodes.File:
    """Parse the text of a JSON-syntax configuration file; raises ConfigSyntaxError on bad JSON or on
    a structure the JSON syntax does not allow."""
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = _Reader(text, path)
    root = reader.read_document()
    return _Converter(reader).file(root)
