"""Evaluate what OPA evaluates outside a negation before the negation, as OPA's compiler does.

OPA never evaluates a reference or a call nested in a negated expression inside the negation: its
compiler first moves nested calls out of every expression (stage RewriteExprTerms), then moves every
reference out of call arguments, out of the keys of other references and out of array, object and set
literals (stage RewriteDynamicTerms, after ``==`` became ``=``). So in OPA

    allow contains "no cost" if { not has_key(input.costEstimation, "totalMonthlyCost") }

runs as ``x := input.costEstimation; not has_key(x, "totalMonthlyCost")``: without a cost estimate
the rule is undefined. regorus evaluates the whole negation and finds it true: it allowed. We write the
moved terms out in the source before the negation, on the negation's own line, so regorus decides
as OPA and errors still point at the user's line:

    allow contains "no cost" if { __not1__ := input.costEstimation; not has_key(__not1__, "totalMonthlyCost") }

What stays inside the negation, as in OPA: a reference that is the whole expression (``not input.a``)
or a side of ``=``/``==`` (``not input.a == "x"``), local variables, constants and comprehensions.
"""

from __future__ import annotations

import re

from policies_app.rego.syntax_tree import (
    CALL_KINDS,
    COMPREHENSION_KINDS,
    REF_KINDS,
    SCALAR_KINDS,
    Node,
    ParsedModule,
    Source,
    body_of,
    children,
    import_aliases,
    kind_of,
    parse_module,
    rule_queries,
    span,
)

_VAR_PREFIX = "__not"
_GENERATED = re.compile(r"__not(\d+)__")
_COMPOSITE_KINDS = frozenset({"Array", "Set", "Object"})


class _Scope:
    """Which variable names in one rule are references (rules, imports, input, data), not locals."""

    def __init__(self, global_names: set[str], module: ParsedModule, rule: Node) -> None:
        self.global_names = global_names - _declared_locals(module, rule)

    def is_reference(self, node: Node) -> bool:
        return kind_of(node) == "Var" and node["Var"]["value"] in self.global_names


def _declared_locals(module: ParsedModule, rule: Node) -> set[str]:
    """Names a rule declares for itself: function arguments, ``:=``, ``some``, ``every`` variables."""
    names: set[str] = set()

    def pattern_vars(node: Node) -> None:
        if kind_of(node) == "Var":
            names.add(node["Var"]["value"])
        elif kind_of(node) in _COMPOSITE_KINDS:
            for child in children(node):
                pattern_vars(child)

    def visit_expression(node: Node) -> None:
        kind = kind_of(node)
        if kind == "AssignExpr" and node[kind]["op"] == "ColEq":
            pattern_vars(node[kind]["lhs"])
        for child in children(node):
            visit_expression(child)

    if kind_of(rule) == "Spec":
        head = rule["Spec"]["head"]
        for argument in head[kind_of(head)].get("args") or []:
            pattern_vars(argument)
    for query in rule_queries(rule):
        for stmt in query["stmts"]:
            literal = stmt["literal"]
            kind = kind_of(literal)
            value = literal[kind]
            if kind == "SomeVars":
                names.update(module.text(var["start"], var["end"]) for var in value.get("vars") or [])
            elif kind == "SomeIn":
                for part in ("key", "value"):
                    if value.get(part) is not None:
                        pattern_vars(value[part])
            elif kind == "Every":
                names.update(
                    module.text(value[part]["start"], value[part]["end"])
                    for part in ("key", "value")
                    if value.get(part)
                )
            if kind in ("Expr", "NotExpr"):
                visit_expression(value["expr"])
    return names


def _hoist_argument(node: Node, scope: _Scope, out: list[Node]) -> None:
    """A term in a call argument or inside a literal: references and calls are computed first."""
    kind = kind_of(node)
    if kind in SCALAR_KINDS or kind in COMPREHENSION_KINDS:
        return  # comprehensions are always defined: computing them first changes nothing
    if kind == "Var":
        if scope.is_reference(node):
            out.append(node)
        return
    if kind == "UnaryExpr" and kind_of(node[kind]["expr"]) == "Number":
        return  # a negative number literal
    if kind in REF_KINDS or kind in CALL_KINDS:
        out.append(node)
        return
    for child in children(node):
        _hoist_argument(child, scope, out)


def _hoist_reference_keys(node: Node, scope: _Scope, out: list[Node]) -> None:
    """A reference kept in place: what its keys read, and a computed subject, come first."""
    indexes: list[Node] = []
    while kind_of(node) in REF_KINDS:
        value = body_of(node)
        if kind_of(node) == "RefBrack":
            indexes.append(value["index"])
        node = value["refr"]
    subject_kind = kind_of(node)
    if subject_kind in CALL_KINDS or subject_kind in _COMPOSITE_KINDS or subject_kind in COMPREHENSION_KINDS:
        out.append(node)
    for index in reversed(indexes):
        _hoist_argument(index, scope, out)


def _hoist_equality_side(node: Node, scope: _Scope, out: list[Node]) -> None:
    kind = kind_of(node)
    if kind in REF_KINDS:
        _hoist_reference_keys(node, scope, out)
    elif kind in CALL_KINDS:
        out.append(node)
    elif kind in _COMPOSITE_KINDS:
        _hoist_argument(node, scope, out)


def hoisted_terms(expression: Node, scope: _Scope) -> list[Node]:
    """The terms OPA evaluates before the negated ``expression``, in source order."""
    out: list[Node] = []
    kind = kind_of(expression)
    value = body_of(expression)
    if (kind == "AssignExpr" and value["op"] == "Eq") or (kind == "BoolExpr" and value["op"] == "Eq"):
        _hoist_equality_side(value["lhs"], scope, out)
        _hoist_equality_side(value["rhs"], scope, out)
    elif kind in CALL_KINDS:
        operands = value["params"] if kind == "Call" else list(children(expression))
        for operand in operands:
            _hoist_argument(operand, scope, out)
    elif kind in REF_KINDS:
        _hoist_reference_keys(expression, scope, out)
    elif kind in _COMPOSITE_KINDS:
        _hoist_argument(expression, scope, out)
    return sorted(out, key=lambda node: span(node)[0])


def _statement_end(module: ParsedModule, stmt: Node) -> int:
    """Where a statement ends: regorus's span stops before the closing quote of a final string."""
    end = stmt["span"]["end"]
    for modifier in stmt.get("with_mods") or []:
        end = max(end, modifier["span"]["end"])
    if module.data[end : end + 1] == b'"':
        end += 1
    return end


def _braceless_bodies(module: ParsedModule, rule: Node) -> dict[int, tuple[int, int]]:
    """Rule bodies written without braces (``x if not input.a in {"b"}``, ``else := 1 if not y``):
    the id of their one statement -> the body's byte range. Statements cannot be added to such a
    body, so the rewrite puts braces around it first. Comprehension bodies take ``;`` and ``every``
    bodies always have braces."""
    if kind_of(rule) != "Spec":
        return {}
    found = {}
    for body in rule["Spec"]["bodies"]:
        query = body["query"]
        start = query["span"]["start"]
        if module.data[start : start + 1] == b"{" or not query["stmts"]:
            continue
        for stmt in query["stmts"]:
            found[id(stmt)] = (start, _statement_end(module, query["stmts"][-1]))
    return found


def _negations(
    module: ParsedModule, global_names: set[str]
) -> list[tuple[Node, list[Node], tuple[int, int] | None]]:
    """Every negated statement of the module with the terms to move out of it, and the range of its
    body when that body has no braces."""
    found = []
    for rule in module.tree.get("rules") or []:
        scope = _Scope(global_names, module, rule)
        braceless = _braceless_bodies(module, rule)
        for query in rule_queries(rule):
            for stmt in query["stmts"]:
                literal = stmt["literal"]
                if kind_of(literal) != "NotExpr":
                    continue
                terms = hoisted_terms(literal["NotExpr"]["expr"], scope)
                if terms:
                    found.append((stmt, terms, braceless.get(id(stmt))))
    return found


def hoist_out_of_negations(
    module: ParsedModule, package_rules: set[str], *, rego_v0: bool
) -> tuple[str, ParsedModule]:
    """The module's source with negations rewritten as OPA compiles them, and its new syntax tree.

    ``package_rules`` are the first names of every rule of the module's package (in any module):
    a variable with such a name reads the rule, so it is a reference like ``input.x``.
    """
    global_names = {"input", "data", *package_rules, *import_aliases(module)}
    counter = max((int(number) for number in _GENERATED.findall(module.source)), default=0)
    while True:
        negations = _negations(module, global_names)
        if not negations:
            return module.source, module
        edits = Source(module.data)
        taken: list[tuple[int, int]] = []
        for stmt, terms, body in negations:
            start, end = stmt["span"]["start"], stmt["span"]["end"]
            if any(start < other_end and other_start < end for other_start, other_end in taken):
                continue  # nested in a statement rewritten in this round: done in the next one
            taken.append((start, end))
            modifiers = stmt.get("with_mods") or []
            with_text = (
                " " + module.text(modifiers[0]["span"]["start"], _statement_end(module, stmt))
                if modifiers
                else ""
            )
            assignments = []
            for term in terms:
                counter += 1
                name = f"{_VAR_PREFIX}{counter}__"
                term_start, term_end = span(term)
                assignments.append(f"{name} := {module.text(term_start, term_end)}{with_text}; ")
                edits.replace(term_start, term_end, name)
            if body is None:
                edits.insert(start, "".join(assignments))
            else:  # `x if not f(input.a)` becomes `x if { __not1__ := input.a; not f(__not1__) }`
                edits.insert(body[0], "{ " + "".join(assignments))
                edits.insert(body[1], " }")
        source = edits.result()
        module = parse_module(module.filename, source, rego_v0)
