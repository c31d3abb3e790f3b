"""The syntax tree that both configuration syntaxes load into.

Native HCL (``.tf``/``.tofu``) and JSON (``.tf.json``/``.tofu.json``) files are both turned into these
nodes by the loader, so the evaluator and the dependency graph never know which syntax a block came
from. Nodes are plain slotted classes: cheap to build, and picklable for the on-disk parse cache.

They are records (records.py), not dataclasses (10 ms of every start for this module alone): they
behave as the dataclasses did, and their ``__slots__`` are their fields in order (parse_cache pickles
by them).

Why this module is long: one written-out ``__init__`` per node class (see above).
"""

from __future__ import annotations

from typing import Any

from policies_app.iac.records import Record


class Pos:
    """Where a node starts: file, line, column (column 0 when unknown).

    A plain slotted class, not a frozen dataclass: a parse creates one per node (48,000 for 548 KB) and
    the cache's unpickling as many again; a frozen dataclass's ``__init__`` (``object.__setattr__`` per
    field) costs ~1 us each, this one ~0.2 us. Equality and hash are the frozen dataclass's (same class,
    same three fields); positions are never changed after they are made (nothing assigns to them).
    """

    __slots__ = ("file", "line", "column")

    def __init__(self, file: str, line: int, column: int = 0) -> None:
        self.file = file
        self.line = line
        self.column = column

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Pos:
            return NotImplemented
        return self.file == other.file and self.line == other.line and self.column == other.column

    def __hash__(self) -> int:
        return hash((self.file, self.line, self.column))

    def __repr__(self) -> str:
        return f"Pos(file={self.file!r}, line={self.line!r}, column={self.column!r})"


class Expr(Record):
    """Base of every expression node; ``pos`` says where it starts."""

    __slots__ = ()
    pos: Pos


class Literal(Expr):
    """A literal value."""

    value: Any  # None, bool, int, float or str; list/dict only for JSON-syntax literal arguments
    pos: Pos

    __slots__ = ("value", "pos")

    def __init__(self, value: Any, pos: Pos) -> None:
        self.value = value
        self.pos = pos


class TemplateExpr(Expr):
    """A string template: literal text, interpolations and directives, always yielding a string.

    A template that is exactly one ``${...}`` is not a TemplateExpr: the parser returns the inner
    expression itself, because such a template yields the value unconverted.
    """

    parts: list[TemplatePart]
    pos: Pos

    __slots__ = ("parts", "pos")

    def __init__(self, parts: list[TemplatePart], pos: Pos) -> None:
        self.parts = parts
        self.pos = pos


class Interpolation(Record):
    """A template's ``${expr}``."""

    expr: Expr

    __slots__ = ("expr",)

    def __init__(self, expr: Expr) -> None:
        self.expr = expr


class IfDirective(Record):
    """A template's ``%{if}...%{else}...%{endif}``."""

    condition: Expr
    then_parts: list[TemplatePart]
    else_parts: list[TemplatePart]

    __slots__ = ("condition", "then_parts", "else_parts")

    def __init__(
        self, condition: Expr, then_parts: list[TemplatePart], else_parts: list[TemplatePart]
    ) -> None:
        self.condition = condition
        self.then_parts = then_parts
        self.else_parts = else_parts


class ForDirective(Record):
    """A template's ``%{for k, v in coll}...%{endfor}``."""

    key_var: str | None
    value_var: str
    collection: Expr
    body_parts: list[TemplatePart]

    __slots__ = ("key_var", "value_var", "collection", "body_parts")

    def __init__(
        self, key_var: str | None, value_var: str, collection: Expr, body_parts: list[TemplatePart]
    ) -> None:
        self.key_var = key_var
        self.value_var = value_var
        self.collection = collection
        self.body_parts = body_parts


TemplatePart = str | Interpolation | IfDirective | ForDirective


class TupleExpr(Expr):
    """``[a, b, ...]``."""

    items: list[Expr]
    pos: Pos

    __slots__ = ("items", "pos")

    def __init__(self, items: list[Expr], pos: Pos) -> None:
        self.items = items
        self.pos = pos


class ObjectExpr(Expr):
    """``{ key = value }``; a bare identifier key is a Literal string, ``(expr)`` a real expression."""

    items: list[tuple[Expr, Expr]]
    pos: Pos

    __slots__ = ("items", "pos")

    def __init__(self, items: list[tuple[Expr, Expr]], pos: Pos) -> None:
        self.items = items
        self.pos = pos


class Reference(Expr):
    """A bare name at the root of a traversal: ``var``, ``local``, ``aws_instance``, ``count``, a for
    variable..."""

    name: str
    pos: Pos

    __slots__ = ("name", "pos")

    def __init__(self, name: str, pos: Pos) -> None:
        self.name = name
        self.pos = pos


class GetAttr(Expr):
    """``target.name``."""

    target: Expr
    name: str
    pos: Pos

    __slots__ = ("target", "name", "pos")

    def __init__(self, target: Expr, name: str, pos: Pos) -> None:
        self.target = target
        self.name = name
        self.pos = pos


class Index(Expr):
    """``target[key]`` (also the legacy ``target.0``)."""

    target: Expr
    key: Expr
    pos: Pos

    __slots__ = ("target", "key", "pos")

    def __init__(self, target: Expr, key: Expr, pos: Pos) -> None:
        self.target = target
        self.key = key
        self.pos = pos


class SplatItem(Expr):
    """Stands for the current element inside a splat's ``each`` expression."""

    pos: Pos

    __slots__ = ("pos",)

    def __init__(self, pos: Pos) -> None:
        self.pos = pos


class Splat(Expr):
    """``source[*].a.b`` (full) or ``source.*.a`` (attribute-only): ``each`` is evaluated per element
    with SplatItem standing for it."""

    source: Expr
    each: Expr
    full: bool
    pos: Pos

    __slots__ = ("source", "each", "full", "pos")

    def __init__(self, source: Expr, each: Expr, full: bool, pos: Pos) -> None:
        self.source = source
        self.each = each
        self.full = full
        self.pos = pos


class FunctionCall(Expr):
    """``name(args...)``, ``provider::ns::name(...)``."""

    name: str
    args: list[Expr]
    expand_final: bool  # f(a, b...)
    pos: Pos

    __slots__ = ("name", "args", "expand_final", "pos")

    def __init__(self, name: str, args: list[Expr], expand_final: bool, pos: Pos) -> None:
        self.name = name
        self.args = args
        self.expand_final = expand_final
        self.pos = pos


class Conditional(Expr):
    """``condition ? true_expr : false_expr``."""

    condition: Expr
    true_expr: Expr
    false_expr: Expr
    pos: Pos

    __slots__ = ("condition", "true_expr", "false_expr", "pos")

    def __init__(self, condition: Expr, true_expr: Expr, false_expr: Expr, pos: Pos) -> None:
        self.condition = condition
        self.true_expr = true_expr
        self.false_expr = false_expr
        self.pos = pos


class BinaryOp(Expr):
    """``left op right``."""

    op: str  # + - * / % == != < <= > >= && ||
    left: Expr
    right: Expr
    pos: Pos

    __slots__ = ("op", "left", "right", "pos")

    def __init__(self, op: str, left: Expr, right: Expr, pos: Pos) -> None:
        self.op = op
        self.left = left
        self.right = right
        self.pos = pos


class UnaryOp(Expr):
    """``!operand`` or ``-operand``."""

    op: str  # ! or -
    operand: Expr
    pos: Pos

    __slots__ = ("op", "operand", "pos")

    def __init__(self, op: str, operand: Expr, pos: Pos) -> None:
        self.op = op
        self.operand = operand
        self.pos = pos


class ForExpr(Expr):
    """``[for k, v in coll : value if cond]`` (key_expr None) or ``{for k, v in coll : key => value...}``."""

    key_var: str | None
    value_var: str
    collection: Expr
    key_expr: Expr | None
    value_expr: Expr
    condition: Expr | None
    grouping: bool
    pos: Pos

    __slots__ = (
        "key_var",
        "value_var",
        "collection",
        "key_expr",
        "value_expr",
        "condition",
        "grouping",
        "pos",
    )

    def __init__(
        self,
        key_var: str | None,
        value_var: str,
        collection: Expr,
        key_expr: Expr | None,
        value_expr: Expr,
        condition: Expr | None,
        grouping: bool,
        pos: Pos,
    ) -> None:
        self.key_var = key_var
        self.value_var = value_var
        self.collection = collection
        self.key_expr = key_expr
        self.value_expr = value_expr
        self.condition = condition
        self.grouping = grouping
        self.pos = pos


class Attribute(Record):
    """A body's ``name = expr``."""

    name: str
    expr: Expr
    pos: Pos

    __slots__ = ("name", "expr", "pos")

    def __init__(self, name: str, expr: Expr, pos: Pos) -> None:
        self.name = name
        self.expr = expr
        self.pos = pos


class Body(Record):
    """A file's or block's attributes and nested blocks."""

    attributes: dict[str, Attribute]
    blocks: list[Block]

    __slots__ = ("attributes", "blocks")

    def __init__(
        self, attributes: dict[str, Attribute] | None = None, blocks: list[Block] | None = None
    ) -> None:
        self.attributes = dict() if attributes is None else attributes
        self.blocks = list() if blocks is None else blocks


class Block(Record):
    """``type "label"... { body }``."""

    type: str
    labels: list[str]
    body: Body
    pos: Pos

    __slots__ = ("type", "labels", "body", "pos")

    def __init__(self, type: str, labels: list[str], body: Body, pos: Pos) -> None:
        self.type = type
        self.labels = labels
        self.body = body
        self.pos = pos


class File(Record):
    """One parsed configuration file."""

    path: str
    body: Body

    __slots__ = ("path", "body")

    def __init__(self, path: str, body: Body) -> None:
        self.path = path
        self.body = body


class TypeExpr(Expr):
    """A variable's ``type`` argument. ``text`` is the type expression's source (``list(object({a=string}))``)
    for types.parse_type(); ``expr`` is the same thing parsed as an ordinary expression when the
    syntax gave one. Used for ``variable.type`` in both syntaxes (JSON gives the text as a string)."""

    text: str
    pos: Pos
    expr: Expr | None

    __slots__ = ("text", "pos", "expr")

    def __init__(self, text: str, pos: Pos, expr: Expr | None = None) -> None:
        self.text = text
        self.pos = pos
        self.expr = expr
