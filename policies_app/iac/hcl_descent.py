"""The fast path of the native-syntax parser: a tokenizer (one combined regular expression per lexical
mode) and a recursive-descent parser that build the same syntax nodes, with the same positions, as the
generated LALR parser (hcl_lalr.py driven by hcl_native._Converter) does for python-hcl2's grammar.

Why: the LALR parser spends ~2.6 us per token in Lark's runtime (its contextual lexer tries a regular
expression per state, every token goes through a chain of unit reductions); cold runs (no parse cache)
were 1.8-4.7x slower than warm ones. This parser does the same work about 5x faster.

Fidelity rule: this parser accepts a subset of what the grammar accepts and never more. Anything it does
not handle, and every syntax error, raises ``Unsupported``; hcl_native.run_parser then parses the text
again with the LALR parser, which gives the result or the error message exactly as before. Where the
grammar's contextual lexer could read the same characters differently (a keyword that is a name, ``-1``
after an expression, ``x.1.5``), this parser bails out instead of guessing.
tests/engine/test_iac_parser_differential.py compares both parsers' nodes over every .tf file of the
repository and over tricky snippets.

Why this module is long: one tokenizer and one parser for the whole native syntax (expressions, string
templates, bodies), which must stay together to mirror the grammar rule by rule.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from policies_app.iac import syntax_nodes
from policies_app.iac.template_syntax import (
    TemplateMarker,
    assemble_template,
    parse_template_text,
    unescape_quoted,
)

Pos = syntax_nodes.Pos


class Unsupported(Exception):
    """This parser does not handle the text (or it is not valid): parse it with the LALR parser."""


# --------------------------------------------------------------------------------------------------
# Pieces shared with hcl_native's converter (one implementation for both parsers)
# --------------------------------------------------------------------------------------------------


def float_value(text: str) -> int | float:
    value = float(text)
    # Terraform numbers are one type: keep whole values as int, as values.py says.
    if value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def build_splat(source: syntax_nodes.Expr, steps: list, full: bool) -> syntax_nodes.Expr:
    """``source[*].a.b`` / ``source.*.a`` from its steps ``(kind, value, pos)``: kind "attr" (value a
    name), "index" (``[expr]``) or "short" (``.0``)."""
    pos = source.pos
    each: syntax_nodes.Expr = syntax_nodes.SplatItem(pos)
    rest: list = []
    for n, (kind, value, _step_pos) in enumerate(steps):
        if not full and kind == "index":
            # `.*` only carries attribute steps (and legacy `.0`); `[i]` applies to its result
            rest = steps[n:]
            break
        each = (
            syntax_nodes.GetAttr(each, value, pos) if kind == "attr" else syntax_nodes.Index(each, value, pos)
        )
    result: syntax_nodes.Expr = syntax_nodes.Splat(source, each, full, pos)
    for kind, value, _step_pos in rest:
        result = (
            syntax_nodes.GetAttr(result, value, pos)
            if kind == "attr"
            else syntax_nodes.Index(result, value, pos)
        )
    return result


def heredoc_expr(
    token_text: str, file: str, pos: syntax_nodes.Pos, flush: bool, parse_expression
) -> syntax_nodes.Expr:
    """A heredoc token (``<<EOT`` ... ``EOT`` and its newline) as a template expression."""
    first_nl = token_text.index("\n")
    # body: everything after the opening line, up to (not including) the closing marker's line
    body = token_text[first_nl + 1 :]
    body = body[: body.rstrip("\r\n").rfind("\n") + 1] if "\n" in body.rstrip("\r\n") else ""
    return parse_template_text(
        body, file, pos.line + 1, 1, parse_expression=parse_expression, flush=flush, pos=pos
    )


# --------------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------------

# Token kinds; NAME..TSTR are also the tokenizer's group numbers (see _CODE_RE).
END, NAME, OP, NL, STR, NUM, TSTR, QUOTE, HEREDOC = 0, 1, 2, 3, 4, 5, 6, 7, 8
CHARS, ESC, INTERP, DIRECTIVE, QEND = 10, 11, 12, 13, 14

# Between tokens: the grammar's ignored blanks, then one token. The patterns are the grammar's terminals
# (NAME, the operators longest first, NL_OR_COMMENT, a quoted string without interpolation,
# INT_LITERAL|FLOAT_LITERAL without their sign, TEMPLATE_STRING), the most frequent first: the regular
# expression engine tries them in order. Groups 1-6 are tokens that need no context (most tokens: the
# tokenizer appends them at once, their group number being their kind); the operators are split in
# three groups so that only braces (outside strings they need no context either) and the operators that
# need a look around (a newline before a continuing operator, ``<<``, ``//``) take the slow path. In
# strings, runs of plain characters are taken by one possessive repeat (not one alternation per
# character; possessive: a string that turns out to have an interpolation is not backtracked into).
_CODE_RE = re.compile(
    r"[ \t\r]*(?:"
    r"([a-zA-Z_][a-zA-Z0-9_-]*)"
    r"|(\.\.\.|\[\*\]|\.\*|=>|::|=(?!=)|!(?!=)|[:()\[\],.\-~])"  # no context needed
    r"|(/\*(?:.|\n)*?\*/|//.*\n|#.*\n|\n[ \t]*)"
    r'|("[^"\\$%]*+(?:(?:\\.|\$(?!\$?\{)|%(?!%?\{))[^"\\$%]*+)*+")'
    r"|([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r'|(\\"(?:[^"\\\\]|\\\\.)*\\")'
    r"|([{}])"
    r"|(==|!=|<=|>=|&&|\|\||[?<>+*/%])"
    r'|(")'
    r"|(.)"  # anything else: not a token here (and finditer cannot skip over it)
    r")"
)
_NO_CONTEXT, _BRACE, _CONTEXT_OP, _QUOTE, _OTHER = 6, 7, 8, 9, 10
# Inside a quoted string that has interpolations or directives.
_STRING_RE = re.compile(
    r"(\")|(\$\$\{[^}]*\}|%%\{[^}]*\})|(\$\{)|(%\{)"
    r'|((?:[^"\\$%]++|\\.|\$(?!\$?\{)|%(?!%?\{))++)'
)
_STRING_KINDS = (None, QEND, ESC, INTERP, DIRECTIVE, CHARS)
# The patterns of rare tokens are compiled on first use (through re's own cache): compiling them costs
# every cold run ~0.6 ms, as much as parsing 70 lines.
_HEREDOC = r"<<(?P<h>[a-zA-Z][a-zA-Z0-9._-]*)\r?\n(?:(?:.|\n)*?\r?\n)??\s*(?P=h)[ \t]*\r?\n"
_HEREDOC_TRIM = r"<<-(?P<h>[a-zA-Z][a-zA-Z0-9._-]*)\r?\n(?:(?:.|\n)*?\r?\n)??\s*(?P=h)[ \t]*\r?\n"
# The grammar's signed literals, tried where an expression starts (as its contextual lexer does).
_FLOAT = (
    r"(?:(?:\-[0-9])+|(?:\-[0-9])?(?:[0-9])+)\.(?:[0-9])+(?:(?:e|E)(?:(?:\+|\-))?(?:[0-9])+)?"
    r"|(?:(?:\-[0-9])+|(?:\-[0-9])?(?:[0-9])+)(?:e|E)(?:(?:\+|\-))?(?:[0-9])+"
)
_INT = r"(?:\-[0-9])?(?:[0-9])+"
# A newline or comment before these operators continues the expression (hcl_native._PostLexer).
_CONTINUING_OPERATORS = frozenset({"==", "!=", "<", ">", "<=", ">=", "*", "/", "%", "&&", "||", "+", "?"})
# Tokens after an operand that end the expression whatever the operand (none continues a traversal,
# an operation, a call or a conditional).
_EXPRESSION_ENDS = frozenset({",", "}", "]", ")", "=", ":", "=>", "..."})
# Tokens after a name, number or string that continue it into a traversal or a call.
_TRAVERSAL_OR_CALL = frozenset({".", "[", "[*]", ".*", "(", "::"})
_KEYWORDS = frozenset({"if", "in", "for", "for_each", "else", "endif", "endfor"})
_LITERAL_WORDS = {"true": True, "false": False, "null": None}
_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    ">": 4,
    "<=": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}


def tokenize(text: str) -> tuple[list[int], list[str], list[int]]:
    """(kinds, values, start offsets) of ``text``'s tokens, ending with an END token."""
    kinds: list[int] = []
    values: list[str] = []
    starts: list[int] = []
    append_kind, append_value, append_start = kinds.append, values.append, starts.append
    code_scan = _CODE_RE.finditer
    string_match = _STRING_RE.match
    pos = 0
    in_code = True
    depth = 0  # open braces of the current code context
    stack: list = []  # enclosing contexts: an int (a code context's depth) or "S" (a string)
    while True:
        if in_code:
            # One match per token, contiguous: the last alternative takes any other character.
            for m in code_scan(text, pos):
                kind = m.lastindex
                if kind <= _NO_CONTEXT:  # a name, operator, newline, string or number (most tokens)
                    append_kind(kind)
                    append_value(m[kind])
                    append_start(m.start(kind))
                    continue
                if kind == _BRACE and not stack:  # outside strings, nothing needs to count braces
                    append_kind(OP)
                    append_value(m.group(kind))
                    append_start(m.start(kind))
                    continue
                value = m.group(kind)
                pos = m.end()
                start = pos - len(value)
                if kind == _BRACE:
                    if value == "{":
                        depth += 1
                    elif depth == 0 and stack[-1] == "S":
                        stack.pop()
                        append_kind(OP)
                        append_value(value)
                        append_start(start)
                        in_code = False
                        break
                    else:
                        depth -= 1
                elif kind == _CONTEXT_OP:
                    if value in _CONTINUING_OPERATORS and kinds and kinds[-1] == NL:
                        kinds.pop()
                        values.pop()
                        starts.pop()
                    if value == "<" and text.startswith("<<", start):
                        h = re.compile(_HEREDOC_TRIM if text.startswith("<<-", start) else _HEREDOC).match(
                            text, start
                        )
                        if h is None:
                            # `<<` is a heredoc or an error; stopping here also keeps many unterminated
                            # heredocs (or comments, below) from costing a scan to the end each
                            raise Unsupported("not a heredoc")
                        append_kind(HEREDOC)
                        append_value(h.group(0))
                        append_start(start)
                        pos = h.end()
                        break  # scan again after the heredoc
                    elif value == "/" and text.startswith(("/", "*"), pos):
                        raise Unsupported("an unterminated comment")
                elif kind == _QUOTE:
                    stack.append(depth)
                    append_kind(QUOTE)
                    append_value(value)
                    append_start(start)
                    in_code = False
                    break
                else:  # _OTHER
                    raise Unsupported("unexpected character")
                append_kind(OP)
                append_value(value)
                append_start(start)
            else:
                break  # the end of the text
        else:
            # Inside a quoted string with interpolations or directives.
            m = string_match(text, pos)
            if m is None:
                raise Unsupported("unexpected character in a string")
            kind = _STRING_KINDS[m.lastindex]
            append_kind(kind)
            append_value(m.group(0))
            append_start(pos)
            pos = m.end()
            if kind == QEND:
                depth = stack.pop()
                in_code = True
            elif kind == INTERP or kind == DIRECTIVE:
                stack.append("S")
                depth = 0
                in_code = True
    if stack:
        raise Unsupported("unterminated string or interpolation")
    kinds.append(END)
    values.append("")
    starts.append(len(text))
    return kinds, values, starts


# --------------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str, file: str, line: int, column: int) -> None:
        self.text = text
        self.file = file
        self.first_line = line
        self.col_offset = column - 1
        self.kinds, self.values, self.starts = tokenize(text)
        self.i = 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.parenthesized: set[int] = set()

    # ---- helpers ----
    def pos(self, offset: int) -> syntax_nodes.Pos:
        newlines = self.newlines
        n = bisect_left(newlines, offset)
        if n:
            return Pos(self.file, n + self.first_line, offset - newlines[n - 1])
        return Pos(self.file, self.first_line, offset + 1 + self.col_offset)

    def skip_newlines(self) -> None:
        kinds = self.kinds
        i = self.i
        while kinds[i] == NL:
            i += 1
        self.i = i

    def expect(self, value: str) -> int:
        i = self.i
        if self.kinds[i] != OP or self.values[i] != value:
            raise Unsupported(f"expected {value}")
        self.i = i + 1
        return self.starts[i]

    def at(self, value: str) -> bool:
        return self.kinds[self.i] == OP and self.values[self.i] == value

    # ---- bodies ----
    def file_body(self) -> syntax_nodes.Body:
        body, _ = self.body()
        if self.kinds[self.i] != END:
            raise Unsupported("expected the end of the file")
        return body

    def body(self) -> tuple[syntax_nodes.Body, dict]:
        """Attributes and blocks up to ``}`` or the end; also the source spans of ``type`` attributes."""
        kinds, values, starts = self.kinds, self.values, self.starts
        attributes: dict[str, syntax_nodes.Attribute] = {}
        blocks: list[syntax_nodes.Block] = []
        type_span: list[int] | None = None  # [start, end] of the last `type` attribute's text
        pending_type = False  # the item just before was the `type` attribute
        while True:
            k = kinds[self.i]
            if k == NL:
                if pending_type:
                    type_span[1] = starts[self.i]
                pending_type = False
                self.skip_newlines()
                continue
            if k == END or (k == OP and values[self.i] == "}"):
                return syntax_nodes.Body(attributes, blocks), type_span
            if k != NAME:
                raise Unsupported("expected a name")
            name_index = self.i
            name = values[name_index]
            self.i += 1
            if kinds[self.i] == OP and values[self.i] == "=":
                eq_end = starts[self.i] + 1
                self.i += 1
                expr = self.expression()
                if name in attributes:
                    raise Unsupported("duplicate attribute")
                attributes[name] = syntax_nodes.Attribute(name, expr, self.pos(starts[name_index]))
                if name == "type":
                    type_span = [eq_end, -1]
                    pending_type = True
                else:
                    pending_type = False
            else:
                blocks.append(self.block(name, name_index))
                pending_type = False

    def block(self, block_type: str, name_index: int) -> syntax_nodes.Block:
        kinds, values = self.kinds, self.values
        if block_type in _LITERAL_WORDS:
            raise Unsupported("a literal as a block type")
        labels = []
        while True:
            k = kinds[self.i]
            if k == NAME:
                if values[self.i] in _LITERAL_WORDS:
                    raise Unsupported("a literal as a label")
                labels.append(values[self.i])
            elif k == STR:
                labels.append(unescape_quoted(values[self.i][1:-1]))
            else:
                break
            self.i += 1
        self.skip_newlines()
        self.expect("{")
        body, type_span = self.body()
        rbrace = self.expect("}")
        if block_type == "variable" and "type" in body.attributes:
            attr = body.attributes["type"]
            if type(attr.expr) in (syntax_nodes.BinaryOp, syntax_nodes.Conditional):
                # the grammar may take the newline after an operator's operand into the expression
                raise Unsupported("an operator in a variable type")
            start, end = type_span if type_span is not None else (-1, -1)
            if end < 0:
                end = rbrace
            text = self.text[start:end].strip() if start >= 0 else ""
            attr.expr = syntax_nodes.TypeExpr(text, attr.expr.pos, attr.expr)
        return syntax_nodes.Block(block_type, labels, body, self.pos(self.starts[name_index]))

    # ---- expressions ----
    def expression(self) -> syntax_nodes.Expr:
        kinds = self.kinds
        i = self.i
        k = kinds[i]
        values = self.values
        if k == NAME or k == STR or k == NUM:
            # A lone name, string or number (most expressions): binary, unary and term would each
            # look at the next token and return it unchanged, so go straight to it.
            k = kinds[i + 1]
            if k == NL or k == END or (k == OP and values[i + 1] in _EXPRESSION_ENDS):
                return self.primary()
            first = self.term()
        elif k == QUOTE or (k == OP and (values[i] == "{" or values[i] == "[")):
            first = self.term()
        else:
            first = None
        if first is None:
            condition = self.binary(1)
        else:
            # What unary() would return here (no operator before it): when nothing follows that
            # continues it, that is the whole expression; else binary() goes on from it.
            k = kinds[self.i]
            if k == NL or k == END or (k == OP and values[self.i] in _EXPRESSION_ENDS):
                return first
            condition = self.binary(1, first)
        if self.at("?"):
            self.i += 1
            self.skip_newlines()
            true_expr = self.expression()
            self.skip_newlines()
            self.expect(":")
            self.skip_newlines()
            false_expr = self.expression()
            return syntax_nodes.Conditional(condition, true_expr, false_expr, condition.pos)
        return condition

    def binary(self, min_precedence: int, left: syntax_nodes.Expr | None = None) -> syntax_nodes.Expr:
        """Operations of at least ``min_precedence``; ``left``: their first operand, already parsed."""
        kinds, values = self.kinds, self.values
        if left is None:
            left = self.unary()
        limit = None  # after newlines, only operators of this level or lower may continue
        while kinds[self.i] == OP:
            op = values[self.i]
            precedence = _PRECEDENCE.get(op)
            if precedence is None or precedence < min_precedence:
                break
            if limit is not None and precedence > limit:
                raise Unsupported("an operator after newlines")
            if op == "-" and kinds[self.i + 1] == NUM and self.starts[self.i + 1] == self.starts[self.i] + 1:
                raise Unsupported("'-' right before a number")  # the grammar may read a signed literal
            j = self.i + 1
            while kinds[j] == NL:
                j += 1
            self.i = j
            k = kinds[j]
            if (k == NAME or k == NUM or k == STR) and (
                kinds[j + 1] != OP
                or (
                    values[j + 1] not in _TRAVERSAL_OR_CALL
                    and _PRECEDENCE.get(values[j + 1], 0) <= precedence
                )
            ):
                # a lone operand that nothing after it binds tighter (`local.x + 1`): what
                # binary(precedence + 1) would return, without its three levels of calls
                right = self.primary()
            else:
                right = self.binary(precedence + 1)
            left = syntax_nodes.BinaryOp(op, left, right, left.pos)
            if kinds[self.i] == NL:
                # The grammar's binary operation ends with optional newlines (its parser takes them):
                # `a == b <newline> ? x : y` is a conditional, `a + b <newline> <newline> + c` one sum.
                self.skip_newlines()
                limit = precedence
        return left

    def unary(self) -> syntax_nodes.Expr:
        i = self.i
        if self.kinds[i] == OP:
            op = self.values[i]
            if op == "!" or (op == "-" and not self.signed_number_here()):
                self.i = i + 1
                operand = self.term()
                return syntax_nodes.UnaryOp(op, operand, self.pos(self.starts[i]))
        return self.term()

    def signed_number_here(self) -> bool:
        """Whether the grammar reads a signed literal at this '-' (``-12``, ``-1.5``; ``-1`` is not one)."""
        start = self.starts[self.i]
        m = re.compile(_FLOAT).match(self.text, start) or re.compile(_INT).match(self.text, start)
        if m is None:
            return False
        j = self.i + 1
        if (
            self.kinds[j] != NUM
            or self.starts[j] != start + 1
            or self.starts[j] + len(self.values[j]) != m.end()
        ):
            raise Unsupported("an unusual signed number")
        return True

    def term(self) -> syntax_nodes.Expr:
        expr = self.primary()
        kinds, values = self.kinds, self.values
        while kinds[self.i] == OP:
            op = values[self.i]
            if op == ".":
                self.i += 1
                kind, value, _ = self.attr_step()
                expr = (
                    syntax_nodes.GetAttr(expr, value, expr.pos)
                    if kind == "attr"
                    else syntax_nodes.Index(expr, value, expr.pos)
                )
            elif op == "[":
                self.i += 1
                key = self.bracket_key()
                expr = syntax_nodes.Index(expr, key, expr.pos)
            elif op == "[*]" or op == ".*":
                self.i += 1
                expr = build_splat(expr, self.splat_steps(), op == "[*]")
            else:
                break
        return expr

    def attr_step(self) -> tuple:
        """After a '.': a name (``.a``, ``.true``) or a legacy index (``.0``)."""
        i = self.i
        k = self.kinds[i]
        value = self.values[i]
        self.i = i + 1
        if k == NAME:
            return ("attr", value, None)
        if k == NUM and value.isdigit():
            return ("short", syntax_nodes.Literal(int(value), self.pos(self.starts[i])), None)
        raise Unsupported("expected a name after '.'")

    def bracket_key(self) -> syntax_nodes.Expr:
        self.skip_newlines()
        key = self.expression()
        self.skip_newlines()
        self.expect("]")
        return key

    def splat_steps(self) -> list:
        steps = []
        kinds, values = self.kinds, self.values
        while kinds[self.i] == OP:
            op = values[self.i]
            if op == ".":
                self.i += 1
                steps.append(self.attr_step())
            elif op == "[":
                self.i += 1
                steps.append(("index", self.bracket_key(), None))
            else:
                break
        return steps

    def primary(self) -> syntax_nodes.Expr:
        i = self.i
        k = self.kinds[i]
        value = self.values[i]
        start = self.starts[i]
        if k == NAME:
            self.i = i + 1
            if value in _LITERAL_WORDS:
                return syntax_nodes.Literal(_LITERAL_WORDS[value], self.pos(start))
            nk = self.kinds[i + 1]
            if nk == OP and (self.values[i + 1] == "(" or self.values[i + 1] == "::"):
                return self.function_call(value, start)
            return syntax_nodes.Reference(value, self.pos(start))
        if k == STR:
            self.i = i + 1
            return syntax_nodes.Literal(unescape_quoted(value[1:-1]), self.pos(start))
        if k == NUM:
            self.i = i + 1
            if value.isdigit():
                return syntax_nodes.Literal(int(value), self.pos(start))
            return syntax_nodes.Literal(float_value(value), self.pos(start))
        if k == OP:
            if value == "(":
                self.i = i + 1
                self.skip_newlines()
                inner = self.expression()
                self.skip_newlines()
                self.expect(")")
                if type(inner) is syntax_nodes.Reference:
                    self.parenthesized.add(id(inner))  # `(name)` as an object key is an expression
                return inner
            if value == "[":
                self.i = i + 1
                self.skip_newlines()
                if self.kinds[self.i] == NAME and self.values[self.i] == "for":
                    return self.for_expression(start, is_object=False)
                return self.tuple(start)
            if value == "{":
                self.i = i + 1
                self.skip_newlines()
                if self.kinds[self.i] == NAME and self.values[self.i] == "for":
                    if self.kinds[self.i + 1] != NAME:
                        raise Unsupported("'for' as an object key")
                    return self.for_expression(start, is_object=True)
                return self.object(start)
            if value == "-" and self.signed_number_here():
                self.i = i + 2
                text = "-" + self.values[i + 1]
                number = int(text) if self.values[i + 1].isdigit() else float_value(text)
                return syntax_nodes.Literal(number, self.pos(start))
            raise Unsupported("expected an expression")
        if k == QUOTE:
            return self.template_string()
        if k == HEREDOC:
            self.i = i + 1
            flush = value.startswith("<<-")
            return heredoc_expr(value, self.file, self.pos(start), flush, parse_expression_strict)
        if k == TSTR:
            self.i = i + 1
            return syntax_nodes.Literal(unescape_quoted(value[2:-2]), self.pos(start))
        raise Unsupported("expected an expression")

    def function_call(self, first: str, start: int) -> syntax_nodes.Expr:
        names = [first]
        while self.at("::"):
            self.i += 1
            if self.kinds[self.i] != NAME:
                raise Unsupported("expected a function name")
            names.append(self.values[self.i])
            self.i += 1
        self.expect("(")
        args: list[syntax_nodes.Expr] = []
        expand = False
        self.skip_newlines()
        if not self.at(")"):
            while True:
                args.append(self.expression())
                if self.at("..."):
                    self.i += 1
                    expand = True
                    self.skip_newlines()
                    break
                self.skip_newlines()
                if self.at(","):
                    self.i += 1
                    self.skip_newlines()
                    if self.at(")"):
                        break
                    continue
                break
        self.expect(")")
        if len(names) == 2 and names[0] == "core":
            names = names[1:]  # core::upper is upper: the builtins' own namespace
        return syntax_nodes.FunctionCall("::".join(names), args, expand, self.pos(start))

    def tuple(self, start: int) -> syntax_nodes.Expr:
        items = []
        kinds, values = self.kinds, self.values
        while kinds[self.i] != OP or values[self.i] != "]":
            items.append(self.expression())
            if not self.separator() and (kinds[self.i] != OP or values[self.i] != "]"):
                raise Unsupported("expected ',' or ']'")
        self.i += 1
        return syntax_nodes.TupleExpr(items, self.pos(start))

    def separator(self) -> bool:
        """Past the newlines after an item, and a comma with the newlines after it: whether one was."""
        kinds, i = self.kinds, self.i
        while kinds[i] == NL:
            i += 1
        comma = kinds[i] == OP and self.values[i] == ","
        if comma:
            i += 1
            while kinds[i] == NL:
                i += 1
        self.i = i
        return comma

    def object(self, start: int) -> syntax_nodes.Expr:
        items = []
        kinds, values = self.kinds, self.values
        while kinds[self.i] != OP or values[self.i] != "}":
            i = self.i
            k = kinds[i]
            if k == NAME and kinds[i + 1] == OP and values[i + 1] in ("=", ":"):
                # a bare name as a key (most keys) is its text: what expression() would return, a
                # Reference turned into a Literal below, without making the Reference
                value = values[i]
                key: syntax_nodes.Expr = syntax_nodes.Literal(
                    _LITERAL_WORDS[value] if value in _LITERAL_WORDS else value, self.pos(self.starts[i])
                )
                self.i = i + 1
            elif k == NAME and values[i] in _KEYWORDS:
                raise Unsupported("a keyword starting an object key")
            else:
                key = self.expression()
                if type(key) is syntax_nodes.Reference and id(key) not in self.parenthesized:
                    key = syntax_nodes.Literal(key.name, key.pos)
            if kinds[self.i] != OP or values[self.i] not in ("=", ":"):
                raise Unsupported("expected '=' or ':'")
            self.i += 1
            items.append((key, self.expression()))
            self.separator()
        self.i += 1
        return syntax_nodes.ObjectExpr(items, self.pos(start))

    def for_expression(self, start: int, is_object: bool) -> syntax_nodes.Expr:
        kinds, values = self.kinds, self.values
        self.i += 1  # for
        self.skip_newlines()
        if kinds[self.i] != NAME:
            raise Unsupported("expected a name after 'for'")
        names = [values[self.i]]
        self.i += 1
        if self.at(","):
            self.i += 1
            if kinds[self.i] != NAME:
                raise Unsupported("expected a name after ','")
            names.append(values[self.i])
            self.i += 1
            self.skip_newlines()
        self.skip_newlines()
        if kinds[self.i] != NAME or values[self.i] != "in":
            raise Unsupported("expected 'in'")
        self.i += 1
        self.skip_newlines()
        collection = self.expression()
        self.skip_newlines()
        self.expect(":")
        self.skip_newlines()
        key_expr = None
        grouping = False
        if is_object:
            key_expr = self.expression()
            self.expect("=>")
            self.skip_newlines()
        value_expr = self.expression()
        self.skip_newlines()
        if is_object and self.at("..."):
            self.i += 1
            grouping = True
            self.skip_newlines()
        condition = None
        if kinds[self.i] == NAME and values[self.i] == "if":
            self.i += 1
            self.skip_newlines()
            condition = self.expression()
            self.skip_newlines()
        self.expect("}" if is_object else "]")
        key_var, value_var = (names[0], names[1]) if len(names) == 2 else (None, names[0])
        return syntax_nodes.ForExpr(
            key_var, value_var, collection, key_expr, value_expr, condition, grouping, self.pos(start)
        )

    # ---- quoted strings with interpolations or directives ----
    def template_string(self) -> syntax_nodes.Expr:
        kinds, values, starts = self.kinds, self.values, self.starts
        pos = self.pos(starts[self.i])
        self.i += 1
        pieces: list = []
        while True:
            k = kinds[self.i]
            value = values[self.i]
            if k == QEND:
                self.i += 1
                break
            if k == CHARS:
                pieces.append(unescape_quoted(value))
                self.i += 1
            elif k == ESC:
                pieces.append(value[1:])  # $${ -> ${ and %%{ -> %{
                self.i += 1
            elif k == INTERP:
                pieces.append(self.interpolation())
            elif k == DIRECTIVE:
                pieces.append(self.directive())
            else:
                raise Unsupported("unexpected token in a string")
        if not pieces:
            return syntax_nodes.Literal("", pos)
        if len(pieces) == 1 and type(pieces[0]) is str:
            return syntax_nodes.Literal(pieces[0], pos)
        return assemble_template(pieces, pos)

    def strip_marker(self) -> bool:
        if self.at("~"):
            self.i += 1
            return True
        return False

    def interpolation(self) -> TemplateMarker:
        pos = self.pos(self.starts[self.i])
        self.i += 1
        strip_left = self.strip_marker()
        expr = self.expression()
        strip_right = self.strip_marker()
        self.expect("}")
        return TemplateMarker("interp", strip_left, strip_right, pos=pos, expr=expr)

    def directive(self) -> TemplateMarker:
        kinds, values = self.kinds, self.values
        pos = self.pos(self.starts[self.i])
        self.i += 1
        strip_left = self.strip_marker()
        if kinds[self.i] != NAME:
            raise Unsupported("expected a directive")
        word = values[self.i]
        self.i += 1
        extra: dict = {}
        if word == "if":
            extra["expr"] = self.expression()
        elif word == "for":
            names = []
            for _ in range(2):
                if kinds[self.i] != NAME:
                    raise Unsupported("expected a name")
                names.append(values[self.i])
                self.i += 1
                if not self.at(","):
                    break
                self.i += 1
            if kinds[self.i] != NAME or values[self.i] != "in":
                raise Unsupported("expected 'in'")
            self.i += 1
            extra["expr"] = self.expression()
            extra["key_var"], extra["value_var"] = (
                (names[0], names[1]) if len(names) == 2 else (None, names[0])
            )
        elif word not in ("else", "endif", "endfor"):
            raise Unsupported("unknown directive")
        strip_right = self.strip_marker()
        self.expect("}")
        return TemplateMarker(word, strip_left, strip_right, pos=pos, **extra)


# --------------------------------------------------------------------------------------------------
# Entry points (raise Unsupported: the caller parses with the LALR parser instead)
# --------------------------------------------------------------------------------------------------


def parse(text: str, start: str, file: str, line: int = 1, column: int = 1):
    """What hcl_native.run_parser returns for ``start`` ("start": a Body, "expression": an Expr)."""
    parser = _Parser(text, file, line, column)
    if start == "start":
        return parser.file_body()
    result = parser.expression()
    if parser.kinds[parser.i] != END:
        raise Unsupported("expected the end of the expression")
    return result


def parse_expression_strict(
    text: str, filename: str = "<expr>", line: int = 1, column: int = 1
) -> syntax_nodes.Expr:
    """hcl_native.parse_expression without its fallback (inside a heredoc of a text parsed here)."""
    if not text.strip():
        raise Unsupported("expected an expression")
    lead = text[: len(text) - len(text.lstrip())]
    if "\n" in lead:
        line += lead.count("\n")
        column = 1 + len(lead) - lead.rfind("\n") - 1
        text = text.lstrip()
    return parse(text.rstrip(), "expression", filename, line, column)
