"""Native syntax -> syntax trees, on top of python-hcl2's Lark grammar: files (``.tf``/``.tofu``), and
expressions, string templates and references given as text (-var values, tfvars, JSON strings).

python-hcl2's own pipeline (Lark tree with positions, then its rule objects, then a dict of expression
TEXT) is slow and loses the structure we need. We reuse only its grammar (and its post-lexer's rule):
the LALR parser is generated from it at build time (hcl_parser_build.py writes hcl_lalr.py, Lark's
standalone parser), so no process reads, analyses or loads a grammar (1-2 s on a machine without
Lark's table cache) nor imports Lark; the parser calls our callbacks while it parses (``transformer=``
on a LALR parser): no intermediate tree is built and no second walk is needed. Positions come from the tokens,
so ``propagate_positions`` (which doubles the parse time) stays off.

That grammar is the reference; the fast path is hcl_descent.py, a hand-written parser that builds the
same nodes about 7x faster and hands every text it does not handle (and every syntax error) to the LALR
parser (``run_parser``), which therefore is imported only when needed.

Why this module is long: one grammar, one converter. Lark calls a method of ``_Converter`` for each
rule of the grammar while it parses (most of this module), and the parser's construction, its syntax
error messages and the entry points share the converter's state and its lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.template_syntax import (
    ConfigSyntaxError,
    TemplateMarker,
    assemble_template,
    parse_template_text,
    unescape_quoted,
)

# The generated parser is imported on first parse only: a run served entirely from the parse cache never
# needs it. ``Token`` is rebound then; until then nothing can produce a token.
Token: Any = type("_NoTokenYet", (), {})


# --------------------------------------------------------------------------------------------------
# Parser construction
# --------------------------------------------------------------------------------------------------

_parser_lock = threading.Lock()
# The converter holds the state of the parse in progress, so one parse runs at a time per process;
# re-entrant because a heredoc's interpolations are parsed while its file is being parsed.
_parse_lock = threading.RLock()
_parser: Any = None
_converter: _Converter | None = None


def grammar_text() -> str:
    """python-hcl2's grammar with the changes HCL needs (read at build time only: hcl_parser_build.py
    generates the parser from it)."""
    import hcl2  # imported lazily: only its grammar file is needed

    with open(os.path.join(os.path.dirname(hcl2.__file__), "hcl2.lark"), encoding="utf-8") as f:
        grammar = f.read()
    # python-hcl2 8.1.4 has no strip markers in interpolations ("${~ x ~}"), which HCL allows; add them
    # (if its grammar changes shape, the replace is a no-op).
    grammar = grammar.replace(
        "interpolation: INTERP_START expression RBRACE",
        "interpolation: INTERP_START STRIP_MARKER? expression STRIP_MARKER? RBRACE",
    )
    # Its function names are one word or provider::NS::NAME; Terraform also has core::NAME (the
    # builtins, namespaced). Accept any number of "::" parts.
    grammar = grammar.replace(
        "function_call : identifier (COLONS identifier COLONS identifier)? LPAR",
        "function_call : identifier (COLONS identifier)* LPAR",
    )
    # HCL allows spaces after a heredoc's closing marker ("EOT  "), which its grammar does not; without
    # them the heredoc would run on to the next marker in the file.
    for group in ("heredoc", "heredoc_trim"):
        grammar = grammar.replace(f"(?P={group})\\r?\\n/", f"(?P={group})[ \\t]*\\r?\\n/")
    return grammar


# Operators a newline before them continues the line into (python-hcl2's postlexer, whose module imports
# all of Lark): not MINUS, which also starts a negative literal on the next line.
OPERATOR_TYPES = frozenset(
    {"DOUBLE_EQ", "NEQ", "LT", "GT", "LEQ", "GEQ", "ASTERISK", "SLASH", "PERCENT", "DOUBLE_AMP"}
    | {"DOUBLE_PIPE", "PLUS", "QMARK"}
)


class _PostLexer:
    """Merges a newline (or comment) into the binary operator that follows it, which an LALR parser
    could not tell from the end of a statement (as python-hcl2's PostLexer does)."""

    always_accept = ()

    def process(self, stream):
        pending = None
        for token in stream:
            if token.type == "NL_OR_COMMENT":
                if pending is not None:
                    yield pending
                pending = token
                continue
            if pending is not None:
                if token.type in OPERATOR_TYPES:
                    token = token.update(value=str(pending) + str(token))
                else:
                    yield pending
                pending = None
            yield token
        if pending is not None:
            yield pending


def get_parser() -> tuple[Any, _Converter]:
    """The process-wide parser and its converter. The parser is Lark's standalone LALR parser generated
    at build time (hcl_lalr.py): its tables are loaded, no grammar is read or analysed at start."""
    global _parser, _converter, Token
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                from policies_app.iac import hcl_lalr

                Token = hcl_lalr.Token
                converter = _Converter()
                parser = hcl_lalr.Lark_StandAlone(postlex=_PostLexer(), transformer=converter)
                _converter = converter
                _parser = parser
    assert _converter is not None
    return _parser, _converter


# --------------------------------------------------------------------------------------------------
# The converter Lark calls while parsing
# --------------------------------------------------------------------------------------------------

_LITERAL_WORDS = {"true": True, "false": False, "null": None}
_BINARY_OPS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%")


class _Converter:
    """Builds ast nodes straight from Lark's reductions (Lark looks callbacks up by rule name, so no
    Transformer base class is needed). State describes the current parse and is saved/restored around
    nested parses (a heredoc's interpolations are parsed while its file is)."""

    def __init__(self) -> None:
        self.file = "<expr>"
        self.line_offset = 0
        self.first_col_offset = 0
        self.text = ""
        self.paren_ids: set[int] = set()
        self.attr_src: dict[int, tuple[int, int]] = {}

    # position of a token, shifted when the text being parsed starts inside a larger file
    def _pos(self, tok: Token) -> syntax_nodes.Pos:
        line = tok.line
        if line == 1:
            return syntax_nodes.Pos(self.file, line + self.line_offset, tok.column + self.first_col_offset)
        return syntax_nodes.Pos(self.file, line + self.line_offset, tok.column)

    # ---- structure ----
    def start(self, c):
        return c[0]

    def body(self, c):
        attributes: dict[str, syntax_nodes.Attribute] = {}
        blocks: list[syntax_nodes.Block] = []
        last_attr = None
        for item in c:
            t = type(item)
            if t is syntax_nodes.Attribute:
                if item.name in attributes:
                    p = item.pos
                    raise ConfigSyntaxError(
                        p.file,
                        p.line,
                        p.column,
                        f'attribute "{item.name}" is already defined in this block '
                        f"(first at line {attributes[item.name].pos.line})",
                    )
                attributes[item.name] = item
                last_attr = item
            elif t is syntax_nodes.Block:
                blocks.append(item)
                last_attr = None
            else:
                # new_line_or_comment: its first token ends the previous attribute's source text
                if last_attr is not None and last_attr.name == "type":
                    src = self.attr_src.get(id(last_attr))
                    if src is not None:
                        self.attr_src[id(last_attr)] = (src[0], item.start_pos)
                last_attr = None
        return syntax_nodes.Body(attributes, blocks)

    def new_line_or_comment(self, c):
        return c[0]  # the first NL_OR_COMMENT token (its start_pos bounds a preceding attribute)

    def attribute(self, c):
        name_node, eq, expr = c[0], c[1], c[2]
        name = self._name_of(name_node)
        attr = syntax_nodes.Attribute(name, expr, name_node.pos)
        if name == "type":  # variable types need their source text; see block()
            self.attr_src[id(attr)] = (eq.end_pos, -1)
        return attr

    def block(self, c):
        names = []
        body = None
        rbrace = None
        for item in c:
            t = type(item)
            if t is syntax_nodes.Body:
                body = item
            elif t is Token:
                if item.type == "RBRACE":
                    rbrace = item
            else:
                names.append(item)
        block_type = self._name_of(names[0])
        labels = []
        for label in names[1:]:
            if type(label) is syntax_nodes.Literal and type(label.value) is str and label.value is not None:
                labels.append(label.value)
            elif type(label) is syntax_nodes.Reference:
                labels.append(label.name)
            else:
                p = label.pos
                raise ConfigSyntaxError(
                    p.file,
                    p.line,
                    p.column,
                    "block labels must be plain quoted strings without interpolation",
                )
        if block_type == "variable" and "type" in body.attributes:
            attr = body.attributes["type"]
            start, end = self.attr_src.get(id(attr), (-1, -1))
            if end < 0 and rbrace is not None:
                end = rbrace.start_pos
            text = self.text[start:end].strip() if start >= 0 and end >= 0 else ""
            attr.expr = syntax_nodes.TypeExpr(text, attr.expr.pos, attr.expr)
        return syntax_nodes.Block(block_type, labels, body, names[0].pos)

    def _name_of(self, node) -> str:
        if type(node) is syntax_nodes.Reference:
            return node.name
        if type(node) is syntax_nodes.Literal:
            value = node.value
            if value is None:
                return "null"
            if value is True:
                return "true"
            if value is False:
                return "false"
            return str(value)
        raise ConfigSyntaxError(node.pos.file, node.pos.line, node.pos.column, "expected a name")

    # ---- literals and names ----
    def identifier(self, c):
        tok = c[0]
        return syntax_nodes.Reference(str(tok), self._pos(tok))

    keyword = identifier

    def literal_value(self, c):
        tok = c[0]
        return syntax_nodes.Literal(_LITERAL_WORDS[str(tok)], self._pos(tok))

    def int_lit(self, c):
        tok = c[0]
        return syntax_nodes.Literal(int(tok), self._pos(tok))

    def float_lit(self, c):
        tok = c[0]
        return syntax_nodes.Literal(_descent().float_value(tok), self._pos(tok))

    def string(self, c):
        # c: DBLQUOTE, string_part..., DBLQUOTE
        pos = self._pos(c[0])
        pieces = [p for p in c[1:-1]]
        if not pieces:
            return syntax_nodes.Literal("", pos)
        if len(pieces) == 1 and type(pieces[0]) is str:
            return syntax_nodes.Literal(pieces[0], pos)
        return assemble_template(pieces, pos)

    def string_part(self, c):
        item = c[0]
        if type(item) is Token:
            kind = item.type
            if kind == "STRING_CHARS":
                return unescape_quoted(str(item))
            if kind == "ESCAPED_INTERPOLATION" or kind == "ESCAPED_DIRECTIVE":
                return str(item)[1:]  # $${ -> ${ and %%{ -> %{
            return str(item)
        return item

    def template_string(self, c):
        tok = c[0]
        text = str(tok)
        return syntax_nodes.Literal(unescape_quoted(text[2:-2]), self._pos(tok))

    def interpolation(self, c):
        expr = next(x for x in c if type(x) is not Token)
        return self._directive("interp", c, expr=expr)

    def _directive(self, kind, c, **extra):
        strip_left = type(c[1]) is Token and c[1].type == "STRIP_MARKER"
        strip_right = type(c[-2]) is Token and c[-2].type == "STRIP_MARKER"
        return TemplateMarker(kind, strip_left, strip_right, pos=self._pos(c[0]), **extra)

    def template_if_start(self, c):
        expr = next(x for x in c if not isinstance(x, Token))
        return self._directive("if", c, expr=expr)

    def template_else(self, c):
        return self._directive("else", c)

    def template_endif(self, c):
        return self._directive("endif", c)

    def template_for_start(self, c):
        names = [x.name for x in c if type(x) is syntax_nodes.Reference]
        exprs = [x for x in c if not isinstance(x, Token)]
        collection = exprs[-1]
        if len(exprs) == len(names) and type(collection) is syntax_nodes.Reference:
            names = names[:-1]  # the collection itself was a bare name
        key_var, value_var = (names[0], names[1]) if len(names) == 2 else (None, names[0])
        return self._directive("for", c, expr=collection, key_var=key_var, value_var=value_var)

    def template_endfor(self, c):
        return self._directive("endfor", c)

    def heredoc_template(self, c):
        return self._heredoc(c[0], flush=False)

    def heredoc_template_trim(self, c):
        return self._heredoc(c[0], flush=True)

    def _heredoc(self, tok: Token, flush: bool) -> syntax_nodes.Expr:
        return _descent().heredoc_expr(str(tok), self.file, self._pos(tok), flush, parse_expression)

    # ---- operators ----
    def conditional(self, c):
        exprs = [x for x in c if type(x) is not Token]
        return syntax_nodes.Conditional(exprs[0], exprs[1], exprs[2], exprs[0].pos)

    def binary_op(self, c):
        left = c[0]
        op, right = c[1]
        return syntax_nodes.BinaryOp(op, left, right, left.pos)

    def binary_term(self, c):
        return (c[0], c[-1])

    def binary_operator(self, c):
        text = str(c[0])
        for op in _BINARY_OPS:  # the post-lexer may have glued a newline or comment before it
            if text.endswith(op):
                return op
        return text.strip()  # pragma: no cover

    def unary_op(self, c):
        tok, operand = c[0], c[1]
        return syntax_nodes.UnaryOp(str(tok), operand, self._pos(tok))

    # ---- terms ----
    def expr_term(self, c):
        if len(c) == 1:
            return c[0]
        inner = next(x for x in c if type(x) is not Token)
        if type(inner) is syntax_nodes.Reference:
            self.paren_ids.add(id(inner))  # `(name)` as an object key is an expression, not a name
        return inner

    def tuple(self, c):
        items = [x for x in c if type(x) is not Token]
        return syntax_nodes.TupleExpr(items, self._pos(c[0]))

    def object(self, c):
        items = [x for x in c if type(x) is tuple]
        return syntax_nodes.ObjectExpr(items, self._pos(c[0]))

    def object_elem(self, c):
        return (c[0], c[2])

    def object_elem_key(self, c):
        key = c[0]
        if type(key) is syntax_nodes.Reference and id(key) not in self.paren_ids:
            return syntax_nodes.Literal(key.name, key.pos)
        return key

    def function_call(self, c):
        names = [x.name for x in c if type(x) is syntax_nodes.Reference]
        args, expand = [], False
        for x in c:
            if type(x) is tuple:
                args, expand = x
        if len(names) == 2 and names[0] == "core":
            names = names[1:]  # core::upper is upper: the builtins' own namespace
        return syntax_nodes.FunctionCall("::".join(names), args, expand, c[0].pos)

    def arguments(self, c):
        args = [x for x in c if type(x) is not Token]
        expand = any(type(x) is Token and x.type == "ELLIPSIS" for x in c)
        return (args, expand)

    def index_expr_term(self, c):
        target, (kind, key, pos) = c
        return syntax_nodes.Index(target, key, target.pos)

    def get_attr_expr_term(self, c):
        target, (kind, name, pos) = c
        return syntax_nodes.GetAttr(target, name, target.pos)

    def braces_index(self, c):
        key = next(x for x in c if type(x) is not Token)
        return ("index", key, self._pos(c[0]))

    def short_index(self, c):
        tok = c[1]
        return ("short", syntax_nodes.Literal(int(tok), self._pos(tok)), self._pos(c[0]))

    def get_attr(self, c):
        name = self._name_of(c[1])
        return ("attr", name, self._pos(c[0]))

    def attr_splat_expr_term(self, c):
        return _descent().build_splat(c[0], c[1], full=False)

    def full_splat_expr_term(self, c):
        return _descent().build_splat(c[0], c[1], full=True)

    def attr_splat(self, c):
        return [x for x in c if type(x) is tuple]

    full_splat = attr_splat

    def for_intro(self, c):
        names = [x.name for x in c if type(x) is syntax_nodes.Reference]
        exprs = [x for x in c if type(x) is not Token]
        collection = exprs[-1]
        if len(exprs) == len(names) and type(collection) is syntax_nodes.Reference:
            names = names[:-1]
        key_var, value_var = (names[0], names[1]) if len(names) == 2 else (None, names[0])
        return ("for_intro", key_var, value_var, collection)

    def for_cond(self, c):
        return ("for_cond", next(x for x in c if type(x) is not Token))

    def for_tuple_expr(self, c):
        return self._for(c, is_object=False)

    def for_object_expr(self, c):
        return self._for(c, is_object=True)

    def _for(self, c, is_object: bool):
        intro = None
        cond = None
        exprs = []
        grouping = False
        for x in c:
            t = type(x)
            if t is tuple:
                if x[0] == "for_intro":
                    intro = x
                else:
                    cond = x[1]
            elif t is Token:
                if x.type == "ELLIPSIS":
                    grouping = True
            else:
                exprs.append(x)
        _, key_var, value_var, collection = intro
        key_expr = exprs[0] if is_object else None
        value_expr = exprs[-1]
        return syntax_nodes.ForExpr(
            key_var, value_var, collection, key_expr, value_expr, cond, grouping, self._pos(c[0])
        )


# --------------------------------------------------------------------------------------------------
# Running the parser
# --------------------------------------------------------------------------------------------------


# Terminals as a reader knows them, for "expected ..." in syntax errors.
_TERMINAL_TEXT = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "DOT": "'.'",
    "EQ": "'='",
    "COLON": "':'",
    "QMARK": "'?'",
    "DBLQUOTE": "'\"'",
    "FOR_OBJECT_ARROW": "'=>'",
    "ELLIPSIS": "'...'",
    "COLONS": "'::'",
    "NAME": "a name",
    "NL_OR_COMMENT": "a newline",
    "INTERP_START": "'${'",
    "DIRECTIVE_START": "'%{'",
}
# Terminals that can start an expression: when the parser wanted one, "an expression" says it all.
_EXPRESSION_STARTS = frozenset(
    {
        "INT_LITERAL",
        "FLOAT_LITERAL",
        "DBLQUOTE",
        "HEREDOC_TEMPLATE",
        "HEREDOC_TEMPLATE_TRIM",
        "LPAR",
        "LBRACE",
        "LSQB",
        "NAME",
        "NULL",
        "TRUE",
        "FALSE",
        "MINUS",
        "NOT",
        "FOR",
        "IF",
        "IN",
        "ELSE",
        "ENDIF",
        "ENDFOR",
        "FOR_EACH",
    }
)
_LITERAL_STARTS = frozenset({"INT_LITERAL", "FLOAT_LITERAL", "DBLQUOTE", "HEREDOC_TEMPLATE", "LPAR"})
_TWO_CHAR_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "=>", "::", "${", "%{", "<<")


def _lexeme(text: str) -> str:
    """What a reader sees at the start of an offending token: ``'}'``, ``'resource'``, ``newline``."""
    if not text:
        return "end of input"
    if text[0] in "\r\n":
        return "newline"
    if text.startswith("..."):
        return "'...'"
    if text[:2] in _TWO_CHAR_OPERATORS:
        return repr(text[:2])
    end = 1
    if text[0].isalnum() or text[0] == "_":
        while end < len(text) and (text[end].isalnum() or text[end] in "_-."):
            end += 1
    return repr(text[:end])


def _expected_text(expected: set[str]) -> str:
    names = sorted(expected)
    # A name alone may start the next attribute or block: only literals show an expression is wanted.
    wants_expression = any(name in _LITERAL_STARTS for name in names)
    parts = ["an expression"] if wants_expression else []
    parts += [
        _TERMINAL_TEXT[name]
        for name in names
        if name in _TERMINAL_TEXT and not (wants_expression and name in _EXPRESSION_STARTS)
    ]
    if not parts:
        return ""
    if len(parts) > 6:
        parts = [*parts[:6], "..."]
    return "; expected " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1])


def _syntax_error(exc: Exception, file: str, line_offset: int, col_offset: int) -> ConfigSyntaxError:
    """Lark's error made readable: the position of what was found, named as it is written."""
    from policies_app.iac.hcl_lalr import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    line = getattr(exc, "line", 1) or 1
    column = getattr(exc, "column", 1) or 1
    if isinstance(exc, UnexpectedToken) and exc.token is not None:
        tok = exc.token
        if tok.type == "$END":
            message = "unexpected end of input"
        else:
            text = str(tok)
            # A token may start with blanks the grammar did not skip there: point at what follows them.
            stripped = text.lstrip(" \t")
            column += len(text) - len(stripped)
            message = f"unexpected {_lexeme(stripped)}{_expected_text(set(exc.expected))}"
    elif isinstance(exc, UnexpectedCharacters):
        message = f"unexpected character {exc.char!r}"
    elif isinstance(exc, UnexpectedEOF):
        message = "unexpected end of input"
    else:
        message = str(exc).splitlines()[0]
    if line == 1:
        column += col_offset
    return ConfigSyntaxError(file, line + line_offset, column, message)


def _descent():
    """hcl_descent, imported on first parse: a run served from the parse cache never needs it."""
    from policies_app.iac import hcl_descent

    return hcl_descent


_lalr_only = threading.local()


@contextlib.contextmanager
def lalr_only():
    """Parse with the LALR parser alone in this thread (the differential test and the bench compare
    the two parsers with it)."""
    _lalr_only.on = True
    try:
        yield
    finally:
        _lalr_only.on = False


def run_parser(text: str, start: str, file: str, line: int = 1, column: int = 1) -> Any:
    """Parse ``text``; positions are reported as if the text began at (line, column) of ``file``.

    The recursive-descent parser (hcl_descent) parses what it can; the LALR parser parses the rest and
    everything that is not valid, so syntax errors read exactly as the grammar's."""
    if not getattr(_lalr_only, "on", False):
        try:
            return _descent().parse(text, start, file, line, column)
        except Exception:  # Unsupported, or anything unexpected: the LALR parser decides
            pass
    parser, conv = get_parser()
    with _parse_lock:
        return _run_locked(parser, conv, text, start, file, line, column)


def _run_locked(
    parser: Any, conv: _Converter, text: str, start: str, file: str, line: int, column: int
) -> Any:
    saved = (conv.file, conv.line_offset, conv.first_col_offset, conv.text, conv.paren_ids, conv.attr_src)
    conv.file = file
    conv.line_offset = line - 1
    conv.first_col_offset = column - 1
    conv.text = text
    conv.paren_ids = set()
    conv.attr_src = {}
    from policies_app.iac.hcl_lalr import UnexpectedInput

    try:
        return parser.parse(text, start=start)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, file, line - 1, column - 1) from None
    finally:
        (conv.file, conv.line_offset, conv.first_col_offset, conv.text, conv.paren_ids, conv.attr_src) = saved


def parse_native(text: str, path: str) -> syntax_nodes.File:
    """Parse the text of a native-syntax file; raises ConfigSyntaxError naming path:line:column."""
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of the configuration
        text = text[1:]
    # The grammar ends attributes and heredocs on a newline token; a file whose last line has no
    # newline would otherwise fail on its last attribute.
    if not text.endswith("\n"):
        text += "\n"
    body = run_parser(text, "start", path)
    if not isinstance(body, syntax_nodes.Body):  # pragma: no cover - the start rule always yields a body
        raise ConfigSyntaxError(path, 1, 1, "not a configuration file")
    return syntax_nodes.File(path, body)


# --------------------------------------------------------------------------------------------------
# Expressions, templates and references as text (-var values, tfvars, JSON strings)
# --------------------------------------------------------------------------------------------------


def parse_expression(
    text: str, filename: str = "<expr>", line: int = 1, column: int = 1
) -> syntax_nodes.Expr:
    """Parse one native-syntax expression."""
    stripped = text.strip()
    if not stripped:
        raise ConfigSyntaxError(filename, line, column, "expected an expression")
    # The grammar ends a line with a newline token; the expression rule is happier without them
    # at the edges. Leading whitespace must stay so that columns stay right.
    lead = text[: len(text) - len(text.lstrip())]
    if "\n" in lead:
        line += lead.count("\n")
        column = 1 + len(lead) - lead.rfind("\n") - 1
        text = text.lstrip()
    return run_parser(text.rstrip(), "expression", filename, line, column)


def parse_template(
    text: str, filename: str = "<template>", line: int = 1, column: int = 1
) -> syntax_nodes.Expr:
    """Parse a string template (templatefile() contents, JSON strings). Exactly one ``${...}`` and
    nothing else yields the inner expression; plain text yields a Literal string."""
    if "${" not in text and "%{" not in text:
        return syntax_nodes.Literal(text, syntax_nodes.Pos(filename, line, column))
    return parse_template_text(text, filename, line, column, parse_expression=parse_expression)


_TRAVERSAL_RE = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\.\d+|\[\s*(?:\d+|\"[^\"]*\")\s*\])*\Z")


def parse_traversal(text: str, filename: str, line: int) -> syntax_nodes.Expr:
    """A static reference written as a JSON string: ``aws_instance.web``, ``module.m``,
    ``aws_instance.web[0]``, ``var.x["k"]``."""
    stripped = text.strip()
    if not _TRAVERSAL_RE.match(stripped):
        raise ConfigSyntaxError(filename, line, 1, f"{text!r} is not a valid reference")
    return parse_expression(stripped, filename, line, 1)
