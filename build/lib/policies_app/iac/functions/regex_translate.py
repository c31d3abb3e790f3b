"""Translating RE2 patterns (Terraform's regex dialect) into Python ``re`` patterns.

The two dialects mostly agree. Where they differ in ways seen in real configurations we translate:
``\\z`` (end of text), ``$`` without the m flag (RE2: end of text only; Python also matches before a final
newline), ``\\d``/``\\w``/``\\s`` (ASCII-only in RE2), POSIX classes such as ``[[:alpha:]]``, ``\\Q...\\E``,
``(?<name>...)`` and flag groups in the middle of a pattern (Python only accepts them at the start).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_CLASS_ESCAPES = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_WORD = "[0-9A-Za-z_]"
_ESCAPES = {
    "d": "[0-9]",
    "w": _WORD,
    "s": "[\\t\\n\\f\\r ]",
    "D": "[^0-9]",
    "W": "[^0-9A-Za-z_]",
    "S": "[^\\t\\n\\f\\r ]",
    "z": "\\Z",
    # RE2's word boundaries are ASCII, like its \\w; Python's would count "é" as a word character.
    "b": f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))",
    "B": f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))",
}


class RegexSyntaxError(ValueError):
    pass


@lru_cache(maxsize=1)
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges per Unicode general category (Lu, Nd, ...), built once when \\p is first used."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        spans = ranges.setdefault(category, [])
        if spans and spans[-1][1] == code - 1:
            spans[-1] = (spans[-1][0], code)
        else:
            spans.append((code, code))
    return ranges


def _char(code: int) -> str:
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _category_class_body(name: str) -> str:
    """The inside of a character class for \\p{name}: a one-letter (L) or two-letter (Lu) category."""
    table = _category_ranges()
    categories = [c for c in table if c == name or (len(name) == 1 and c.startswith(name))]
    if not categories:
        raise RegexSyntaxError(
            f"unsupported Unicode class \\p{{{name}}} (only general categories are supported)"
        )
    spans = sorted(span for c in categories for span in table[c] if c != "Cn")
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in spans)


def _unicode_class(pattern: str, i: int) -> tuple[str, bool, int]:
    """Reads \\pL, \\p{Lu}, \\PL or \\p{^L} at i: (class body, negated, index after it)."""
    negated = pattern[i + 1] == "P"
    if pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 2)
        if end < 0:
            raise RegexSyntaxError("missing closing } in a Unicode class")
        name = pattern[i + 3 : end]
        after = end + 1
    else:
        name = pattern[i + 2 : i + 3]
        after = i + 3
    if name.startswith("^"):
        negated, name = not negated, name[1:]
    return _category_class_body(name), negated, after


@lru_cache(maxsize=512)
def compile_re2(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(translate(pattern))
    except re.error as exc:
        raise RegexSyntaxError(f"invalid regular expression {pattern!r}: {exc}") from None


def translate(pattern: str) -> str:
    out: list[str] = []
    multiline = bool(re.search(r"\(\?[a-zA-Z]*m[a-zA-Z]*[:)]", pattern))
    closers: list[int] = [0]  # per open group: how many ")" to add when it closes (mid-pattern flags)
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _escape(pattern, i, out)
            continue
        if ch == "[":
            i = _char_class(pattern, i, out)
            continue
        if ch == "$" and not multiline:
            out.append("\\Z")
        elif ch == "(":
            flags = re.match(r"\(\?([imsU]*)(?:-([imsU]*))?\)", pattern[i:])
            if flags and (out or i > 0):
                # "(?i)" in the middle: scope it over the rest of the enclosing group.
                on, off = flags.group(1).replace("U", ""), (flags.group(2) or "").replace("U", "")
                out.append(f"(?{on}{'-' + off if off else ''}:")
                closers[-1] += 1
                i += flags.end()
                continue
            if flags:
                out.append(flags.group(0).replace("U", "") if flags.group(0) != "(?U)" else "")
                i += flags.end()
                continue
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
                closers.append(0)
                continue
            out.append("(")
            closers.append(0)
        elif ch == ")":
            out.append(")" * closers.pop() + ")") if len(closers) > 1 else out.append(")")
        else:
            out.append(ch)
        i += 1
    out.append(")" * closers[0])
    return "".join(out)


def _escape(pattern: str, i: int, out: list[str]) -> int:
    if i + 1 >= len(pattern):
        raise RegexSyntaxError("trailing backslash at end of expression")
    nxt = pattern[i + 1]
    if nxt == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
        out.append(re.escape(literal))
        return len(pattern) if end < 0 else end + 2
    if nxt in _ESCAPES:
        out.append(_ESCAPES[nxt])
        return i + 2
    if nxt == "x" and pattern.startswith("{", i + 2):
        end = pattern.index("}", i)
        out.append(f"\\U{int(pattern[i + 3 : end], 16):08x}")
        return end + 1
    if nxt in "pP":
        body, negated, after = _unicode_class(pattern, i)
        out.append(("[^" if negated else "[") + body + "]")
        return after
    out.append(pattern[i : i + 2])
    return i + 2


def _char_class(pattern: str, i: int, out: list[str]) -> int:
    out.append("[")
    i += 1
    if pattern.startswith("^", i):
        out.append("^")
        i += 1
    if pattern.startswith("]", i):
        out.append("\\]")
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
        if posix:
            if posix.group(2) not in _POSIX or posix.group(1):
                raise RegexSyntaxError(f"unsupported character class {posix.group(0)}")
            out.append(_POSIX[posix.group(2)])
            i += posix.end()
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[nxt])
            elif nxt in "pP":
                body, negated, i = _unicode_class(pattern, i)
                if negated:
                    raise RegexSyntaxError("a negated Unicode class inside [...] is not supported")
                out.append(body)
                continue
            else:
                out.append(pattern[i : i + 2])
            i += 2
        elif pattern[i] == "[":
            out.append("\\[")
            i += 1
        else:
            out.append(pattern[i])
            i += 1
    if i >= len(pattern):
        raise RegexSyntaxError("missing closing ]")
    out.append("]")
    return i + 1
