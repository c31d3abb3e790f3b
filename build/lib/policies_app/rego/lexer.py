"""A small Rego tokenizer, enough to find things the engines get wrong.

We do not parse Rego here (the engines do); we only need to see identifiers, punctuation and comments
with their positions while skipping over string contents, so that ``"http.send"`` inside a message or
``# rego.metadata.rule()`` in a comment never counts as a call. Top-level statements (package, imports,
rules) are recognised from the token stream so annotations can be tied to the rule that follows them.
"""

from __future__ import annotations

import json
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
# Keywords that cannot end a statement: a line ending in one goes on with the next line.
_TRAILING_WORDS = _CONTINUATION_WORDS | {"package", "import", "default"}
_RULE_HEAD_FOLLOWERS = {"if", "contains", ":=", "=", "{", "(", "["}


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


def string_value(token: Token) -> str | None:
    """The text of a plain string literal (``"send"`` or a raw string), None for anything else."""
    if token.kind != STRING or token.text.startswith("$"):
        return None
    if token.text.startswith("`"):
        return token.text[1:-1]
    try:
        value = json.loads(token.text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def path_step(code: list[Token], index: int) -> tuple[str, int] | None:
    """One step of a reference at ``index``: ``.name`` or ``["name"]``; returns the name and the index after.

    Both engines resolve ``http["send"](...)`` to the builtin ``http.send``, so a string index is a step
    like any other wherever names are matched. Spaces around ``.`` and inside ``[ ]`` are accepted here
    even where an engine refuses them: matching more only ever refuses more.
    """
    if index + 1 >= len(code):
        return None
    token, following = code[index], code[index + 1]
    if token.kind == PUNCT and token.text == "." and following.kind == IDENT:
        return following.text, index + 2
    if token.kind == PUNCT and token.text == "[" and index + 2 < len(code) and code[index + 2].text == "]":
        value = string_value(following)
        if value is not None:
            return value, index + 3
    return None


def _dotted_path(code: list[Token], index: int) -> tuple[tuple[str, ...], int]:
    """Read ``a.b["c"].d`` starting at ``index``; returns the parts and the index after them."""
    if index >= len(code) or code[index].kind != IDENT:
        return (), index
    parts = [code[index].text]
    index += 1
    while True:
        step = path_step(code, index)
        if step is None or (code[index].text == "." and code[index + 1].first_on_line):
            break
        parts.append(step[0])
        index = step[1]
    return tuple(parts), index


def _continues(code: list[Token], index: int) -> bool:
    """Whether the line-leading token at ``index`` carries on the statement before it.

    It does when it is itself a continuation word (``else``, ``if``...) or when the line before ended
    in the middle of something: an operator or opening bracket, or a keyword that needs what follows
    (``deny contains "x" if`` + a body on the next line). ``import future.keywords.if`` ends in a path
    part, not a keyword.
    """
    token = code[index]
    if token.text in _CONTINUATION_WORDS:
        return True
    if index == 0:
        return False
    previous = code[index - 1]
    if previous.kind == PUNCT:
        return previous.text not in CLOSERS
    return (
        previous.kind == IDENT
        and previous.text in _TRAILING_WORDS
        and not (index > 1 and code[index - 2].text == ".")
    )


def _looks_like_rule_head(code: list[Token], after_name: int, end: int) -> bool:
    # What may follow a rule's name: its body, value, key, arguments, or nothing (``default x := 1`` is
    # read from its name on). Anything else (``input.cost > 5``) means we could not tell where a rule
    # starts, and nothing may be attributed to it.
    return after_name >= end or code[after_name].text in _RULE_HEAD_FOLLOWERS


def statements(code: list[Token]) -> list[Statement]:
    """Split code tokens (no comments) into top-level statements.

    A statement starts at a token that is first on its line at bracket depth 0, unless that token
    continues the previous statement (``else``, an operator, a keyword ending the line before...).
    A statement that does not read as a package, import or rule head is of kind "other".
    """
    result: list[Statement] = []
    starts = [
        i
        for i, token in enumerate(code)
        if token.depth == 0
        and (i == 0 or token.first_on_line)
        and token.kind == IDENT
        and not _continues(code, i)
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
            path, after = _dotted_path(code, name_at)
            kind = "rule" if path and _looks_like_rule_head(code, after, end) else "other"
            result.append(Statement(kind, start, end, head.line, path))
    return result


def find_calls(code: list[Token], names: frozenset[str] | set[str]) -> list[tuple[str, int, int]]:
    """Where a dotted builtin name (e.g. ``http.send``) is used as a reference.

    Returns (name, first token index, last token index). A name preceded by ``.`` is a field of
    something else (``input.http.send``) and is not a match. ``http["send"]`` is ``http.send``.
    """
    found: list[tuple[str, int, int]] = []
    longest = max((name.count(".") + 1 for name in names), default=0)
    for index, token in enumerate(code):
        if token.kind != IDENT or (index > 0 and code[index - 1].text == "."):
            continue
        parts, ends = [token.text], [index]
        cursor = index + 1
        while len(parts) < longest:
            step = path_step(code, cursor)
            if step is None:
                break
            parts.append(step[0])
            cursor = step[1]
            ends.append(cursor - 1)
        for size in range(len(parts), 0, -1):
            name = ".".join(parts[:size])
            if name in names:
                found.append((name, index, ends[size - 1]))
                break
    return found
