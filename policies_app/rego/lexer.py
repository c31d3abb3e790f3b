"""A small Rego tokenizer, enough to find things the engines get wrong.

We do not parse Rego here (the engines do); we only need to see identifiers, punctuation and comments
with their positions while skipping over string contents, so that ``"http.send"`` inside a message or
``# rego.metadata.rule()`` in a comment never counts as a call. Top-level statements (package, imports,
rules) are recognised from the token stream so annotations can be tied to the rule that follows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IDENT = "ident"
STRING = "string"
NUMBER = "number"
COMMENT = "comment"
PUNCT = "punct"

_TOKEN_RE = re.compile(
    r"""
    (?P<newline>\r?\n)
  | (?P<space>[ \t\f\r]+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>\$?"(?:\\.|[^"\\\n])*")
  | (?P<rawstring>\$?`[^`]*`)
  | (?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>:=|==|!=|<=|>=|.)
    """,
    re.VERBOSE,
)

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")", "]", "}"}
# Words that continue a statement when they start a line (``} else := 2 if {``, a long head split over lines).
_CONTINUATION_WORDS = {"else", "if", "contains", "in", "with", "as", "not", "some", "every"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int  # 1-based
    column: int  # 1-based, in characters
    start: int  # offset in the source, in characters
    end: int
    first_on_line: bool
    depth: int  # bracket depth before this token


@dataclass
class Statement:
    kind: str  # "package", "import" or "rule"
    start_token: int  # index into the token list (comments excluded)
    end_token: int  # exclusive
    line: int
    path: tuple[str, ...] = ()  # package path, or the rule's name (ref head parts)


def tokenize(source: str) -> list[Token]:
    """All tokens, comments included; strings are single tokens so their contents are never inspected."""
    tokens: list[Token] = []
    line, line_start, depth, first = 1, 0, 0, True
    position = 0
    for match in _TOKEN_RE.finditer(source):
        kind = match.lastgroup
        text = match.group()
        start = match.start()
        position = match.end()
        if kind == "newline":
            line += 1
            line_start = position
            first = True
            continue
        if kind == "space":
            continue
        token_kind = {"rawstring": STRING, "string": STRING}.get(kind, kind)
        if token_kind == PUNCT and text in CLOSERS:
            depth = max(depth - 1, 0)
        tokens.append(Token(token_kind, text, line, start - line_start + 1, start, position, first, depth))
        if token_kind == STRING and text.startswith("$"):
            tokens.extend(_template_tokens(source, text, start, depth))
        if token_kind == PUNCT and text in OPENERS:
            depth += 1
        first = False
        if "\n" in text:  # a raw string spanning lines
            line += text.count("\n")
            line_start = start + text.rindex("\n") + 1
    return tokens


def _template_tokens(source: str, text: str, start: int, depth: int) -> list[Token]:
    """The code inside the ``{...}`` parts of a template string ``$"cost {x}"``, as tokens at their place.

    Template strings hold expressions; a builtin called there is a call like any other.
    """
    tokens: list[Token] = []
    raw = text[1] == "`"
    index = 2
    while index < len(text) - 1:
        char = text[index]
        if char == "\\" and not raw:
            index += 2
            continue
        if char != "{":
            index += 1
            continue
        level, end = 1, index + 1
        while end < len(text) - 1 and level:
            level += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        offset = start + index + 1
        line = source.count("\n", 0, offset) + 1
        column = offset - (source.rfind("\n", 0, offset) + 1) + 1
        for inner in tokenize(text[index + 1 : end - 1]):
            tokens.append(
                Token(
                    inner.kind,
                    inner.text,
                    line + inner.line - 1,
                    inner.column + (column - 1 if inner.line == 1 else 0),
                    offset + inner.start,
                    offset + inner.end,
                    False,
                    depth + 1 + inner.depth,
                )
            )
        index = end
    return tokens


def code_tokens(tokens: list[Token]) -> list[Token]:
    return [token for token in tokens if token.kind != COMMENT]


def _dotted_path(code: list[Token], index: int) -> tuple[tuple[str, ...], int]:
    """Read ``a.b["c"].d`` starting at ``index``; returns the parts and the index after them."""
    parts: list[str] = []
    if index >= len(code) or code[index].kind != IDENT:
        return (), index
    parts.append(code[index].text)
    index += 1
    while index + 1 < len(code):
        token, following = code[index], code[index + 1]
        if token.text == "." and following.kind == IDENT and not following.first_on_line:
            parts.append(following.text)
            index += 2
        elif (
            token.text == "["
            and following.kind == STRING
            and following.text.startswith('"')
            and index + 2 < len(code)
            and code[index + 2].text == "]"
        ):
            parts.append(following.text[1:-1])
            index += 3
        else:
            break
    return tuple(parts), index


def statements(code: list[Token]) -> list[Statement]:
    """Split code tokens (no comments) into top-level statements.

    A statement starts at a token that is first on its line at bracket depth 0, unless that token
    continues the previous statement (``else``, an operator, ...).
    """
    result: list[Statement] = []
    starts = [
        i
        for i, token in enumerate(code)
        if token.depth == 0
        and (i == 0 or token.first_on_line)
        and token.kind == IDENT
        and token.text not in _CONTINUATION_WORDS
        and not (i > 0 and code[i - 1].kind == PUNCT and code[i - 1].text not in CLOSERS)
    ]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(code)
        head = code[start]
        if head.text == "package":
            path, _ = _dotted_path(code, start + 1)
            result.append(Statement("package", start, end, head.line, path))
        elif head.text == "import":
            path, _ = _dotted_path(code, start + 1)
            result.append(Statement("import", start, end, head.line, path))
        else:
            name_at = start + 1 if head.text == "default" else start
            path, _ = _dotted_path(code, name_at)
            result.append(Statement("rule", start, end, head.line, path))
    return result


def find_calls(code: list[Token], names: frozenset[str] | set[str]) -> list[tuple[str, int, int]]:
    """Where a dotted builtin name (e.g. ``http.send``) is used as a reference.

    Returns (name, first token index, last token index). A name preceded by ``.`` is a field of
    something else (``input.http.send``) and is not a match.
    """
    found: list[tuple[str, int, int]] = []
    longest = max((name.count(".") + 1 for name in names), default=0)
    for index, token in enumerate(code):
        if token.kind != IDENT or (index > 0 and code[index - 1].text == "."):
            continue
        parts, ends = [token.text], [index]
        cursor = index
        while len(parts) < longest and cursor + 2 < len(code):
            if code[cursor + 1].text != "." or code[cursor + 2].kind != IDENT:
                break
            cursor += 2
            parts.append(code[cursor].text)
            ends.append(cursor)
        for size in range(len(parts), 0, -1):
            name = ".".join(parts[:size])
            if name in names:
                found.append((name, index, ends[size - 1]))
                break
    return found
