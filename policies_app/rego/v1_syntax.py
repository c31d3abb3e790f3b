"""Rego v0 modules written in v1 syntax, for OPA 1.x's library, which parses v1 only.

The conversion is the one ``opa fmt --v0-v1`` makes, on regorus's syntax tree: ``if`` before every
rule body (``p { ... }`` -> ``p if { ... }``, ``else = 1 { ... }`` -> ``else = 1 if { ... }``), and
``contains`` in partial set heads (``deny[msg] { ... }`` -> ``deny contains msg if { ... }``). Text is only
inserted or replaced on the line where it is, so OPA's positions are the user's. OPA then compiles the
module as v1: builtins deprecated before 1.0 (``re_match``, ``any``...), duplicate imports and variables
named ``input`` or ``data`` are refused, as ``opa check --v0-v1`` refuses them.
"""

from __future__ import annotations

import re

from policies_app.rego.syntax_tree import ParsedModule, Source, kind_of

_SPACE_OR_COMMENT = re.compile(rb"(?:\s+|#[^\n]*)*")


def _skip_forward(data: bytes, at: int) -> int:
    return _SPACE_OR_COMMENT.match(data, at).end()


def _previous_word(data: bytes, at: int) -> bytes:
    text = data[:at].rstrip()
    match = re.search(rb"[A-Za-z_][A-Za-z0-9_]*$", text)
    return match.group() if match else b""


def _body_brace(module: ParsedModule, body: dict, head_end: int) -> int | None:
    """Where the ``{`` of a body is when it has no ``if`` before it; None when nothing is to be added.

    ``head_end``: where the rule's head ends. An ``if`` that is the head itself is a v0 rule named
    ``if`` (v0 reads ``if`` as a name without ``import future.keywords.if``), not the keyword: a
    function head on the line before (``f(x) = true`` then ``if { x[_] == 1 }``) stays a function
    without a body, as in v0, instead of taking the next rule's body as v1 would read it."""
    data = module.data
    query_start = body["query"]["span"]["start"]
    if body["is_else"]:
        assign = body.get("assign")
        after = assign["span"]["end"] if assign else query_start + len(b"else")
        brace = _skip_forward(data, after)
    else:
        brace = query_start
    if brace >= len(data) or data[brace : brace + 1] != b"{":
        return None  # no body braces (``else = 1``), or already ``if``
    if _previous_word(data, brace) == b"if" and len(data[:brace].rstrip()) > head_end:
        return None
    return brace


def to_rego_v1(module: ParsedModule) -> str:
    """The module in v1 syntax (the v0 module must have been parsed by regorus in v0 mode)."""
    edits = Source(module.data)
    data = module.data
    for rule in module.tree.get("rules") or []:
        if kind_of(rule) != "Spec":
            continue
        spec = rule["Spec"]
        head = spec["head"]
        head_end = head[kind_of(head)]["span"]["end"]
        if kind_of(head) == "Set":
            value = head["Set"]
            refr = value["refr"]
            refr_end = refr[kind_of(refr)]["span"]["end"]
            bracket = _skip_forward(data, refr_end)
            head_end = value["span"]["end"]
            if data[bracket : bracket + 1] == b"[" and data[head_end - 1 : head_end] == b"]":
                edits.replace(refr_end, bracket + 1, " contains ")
                edits.replace(head_end - 1, head_end, "")
        for number, body in enumerate(spec["bodies"]):
            if number > 0 and not body["is_else"]:
                continue  # ``p if { a } { b }``: only the first of chained bodies takes ``if``
            brace = _body_brace(module, body, head_end)
            if brace is not None:
                edits.insert(brace, "if ")
    return edits.result()
