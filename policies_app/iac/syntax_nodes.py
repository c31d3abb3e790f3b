"""The syntax tree that both configuration syntaxes load into.

Native HCL (``.tf``/``.tofu``) and JSON (``.tf.json``/``.tofu.json``) files are both turned into these
nodes by the loader, so the evaluator and the dependency graph never know which syntax a block came
from. Nodes are plain slotted dataclasses: cheap to build, and picklable for the on-disk parse cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, frozen=True)
class Pos:
    file: str
    line: int
    column: int = 0


class Expr:
    """Base of every expression node; ``pos`` says where it starts."""

    __slots__ = ()
    pos: Pos


@dataclass(slots=True)
class Literal(Expr):
    value: Any  # None, bool, int, float or str; list/dict only for JSON-syntax literal arguments
    pos: Pos


@dataclass(slots=True)
class TemplateExpr(Expr):
    """A string template: literal text, interpolations and directives, always yielding a string.

    A template that is exactly one ``${...}`` is not a TemplateExpr: the parser returns the inner
    expression itself, because such a template yields the value unconverted.
    """

    parts: list[TemplatePart]
    pos: Pos


@dataclass(slots=True)
class Interpolation:
    expr: Expr


@dataclass(slots=True)
class IfDirective:
    condition: Expr
    then_parts: list[TemplatePart]
    else_parts: list[TemplatePart]


@dataclass(slots=True)
class ForDirective:
    key_var: str | None
    value_var: str
    collection: Expr
    body_parts: list[TemplatePart]


TemplatePart = str | Interpolation | IfDirective | ForDirective


@dataclass(slots=True)
class TupleExpr(Expr):
    items: list[Expr]
    pos: Pos


@dataclass(slots=True)
class ObjectExpr(Expr):
    """``{ key = value }``; a bare identifier key is a Literal string, ``(expr)`` a real expression."""

    items: list[tuple[Expr, Expr]]
    pos: Pos


@dataclass(slots=True)
class Reference(Expr):
    """A bare name at the root of a traversal: ``var``, ``local``, ``aws_instance``, ``count``, a for
    variable..."""

    name: str
    pos: Pos


@dataclass(slots=True)
class GetAttr(Expr):
    target: Expr
    name: str
    pos: Pos


@dataclass(slots=True)
class Index(Expr):
    target: Expr
    key: Expr
    pos: Pos


@dataclass(slots=True)
class SplatItem(Expr):
    """Stands for the current element inside a splat's ``each`` expression."""

    pos: Pos


@dataclass(slots=True)
class Splat(Expr):
    """``source[*].a.b`` (full) or ``source.*.a`` (attribute-only): ``each`` is evaluated per element
    with SplatItem standing for it."""

    source: Expr
    each: Expr
    full: bool
    pos: Pos


@dataclass(slots=True)
class FunctionCall(Expr):
    name: str
    args: list[Expr]
    expand_final: bool  # f(a, b...)
    pos: Pos


@dataclass(slots=True)
class Conditional(Expr):
    condition: Expr
    true_expr: Expr
    false_expr: Expr
    pos: Pos


@dataclass(slots=True)
class BinaryOp(Expr):
    op: str  # + - * / % == != < <= > >= && ||
    left: Expr
    right: Expr
    pos: Pos


@dataclass(slots=True)
class UnaryOp(Expr):
    op: str  # ! or -
    operand: Expr
    pos: Pos


@dataclass(slots=True)
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


@dataclass(slots=True)
class Attribute:
    name: str
    expr: Expr
    pos: Pos


@dataclass(slots=True)
class Body:
    attributes: dict[str, Attribute] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class Block:
    type: str
    labels: list[str]
    body: Body
    pos: Pos


@dataclass(slots=True)
class File:
    path: str
    body: Body


@dataclass(slots=True)
class TypeExpr(Expr):
    """A variable's ``type`` argument. ``text`` is the type expression's source (``list(object({a=string}))``)
    for types.parse_type(); ``expr`` is the same thing parsed as an ordinary expression when the
    syntax gave one. Used for ``variable.type`` in both syntaxes (JSON gives the text as a string)."""

    text: str
    pos: Pos
    expr: Expr | None = None
