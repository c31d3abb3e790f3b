"""JSON syntax files (``.tf.json``/``.tofu.json``) -> syntax_nodes.File, following OpenTofu's JSON rules.

The rules (see shared/seeds/opentofu-json-configuration-syntax.ru.txt): a string where an expression
is expected is a string template (a lone ``${...}`` yields the inner value); block labels are nested
object levels; a block type's value may be an object or an array of objects (to keep order or repeat
a block); ``"//"`` is a comment in block bodies and at the root but an ordinary key in expression
objects; some arguments are literal or static references instead of expressions (per block type).

Without provider schemas we cannot know which JSON objects inside a resource are nested blocks, so
they are attribute expressions, except the meta blocks (lifecycle, provisioner, connection, dynamic).

Positions: json.loads forgets them, so the document is read with json_positions.py, which keeps each
value's offset.
"""

from __future__ import annotations

from policies_app.iac import syntax_nodes
from policies_app.iac.hcl_native import parse_expression, parse_template, parse_traversal
from policies_app.iac.json_positions import JsonNode, JsonReader, plain_value
from policies_app.iac.template_syntax import ConfigSyntaxError

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
    def __init__(self, reader: JsonReader) -> None:
        self.r = reader
        self.path = reader.path

    def file(self, root: JsonNode) -> syntax_nodes.File:
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

    def locals_blocks(self, value: JsonNode, key_offset: int) -> list[syntax_nodes.Block]:
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
        self, block_type: str, value: JsonNode, schema: _Schema, key_offset: int
    ) -> list[syntax_nodes.Block]:
        """One property naming a block type -> its blocks (label levels, arrays, then bodies)."""
        out: list[syntax_nodes.Block] = []

        def expand(j: JsonNode, labels: list[str], offset: int) -> None:
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

    def body(self, obj: JsonNode, schema: _Schema) -> syntax_nodes.Body:
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

    def argument(self, j: JsonNode, mode: str) -> syntax_nodes.Expr:
        if mode == EXPR:
            return self.expr(j)
        pos = self.r.pos(j.offset)
        if mode == LITERAL:
            return syntax_nodes.Literal(plain_value(j), pos)
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

    def traversal(self, j: JsonNode) -> syntax_nodes.Expr:
        if j.kind != "string":
            raise self.r.error(j.offset, "expected a string holding a reference")
        line, column = self.r.line_col(j.offset)
        text = j.value
        if "${" in text:  # a template is accepted too, as HCL's JSON traversal reader does
            return parse_template(text, self.path, line, column + 1)
        return parse_traversal(text, self.path, line)

    def expr(self, j: JsonNode) -> syntax_nodes.Expr:
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
    reader = JsonReader(text, path)
    root = reader.read_document()
    return _Converter(reader).file(root)
