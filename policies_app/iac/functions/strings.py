"""String functions: chomp endswith format formatlist indent join lower regex regexall replace split
startswith strcontains strrev substr templatestring title trim trimprefix trimsuffix trimspace upper."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from policies_app.iac.functions.base import (
    ArgumentError,
    FunctionContext,
    is_sequence,
    register,
    want_int,
    want_mapping,
    want_sequence,
    want_string,
)
from policies_app.iac.functions.formatting import format_values
from policies_app.iac.functions.regex_translate import RegexSyntaxError, compile_re2
from policies_app.iac.type_kinds import STRING
from policies_app.iac.values import UNKNOWN, UnknownValue, contains_unknown, is_unknown, safe_known_prefix

# --- characters as users see them (Terraform counts grapheme clusters, not code points) ---------------

_ZWJ = "\u200d"


def _is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"  # two of them make one flag


def graphemes(text: str) -> list[str]:
    """Split into user-perceived characters: a base with its combining marks, joined emoji, CR LF."""
    clusters: list[str] = []
    for ch in text:
        if clusters and (
            unicodedata.combining(ch)
            or unicodedata.category(ch) in ("Mn", "Me", "Mc")
            or "\ufe00" <= ch <= "\ufe0f"
            or "\U0001f3fb" <= ch <= "\U0001f3ff"
            or ch == _ZWJ
            or clusters[-1].endswith(_ZWJ)
            or (ch == "\n" and clusters[-1] == "\r")
            or (
                _is_regional_indicator(ch) and len(clusters[-1]) == 1 and _is_regional_indicator(clusters[-1])
            )
        ):
            clusters[-1] += ch
        else:
            clusters.append(ch)
    return clusters


# Go's unicode.IsSpace, which differs from str.isspace on the ASCII file/group/record separators.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


@register("chomp", 1)
def chomp(text: Any) -> str:
    s = want_string(text)
    while s.endswith(("\n", "\r")):
        s = s[:-2] if s.endswith("\r\n") else s[:-1]
    return s


@register("startswith", 2, unknowns="handled")
def startswith(text: Any, prefix: Any) -> Any:
    if is_unknown(prefix) or (not is_unknown(text) and contains_unknown(text)):
        return UNKNOWN
    wanted = want_string(prefix)
    if not is_unknown(text):
        return want_string(text).startswith(wanted)
    # Terraform's StartsWithFunc over an unknown string: decided by the prefix it is known to have
    # ("a-${x}" starts with "a-" and not with "b-"), compared in bytes as Go does.
    known = text.prefix
    if wanted == "" or (known and known.startswith(wanted)):
        return True
    if known and len(known.encode()) >= len(wanted.encode()):
        return False
    return UNKNOWN


@register("endswith", 2)
def endswith(text: Any, suffix: Any) -> bool:
    return want_string(text).endswith(want_string(suffix))


@register("strcontains", 2)
def strcontains(text: Any, substring: Any) -> bool:
    return want_string(substring) in want_string(text)


@register("format", 1, None, unknowns="handled")
def format_(spec: Any, *args: Any) -> Any:
    if contains_unknown(spec):
        return UNKNOWN
    if any(contains_unknown(a) for a in args):
        # cty's FormatFunc: the literal text before the first verb is the result's known beginning.
        text = want_string(spec, "the format string")
        verb = text.find("%")
        return UnknownValue(STRING, True, prefix=safe_known_prefix(text[:verb]) if verb > 0 else "")
    if any(a is None for a in args):
        return UNKNOWN  # what Terraform 1.11 answers for a null argument, oddly, rather than an error
    return format_values(want_string(spec, "the format string"), list(args))


@register("formatlist", 1, None, unknowns="handled")
def formatlist(spec: Any, *args: Any) -> Any:
    if is_unknown(spec):
        return UNKNOWN
    template = want_string(spec, "the format string")
    length = None
    for position, arg in enumerate(args):
        if arg is None:
            return UNKNOWN  # null as for format()
        if is_sequence(arg):
            if length is not None and len(arg) != length:
                raise ArgumentError(
                    f"argument {position + 2} has length {len(arg)}, which does not match the length "
                    f"{length} of an earlier list argument"
                )
            length = len(arg)
    if length is None:
        if any(is_unknown(a) for a in args):
            return UNKNOWN  # an unknown argument may be a list: the length is not known yet
        length = 1
    # With a known list deciding the length, an unknown argument only makes its elements unknown
    # (were it a list of another length, terraform would refuse the call once it is known).
    columns = [list(a) if is_sequence(a) else None for a in args]
    results: list[Any] = []
    for i in range(length):
        row = [column[i] if column is not None else arg for column, arg in zip(columns, args, strict=True)]
        results.append(UNKNOWN if any(contains_unknown(v) for v in row) else format_values(template, row))
    return results


@register("indent", 2)
def indent(spaces: Any, text: Any) -> str:
    count = want_int(spaces)
    if count > 100_000:
        raise ArgumentError(f"{count} spaces of indentation is more than this evaluator will produce")
    return want_string(text).replace("\n", "\n" + " " * count)


@register("join", 2, None, unknowns="handled")
def join(separator: Any, *lists: Any) -> Any:
    if is_unknown(separator):
        return UNKNOWN
    sep = want_string(separator, "the separator")
    parts: list[str] = []
    for position, values in enumerate(lists):
        if is_unknown(values):
            return UNKNOWN
        for index, item in enumerate(want_sequence(values, f"argument {position + 2}")):
            if is_unknown(item):
                return UNKNOWN
            if item is None:
                raise ArgumentError(
                    f"element {index} of argument {position + 2} is null; cannot concatenate null"
                )
            parts.append(want_string(item, f"element {index} of argument {position + 2}"))
    return sep.join(parts)


def _go_upper(ch: str) -> str:
    mapped = ch.upper()
    return mapped if len(mapped) == 1 else ch


def _go_lower(ch: str) -> str:
    if ch == "\u0130":  # Go maps the dotted capital I to a plain "i"; Python adds a combining dot
        return "i"
    mapped = ch.lower()
    return mapped if len(mapped) == 1 else ch


@register("lower", 1)
def lower(text: Any) -> str:
    return "".join(_go_lower(c) for c in want_string(text))


@register("upper", 1)
def upper(text: Any) -> str:
    return "".join(_go_upper(c) for c in want_string(text))


def _is_title_separator(ch: str) -> bool:
    # Go's strings.Title: ASCII letters, digits and "_" continue a word, other ASCII breaks it.
    if ch.isascii():
        return not (ch.isalnum() or ch == "_")
    if ch.isalpha() or ch.isdigit():
        return False
    return ch in _GO_SPACE


@register("title", 1)
def title(text: Any) -> str:
    out: list[str] = []
    previous = " "
    for ch in want_string(text):
        out.append(_go_upper(ch) if _is_title_separator(previous) else ch)
        previous = ch
    return "".join(out)


@register("strrev", 1)
def strrev(text: Any) -> str:
    return "".join(reversed(graphemes(want_string(text))))


@register("substr", 3)
def substr(text: Any, offset: Any, length: Any) -> str:
    clusters = graphemes(want_string(text))
    start, count = want_int(offset, "offset"), want_int(length, "length")
    if start < 0:
        start = max(start + len(clusters), 0)  # cty clamps an offset before the start to the start
    if start >= len(clusters):
        return ""
    if count < 0:  # any negative length means "to the end", not only the documented -1
        return "".join(clusters[start:])
    return "".join(clusters[start : start + count])


@register("trim", 2)
def trim(text: Any, cutset: Any) -> str:
    return want_string(text).strip(want_string(cutset))


@register("trimprefix", 2)
def trimprefix(text: Any, prefix: Any) -> str:
    return want_string(text).removeprefix(want_string(prefix))


@register("trimsuffix", 2)
def trimsuffix(text: Any, suffix: Any) -> str:
    return want_string(text).removesuffix(want_string(suffix))


@register("trimspace", 1)
def trimspace(text: Any) -> str:
    return want_string(text).strip(_GO_SPACE)


@register("split", 2)
def split(separator: Any, text: Any) -> list[str]:
    sep, s = want_string(separator), want_string(text)
    if sep == "":
        return list(s)
    return s.split(sep)


# --- regular expressions --------------------------------------------------------------------------------


def _compile(pattern: Any) -> re.Pattern[str]:
    try:
        return compile_re2(want_string(pattern, "the pattern"))
    except RegexSyntaxError as exc:
        raise ArgumentError(str(exc)) from None


def _captures(compiled: re.Pattern[str], match: re.Match[str]) -> Any:
    if compiled.groups == 0:
        return match.group(0)
    if compiled.groupindex:
        if len(compiled.groupindex) != compiled.groups:
            raise ArgumentError("a pattern may not mix named and unnamed capture groups")
        return {name: match.group(name) for name in compiled.groupindex}
    return list(match.groups())


@register("regex", 2)
def regex(pattern: Any, text: Any) -> Any:
    compiled = _compile(pattern)
    match = compiled.search(want_string(text))
    if match is None:
        raise ArgumentError("pattern did not match any part of the given string")
    return _captures(compiled, match)


def go_matches(compiled: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Successive matches as Go finds them: an empty match right after the previous match is skipped
    (Python, since 3.7, reports it)."""
    matches: list[re.Match[str]] = []
    for match in compiled.finditer(text):
        if matches and match.start() == match.end() == matches[-1].end():
            continue
        matches.append(match)
    return matches


@register("regexall", 2)
def regexall(pattern: Any, text: Any) -> list[Any]:
    compiled = _compile(pattern)
    return [_captures(compiled, m) for m in go_matches(compiled, want_string(text))]


_GO_TEMPLATE_REF = re.compile(r"\$(?:\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))")


def _expand_go_template(template: str, match: re.Match[str]) -> str:
    """Go's Regexp.Expand: ``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``; unknown names expand to ""."""

    def one(ref: re.Match[str]) -> str:
        if ref.group(0) == "$$":
            return "$"
        name = ref.group(1) or ref.group(2)
        if name.isdigit():
            index = int(name)
            return (match.group(index) or "") if index <= (match.re.groups) else ""
        return (match.group(name) or "") if name in match.re.groupindex else ""

    return _GO_TEMPLATE_REF.sub(one, template)


@register("replace", 3)
def replace(text: Any, substring: Any, replacement: Any) -> str:
    s, old, new = want_string(text), want_string(substring), want_string(replacement)
    if len(old) > 1 and old.startswith("/") and old.endswith("/"):
        compiled = _compile(old[1:-1])
        pieces: list[str] = []
        position = 0
        for match in go_matches(compiled, s):
            pieces.append(s[position : match.start()])
            pieces.append(_expand_go_template(new, match))
            position = match.end()
        pieces.append(s[position:])
        return "".join(pieces)
    return s.replace(old, new)


@register("templatestring", 2, unknowns="handled", needs_context=True)
def templatestring(ctx: FunctionContext, template: Any, variables: Any) -> Any:
    if contains_unknown(template) or is_unknown(variables):
        return UNKNOWN
    if ctx.render_template is None:
        raise ArgumentError("templates cannot be rendered here")
    return ctx.render_template(
        want_string(template, "the template"), "<templatestring>", want_mapping(variables)
    )
