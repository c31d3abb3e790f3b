"""Rego syntax trees, read with regorus's parser, for the rewrites that need more than tokens.

regorus exposes its AST as JSON with byte offsets (``span.start``/``span.end``) into the module's UTF-8
text. A String node's span covers its contents only, not its quotes. Everything here works on byte
offsets; ``Source`` converts edits back to text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from policies_app.rego.contract import PolicyCompileError
from policies_app.rego.errors import parse_regorus_error

Node = dict[str, Any]
# Expression kinds that OPA turns into calls (operators are builtins there): used as a value inside
# another expression, each is computed before the expression that holds it.
CALL_KINDS = frozenset({"Call", "ArithExpr", "BinExpr", "BoolExpr", "Membership", "UnaryExpr"})
REF_KINDS = frozenset({"RefDot", "RefBrack"})
COMPREHENSION_KINDS = frozenset({"ArrayCompr", "SetCompr", "ObjectCompr"})
SCALAR_KINDS = frozenset({"Null", "Bool", "Number", "String", "RawString"})


@dataclass
class ParsedModule:
    filename: str
    source: str
    data: bytes  # the source as UTF-8: spans are offsets into it
    tree: Node  # {"package", "imports", "rules", ...}

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")


def parse_module(filename: str, source: str, rego_v0: bool) -> ParsedModule:
    """Parse one module; raises PolicyCompileError with the position of a syntax error."""
    import regorus  # every engine worker has it; imported here so that importing this module is cheap

    engine = regorus.Engine()
    engine.set_rego_v0(rego_v0)
    try:
        engine.add_policy(filename, source)
    except Exception as error:  # regorus raises RuntimeError with a Rust report
        parsed = parse_regorus_error(str(error))
        raise PolicyCompileError(
            parsed.message, file=parsed.file or filename, line=parsed.line, column=parsed.column
        ) from None
    [entry] = json.loads(engine.get_ast_as_json())
    return ParsedModule(filename, source, source.encode("utf-8"), entry["ast"])


def kind_of(node: Node) -> str:
    """The variant name of an AST node: ``{"Call": {...}}`` -> "Call"."""
    return next(iter(node))


def body_of(node: Node) -> Node:
    return node[kind_of(node)]


def span(node: Node) -> tuple[int, int]:
    """Byte range of an expression node, its quotes included for string literals."""
    kind = kind_of(node)
    inner = node[kind]["span"]
    start, end = inner["start"], inner["end"]
    if kind == "String":
        return start - 1, end + 1
    return start, end


def children(node: Node) -> Iterator[Node]:
    """The expression nodes directly inside an expression node (queries of comprehensions excluded)."""
    kind = kind_of(node)
    value = node[kind]
    if kind in REF_KINDS:
        yield value["refr"]
        if kind == "RefBrack":
            yield value["index"]
    elif kind == "Call":
        yield value["fcn"]
        yield from value["params"]
    elif kind in ("ArithExpr", "BinExpr", "BoolExpr", "AssignExpr"):
        yield value["lhs"]
        yield value["rhs"]
    elif kind == "Membership":
        if value.get("key") is not None:
            yield value["key"]
        yield value["value"]
        yield value["collection"]
    elif kind == "UnaryExpr":
        yield value["expr"]
    elif kind in ("Array", "Set"):
        yield from value["items"]
    elif kind == "Object":
        for _span, key, item in value["fields"]:
            yield key
            yield item
    elif kind == "ArrayCompr" or kind == "SetCompr":
        yield value["term"]
    elif kind == "ObjectCompr":
        yield value["key"]
        yield value["value"]


def queries_in_expression(node: Node) -> Iterator[Node]:
    """Every query (rule body) inside an expression: comprehension bodies, at any depth."""
    kind = kind_of(node)
    if kind in COMPREHENSION_KINDS:
        yield node[kind]["query"]
    for child in children(node):
        yield from queries_in_expression(child)


def literal_expressions(literal: Node) -> Iterator[Node]:
    """The expressions of one body statement (``some x in xs``, ``not e``, ``every``...)."""
    kind = kind_of(literal)
    value = literal[kind]
    if kind in ("Expr", "NotExpr"):
        yield value["expr"]
    elif kind == "SomeIn":
        for part in ("key", "value", "collection"):
            if value.get(part) is not None:
                yield value[part]
    elif kind == "SomeVars":
        return
    elif kind == "Every":
        yield value["domain"]


def nested_queries(query: Node) -> Iterator[Node]:
    """Every query inside a query's statements (``every`` bodies, comprehensions), at any depth."""
    for stmt in query["stmts"]:
        literal = stmt["literal"]
        if kind_of(literal) == "Every":
            inner = literal["Every"]["query"]
            yield inner
            yield from nested_queries(inner)
        for expression in literal_expressions(literal):
            for inner in queries_in_expression(expression):
                yield inner
                yield from nested_queries(inner)
        for modifier in stmt.get("with_mods") or []:
            for part in ("refr", "as"):
                if isinstance(modifier.get(part), dict):
                    for inner in queries_in_expression(modifier[part]):
                        yield inner
                        yield from nested_queries(inner)


def rule_queries(rule: Node) -> Iterator[Node]:
    """Every query of a rule: each body (else branches included) and the queries nested in them."""
    if kind_of(rule) != "Spec":
        return
    for body in rule["Spec"]["bodies"]:
        yield body["query"]
        yield from nested_queries(body["query"])


def rule_name(rule: Node) -> tuple[str, ...]:
    """The path a rule defines, as written in its head (``a.b[c]`` -> ("a", "b")): string keys only."""
    kind = kind_of(rule)
    if kind == "Default":
        refr = rule["Default"]["refr"]
    else:
        head = rule["Spec"]["head"]
        refr = head[kind_of(head)]["refr"]
    return ref_path(refr)


def ref_path(refr: Node) -> tuple[str, ...]:
    """``a.b["c"][x]`` -> ("a", "b", "c"): the leading part of a reference that is made of names."""
    parts: list[str] = []
    node = refr
    while True:
        kind = kind_of(node)
        value = node[kind]
        if kind == "Var":
            parts.append(value["value"])
            break
        if kind == "RefDot":
            parts.append(value["field"][1])
        elif kind == "RefBrack":
            index = value["index"]
            if kind_of(index) == "String":
                parts.append(index["String"]["value"])
            else:
                parts.clear()  # a variable key: only what comes before it is a fixed path
        else:
            return ()
        node = value["refr"]
    return tuple(reversed(parts))


def is_function(rule: Node) -> bool:
    kind = kind_of(rule)
    if kind == "Default":
        return bool(rule["Default"].get("args"))
    head = rule["Spec"]["head"]
    return kind_of(head) == "Func"


def package_path(module: ParsedModule) -> tuple[str, ...]:
    return ref_path(module.tree["package"]["refr"])


def import_aliases(module: ParsedModule) -> dict[str, str]:
    """alias -> the full reference text (``import data.lib.tfplan`` gives tfplan -> data.lib.tfplan).

    ``future.keywords`` and ``rego.v1`` imports bring keywords, not names, and are left out.
    """
    aliases: dict[str, str] = {}
    for entry in module.tree.get("imports") or []:
        refr = entry["refr"]
        start, end = span(refr)
        text = module.text(start, end)
        if text.startswith(("future.", "rego.")) or text in ("future", "rego"):
            continue
        alias = entry.get("as")  # the span of the alias, when there is one
        path = ref_path(refr)
        name = module.text(alias["start"], alias["end"]) if alias else (path[-1] if path else None)
        if name:
            aliases[name] = text
    return aliases


class Source:
    """Edits to one module's bytes, applied together; edits must not overlap."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, start: int, end: int, text: str) -> None:
        self.edits.append((start, end, text))

    def insert(self, at: int, text: str) -> None:
        self.edits.append((at, at, text))

    def result(self) -> str:
        data = self.data
        for start, end, text in sorted(self.edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        return data.decode("utf-8")
