"""String templates as text -> syntax tree: the pieces of quoted strings, heredocs and JSON strings,
strip markers (``~``) applied as HCL does, directives nested and a lone interpolation unwrapped
(``assemble_template``), and the scanner of template text (``parse_template_text``: heredoc bodies, JSON
strings, templatefile() contents), where plain text is a Literal.

The expressions inside a template are parsed by the native grammar (hcl_native.parse_expression), which
itself reads heredocs with this scanner: the scanner is given the expression parser as an argument, so
the two modules do not import each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from policies_app.iac import syntax_nodes

# (text, file, line, column) -> the expression; given to the scanner by hcl_native.
ExpressionParser = Callable[[str, str, int, int], syntax_nodes.Expr]


class ConfigSyntaxError(ValueError):
    """A configuration file (or expression) that cannot be read; names the file, line and column."""

    def __init__(self, file: str, line: int, column: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{column}: {message}")
        self.file = file
        self.line = line
        self.column = column
        self.message = message

    def __reduce__(self):  # keep the four fields across process boundaries (parallel parsing)
        return (ConfigSyntaxError, (self.file, self.line, self.column, self.message))


# --------------------------------------------------------------------------------------------------
# Template parts shared by quoted strings, heredocs and JSON strings
# --------------------------------------------------------------------------------------------------


class TemplateMarker:
    """A flat template piece before nesting: an interpolation or a directive keyword."""

    __slots__ = ("kind", "strip_left", "strip_right", "expr", "key_var", "value_var", "pos")

    def __init__(
        self, kind, strip_left=False, strip_right=False, expr=None, key_var=None, value_var=None, pos=None
    ):
        self.kind = kind  # interp | if | else | endif | for | endfor
        self.strip_left = strip_left
        self.strip_right = strip_right
        self.expr = expr
        self.key_var = key_var
        self.value_var = value_var
        self.pos = pos


_ESCAPE_RE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _unescape_match(m: re.Match) -> str:
    if m.group(1):
        return chr(int(m.group(1), 16))
    if m.group(2):
        return chr(int(m.group(2), 16))
    c = m.group(3)
    return _SIMPLE_ESCAPES.get(c, "\\" + c)


def unescape_quoted(text: str) -> str:
    if "\\" not in text:
        return text
    return _ESCAPE_RE.sub(_unescape_match, text)


def assemble_template(pieces: list, pos: syntax_nodes.Pos, flush: bool = False) -> syntax_nodes.Expr:
    """Flat pieces (str or TemplateMarker) -> Literal, the lone interpolated expression, or TemplateExpr.

    As in HCL, a strip marker trims only the literal piece right next to it. Heredoc and template
    text arrives split into one piece per line (as HCL's scanner splits it), so there ``~`` trims
    within the neighbouring line only; a quoted string is one piece and is trimmed as a whole.
    """
    if not pieces:
        return syntax_nodes.Literal("", pos)
    if len(pieces) == 1 and not flush:
        only = pieces[0]
        if type(only) is str:
            return syntax_nodes.Literal(only, pos)
        if only.kind == "interp":
            return only.expr
    pieces = list(pieces)
    for i, piece in enumerate(pieces):
        if type(piece) is str:
            continue
        if piece.strip_left and i > 0 and type(pieces[i - 1]) is str:
            pieces[i - 1] = pieces[i - 1].rstrip()
        if piece.strip_right and i + 1 < len(pieces) and type(pieces[i + 1]) is str:
            pieces[i + 1] = pieces[i + 1].lstrip()
    if flush:
        _flush_heredoc(pieces)
    if len(pieces) == 1 and type(pieces[0]) is not str and pieces[0].kind == "interp":
        return pieces[0].expr
    parts, index = _nest(pieces, 0, pos, None)
    if index != len(pieces):  # pragma: no cover - _nest raises before this
        raise ConfigSyntaxError(pos.file, pos.line, pos.column, "unexpected template directive")
    if len(parts) == 1 and type(parts[0]) is str:
        return syntax_nodes.Literal(parts[0], pos)
    if not parts:
        return syntax_nodes.Literal("", pos)
    return syntax_nodes.TemplateExpr(parts, pos)


def _flush_heredoc(pieces: list) -> None:
    """``<<-`` heredocs, after strip markers as in HCL: the smallest indentation among lines is
    removed from every line. A line starting with an interpolation or directive counts as 0; a line
    of only whitespace does not count (and keeps its whitespace)."""
    min_spaces: int | None = None
    adjust: list[int] = []
    at_line_start = True
    for i, piece in enumerate(pieces):
        is_text = type(piece) is str
        if at_line_start:
            at_line_start = False
            if is_text:
                trimmed = piece.lstrip()
                if trimmed or not piece.endswith("\n"):
                    spaces = len(piece) - len(trimmed)
                    adjust.append(i)
                    min_spaces = spaces if min_spaces is None else min(min_spaces, spaces)
            else:
                min_spaces = 0
        if is_text and piece.endswith("\n"):
            at_line_start = True
    if min_spaces:
        for i in adjust:
            pieces[i] = pieces[i][min_spaces:]


def _nest(pieces: list, i: int, pos: syntax_nodes.Pos, closing: tuple | None):
    """Nest flat pieces into template parts until one of ``closing`` kinds; returns (parts, index)."""
    parts: list = []
    n = len(pieces)
    while i < n:
        piece = pieces[i]
        if type(piece) is str:
            if piece:
                if parts and type(parts[-1]) is str:
                    parts[-1] += piece
                else:
                    parts.append(piece)
            i += 1
            continue
        kind = piece.kind
        if kind == "interp":
            parts.append(syntax_nodes.Interpolation(piece.expr))
            i += 1
        elif kind == "if":
            then_parts, i = _nest(pieces, i + 1, pos, ("else", "endif"))
            else_parts: list = []
            if pieces[i].kind == "else":
                else_parts, i = _nest(pieces, i + 1, pos, ("endif",))
            parts.append(syntax_nodes.IfDirective(piece.expr, then_parts, else_parts))
            i += 1
        elif kind == "for":
            body, i = _nest(pieces, i + 1, pos, ("endfor",))
            parts.append(syntax_nodes.ForDirective(piece.key_var, piece.value_var, piece.expr, body))
            i += 1
        else:
            if closing and kind in closing:
                return parts, i
            where = piece.pos or pos
            raise ConfigSyntaxError(
                where.file, where.line, where.column, f"unexpected %{{ {kind} }} directive in template"
            )
    if closing:
        raise ConfigSyntaxError(
            pos.file, pos.line, pos.column, f"template directive is not closed: expected %{{ {closing[-1]} }}"
        )
    return parts, i


# --------------------------------------------------------------------------------------------------
# Template scanner (heredoc bodies, JSON strings, templatefile())
# --------------------------------------------------------------------------------------------------

_LINE_PIECES_RE = re.compile(r"[^\n]*\n|[^\n]+")  # literal text as HCL's scanner cuts it: per line
_TEMPLATE_START_RE = re.compile(r"\$\$\{|%%\{|\$\{|%\{")
_FOR_HEAD_RE = re.compile(r"for\s+([A-Za-z_][\w-]*)\s*(?:,\s*([A-Za-z_][\w-]*)\s*)?in\b(.*)\Z", re.S)


def _find_close(text: str, i: int) -> int:
    """Index of the ``}`` closing a sequence whose body starts at ``i`` (skipping nested braces and
    quoted strings, which may hold templates of their own); -1 when it never closes."""
    depth = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "}":
            if depth == 0:
                return i
            depth -= 1
        elif ch == "{":
            depth += 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 2
                    continue
                if text.startswith("${", i) or text.startswith("%{", i):
                    end = _find_close(text, i + 2)
                    if end < 0:
                        return -1
                    i = end + 1
                    continue
                i += 1
        elif ch == "#" or (ch == "/" and text.startswith("//", i)):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        i += 1
    return -1


def _line_col(text: str, offset: int, line: int, column: int) -> tuple[int, int]:
    nls = text.count("\n", 0, offset)
    if nls == 0:
        return line, column + offset
    return line + nls, offset - text.rfind("\n", 0, offset)


def parse_template_text(
    text: str,
    filename: str,
    line: int,
    column: int,
    *,
    parse_expression: ExpressionParser,
    flush: bool = False,
    pos: syntax_nodes.Pos | None = None,
) -> syntax_nodes.Expr:
    """Parse template ``text`` (no surrounding quotes, no escapes) that starts at (line, column); the
    expressions of its interpolations and directives with ``parse_expression``."""
    if pos is None:
        pos = syntax_nodes.Pos(filename, line, column)
    pieces: list = []
    i = 0
    n = len(text)
    buf: list[str] = []
    while True:
        m = _TEMPLATE_START_RE.search(text, i)
        if m is None:
            break
        seq = m.group(0)
        if seq == "$${" or seq == "%%{":
            buf.append(text[i : m.start()])
            buf.append(seq[1:])
            i = m.end()
            continue
        buf.append(text[i : m.start()])
        body_start = m.end()
        close = _find_close(text, body_start)
        seq_line, seq_col = _line_col(text, m.start(), line, column)
        if close < 0:
            raise ConfigSyntaxError(filename, seq_line, seq_col, f"unclosed template sequence {seq!r}")
        inner = text[body_start:close]
        strip_left = inner.startswith("~")
        if strip_left:
            inner = " " + inner[1:]
        strip_right = inner.endswith("~")
        if strip_right:
            inner = inner[:-1]
        pieces.extend(_LINE_PIECES_RE.findall("".join(buf)))
        buf = []
        inner_line, inner_col = _line_col(text, body_start, line, column)
        seq_pos = syntax_nodes.Pos(filename, seq_line, seq_col)
        if seq == "${":
            expr = parse_expression(inner, filename, inner_line, inner_col)
            pieces.append(TemplateMarker("interp", strip_left, strip_right, expr=expr, pos=seq_pos))
        else:
            pieces.append(
                _directive_marker(
                    inner, filename, inner_line, inner_col, strip_left, strip_right, seq_pos, parse_expression
                )
            )
        i = close + 1
    buf.append(text[i:n])
    pieces.extend(_LINE_PIECES_RE.findall("".join(buf)))
    return assemble_template(pieces, pos, flush)


def _directive_marker(
    inner: str,
    filename: str,
    line: int,
    column: int,
    strip_left: bool,
    strip_right: bool,
    pos: syntax_nodes.Pos,
    parse_expression: ExpressionParser,
) -> TemplateMarker:
    body = inner.strip()
    word = body.split(None, 1)[0] if body else ""
    if word in ("else", "endif", "endfor") and body == word:
        return TemplateMarker(word, strip_left, strip_right, pos=pos)
    if word == "if":
        offset = inner.index("if") + 2
        l2, c2 = _line_col(inner, offset, line, column)
        expr = parse_expression(inner[offset:], filename, l2, c2)
        return TemplateMarker("if", strip_left, strip_right, expr=expr, pos=pos)
    if word == "for":
        m = _FOR_HEAD_RE.match(body)
        if m:
            first, second, coll = m.group(1), m.group(2), m.group(3)
            key_var, value_var = (first, second) if second else (None, first)
            offset = inner.index(coll) if coll.strip() else len(inner)
            l2, c2 = _line_col(inner, offset, line, column)
            expr = parse_expression(coll, filename, l2, c2)
            return TemplateMarker(
                "for", strip_left, strip_right, expr=expr, key_var=key_var, value_var=value_var, pos=pos
            )
    raise ConfigSyntaxError(pos.file, pos.line, pos.column, f"invalid template directive %{{{inner}}}")
