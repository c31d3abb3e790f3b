"""Which input paths each fired decision rule read, from OPA's evaluation trace (no Django).

OPA's tracer reports every expression it evaluates, after the compiler's rewrite (locals renamed
``__localN__``), with its location, and every unification with the values bound. For each time a rule
of ``deny``/``pending``/``warn``/``allow`` produces a value (its query exits), the expressions that
succeeded on the way (the chain left after backtracking) are read for references into ``input``, either
direct (``input.plan.resource_changes[__local1__]``) or through a local bound to one (``__local2__.change
.after.acl``); a variable index is replaced by the value it was unified with. Only paths come back: the
caller reads their values from the input it holds, so masking is its business (guards/masking.py).

Helper rules and functions the rule calls are followed: what they read on their way to success counts
as read by the caller, a parameter standing for the input value it was given. What this does not follow
(the explanation is best-effort, never part of the decision): iteration inside comprehensions, and a
helper's reads through values it computed rather than read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

Path = list[str | int]

MAX_READS_PER_RULE = 20
MAX_FIRED = 100
_LOCAL = r"(?:__local\d+__|\$\d+)"  # locals, and wildcards (`_`) as the compiler renames them
_VAR = r"(?:__local\d+__|\$\d+|_)"  # what an index may be bound to (a wildcard may stay `_`)
_INDEX = r"\[(?:\"(?:[^\"\\]|\\.)*\"|-?\d+|" + _VAR + r")\]"
_REF = re.compile(r"(?<![\w.])(input|" + _LOCAL + r")((?:\.[A-Za-z_][A-Za-z0-9_]*|" + _INDEX + r")*)")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\"(?:[^\"\\]|\\.)*\"|-?\d+|" + _VAR + r")\]")
_ASSIGN = re.compile(r"^(" + _LOCAL + r") = (.+)$")
_BOUND = re.compile(r"^(.+) = (" + _VAR + r")$")
_BINDS = re.compile(r"^(" + _LOCAL + r") = (.+)$")
_HEAD = re.compile(r"^\S+ contains (.+?) if \{")


def _value(text: str) -> Any:
    """A term's text as a JSON value (Rego's scalars and most composites read as JSON), else None."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _steps(text: str, bindings: dict[str, Any]) -> Path | None:
    """The keys of a reference's tail; None when an index is a variable not bound to a scalar."""
    steps: Path = []
    for name, index in _STEP.findall(text):
        if name:
            steps.append(name)
            continue
        key = bindings.get(index) if re.fullmatch(_VAR, index) else _value(index)
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            return None
        steps.append(key)
    return steps


def _reads_of(chain: list[str], bindings: dict[str, Any]) -> list[Path]:
    """The input paths the expressions of ``chain`` read, most specific only, in order."""
    aliases: dict[str, Path] = {}  # a local bound to a value read from input
    reads: list[Path] = []
    for node in chain:
        for root, tail in _REF.findall(node):
            if root not in aliases and isinstance(bindings.get(root), (dict, list)):
                # A helper's parameter holding a value read from input (the value tells which).
                same = [alias for alias in aliases if bindings.get(alias) == bindings[root]]
                if same:
                    aliases[root] = aliases[same[0]]
            base = ["input"] if root == "input" else aliases.get(root)
            steps = _steps(tail, bindings) if base is not None else None
            if base is None or steps is None or (root == "input" and not steps):
                continue
            path = [*base, *steps]
            if path not in reads:
                reads.append(path)
        assigned = _ASSIGN.match(node)
        if assigned:
            matched = _REF.fullmatch(assigned.group(2))
            if matched:
                base = ["input"] if matched.group(1) == "input" else aliases.get(matched.group(1))
                steps = _steps(matched.group(2), bindings)
                if base is not None and steps is not None:
                    aliases[assigned.group(1)] = [*base, *steps]
    specific = [path for path in reads if not any(o != path and o[: len(path)] == path for o in reads)]
    return specific[:MAX_READS_PER_RULE]


def _message(head: str, bindings: dict[str, Any]) -> Any:
    """The value a partial set rule's head produced (``deny contains msg if {...}``), None when unknown
    (a boolean rule such as ``allow if {...}`` has none)."""
    matched = _HEAD.match(head)
    if not matched:
        return None
    term = matched.group(1)
    return bindings.get(term) if re.fullmatch(_LOCAL, term) else _value(term)


def fired_with_reads(
    trace: Iterable[dict[str, Any]], heads: list[tuple[str, str, int, int]]
) -> list[dict[str, Any]]:
    """Each value a decision rule produced: {rule, file, line, message, reads: [path...]}.

    ``heads``: (rule, file, line, column) of every decision rule definition (testing.py)."""
    rule_at = {f"{file}:{line}": (rule, file, line) for rule, file, line, _ in heads}
    rule_queries: dict[int, tuple[str, str, int]] = {}
    chains: dict[int, list[str]] = {}
    bindings: dict[str, Any] = {}
    fired: list[dict[str, Any]] = []
    helpers: dict[int, int] = {}  # helper query -> the query that called it
    for event in trace:
        op, query, node = event.get("op"), event.get("query_id"), event.get("node") or ""
        if op == "Enter" and event.get("location") in rule_at:
            rule_queries[query] = rule_at[event["location"]]
            chains[query] = []
        elif op == "Enter" and event.get("parent_id") in chains and query not in chains:
            helpers[query] = event["parent_id"]  # a helper rule or function the rule called
            chains[query] = []
        elif op == "Eval" and query in chains:
            chain = chains[query]
            if node in chain:
                del chain[chain.index(node) :]  # backtracked to this expression: what followed is undone
            chain.append(node)
        elif op == "Fail" and query in chains and node in chains[query]:
            del chains[query][chains[query].index(node) :]
        elif op == "Unify":
            bound, binds = _BOUND.match(node), _BINDS.match(node)
            if bound:
                bindings[bound.group(2)] = _value(bound.group(1))
            elif binds and _value(binds.group(2)) is not None:
                bindings[binds.group(1)] = _value(binds.group(2))
        elif op == "Exit" and query in helpers and helpers[query] in chains:
            chains[helpers[query]].extend(chains[query])  # what the helper read, the caller read
        elif op == "Exit" and query in rule_queries and len(fired) < MAX_FIRED:
            rule, file, line = rule_queries[query]
            fired.append(
                {
                    "rule": rule,
                    "file": file,
                    "line": line,
                    "message": _message(node, bindings),
                    "reads": _reads_of(chains.get(query, []), bindings),
                }
            )
    return fired
