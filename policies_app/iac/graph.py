"""A dependency graph of configuration blocks, ordered without recursion.

Configurations can chain thousands of locals, so every walk here is iterative: Python's recursion
limit must never decide whether a configuration can be evaluated.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable

from policies_app.iac import syntax_nodes
from policies_app.iac.records import Record


class Graph(Record):
    """Nodes with the nodes they depend on. A node added twice keeps the union of its dependencies.

    ``deps`` maps a node to the nodes that must be evaluated before it; insertion order is kept so
    that the evaluation order (and so the order of diagnostics) is deterministic.
    """

    deps: dict[Hashable, list[Hashable]]

    _fields = ("deps",)

    def __init__(self, deps: dict[Hashable, list[Hashable]] | None = None) -> None:
        self.deps = dict() if deps is None else deps

    def add_node(self, node: Hashable) -> None:
        self.deps.setdefault(node, [])

    def add_edge(self, node: Hashable, depends_on: Hashable) -> None:
        """``node`` needs ``depends_on``; unknown targets are ignored by the walks, not invented."""
        self.deps.setdefault(node, []).append(depends_on)

    def __contains__(self, node: Hashable) -> bool:
        return node in self.deps

    def __len__(self) -> int:
        return len(self.deps)


def topological_order(
    graph: Graph, roots: Iterable[Hashable] | None = None, done: Container[Hashable] = ()
) -> tuple[list, list[list]]:
    """Nodes in an order where each comes after everything it depends on, and the cycles found.

    With ``roots``, only those nodes and their (transitive) dependencies are ordered: this is what the
    lazy requests use. An iterative depth-first search (not Kahn) so that a lazy request orders only
    what it needs. Every node on a cycle is still placed in the order (after the nodes of the cycle that
    were reached first) so that callers can give it an error value instead of losing it; each cycle is
    reported once, as the list of its nodes starting and ending at the same node. Nodes in ``done``
    (already evaluated) are neither ordered nor walked through, so repeated lazy requests stay cheap.
    """
    deps = graph.deps
    order: list = []
    state: dict[Hashable, int] = {}  # 1 = on the current path, 2 = done
    cycles: list[list] = []
    seen_cycles: set[frozenset] = set()
    start_nodes = list(deps) if roots is None else list(roots)
    for start in start_nodes:
        if start not in deps or state.get(start) == 2:
            continue
        # Each stack entry: the node and an iterator over its dependencies.
        path: list = [start]
        stack = [iter(deps[start])]
        state[start] = 1
        while stack:
            advanced = False
            for dep in stack[-1]:
                if dep not in deps or dep in done:
                    continue
                mark = state.get(dep)
                if mark is None:
                    state[dep] = 1
                    path.append(dep)
                    stack.append(iter(deps[dep]))
                    advanced = True
                    break
                if mark == 1:
                    cycle = path[path.index(dep) :] + [dep]
                    key = frozenset(cycle)
                    if key not in seen_cycles:
                        seen_cycles.add(key)
                        cycles.append(cycle)
            if not advanced:
                stack.pop()
                finished = path.pop()
                state[finished] = 2
                order.append(finished)
    return order, cycles


# -- references in expressions ---------------------------------------------------------------------------

# Names whose references never point at another block.
_NOT_BLOCKS = frozenset({"count", "each", "self", "path", "terraform", "ephemeral"})


def expression_references(expr: syntax_nodes.Expr | None, bound: frozenset[str] = frozenset()) -> list[tuple]:
    """The blocks an expression refers to, as tuples:

    ``("var", NAME)``, ``("local", NAME)``, ``("module", CALL, OUTPUT or None)``,
    ``("resource", TYPE, NAME)``, ``("data", TYPE, NAME)``.

    ``bound`` holds names bound around the expression (for-expression variables, dynamic block
    iterators) which hide blocks of the same name. ``count``/``each``/``self``/``path``/``terraform``
    are not blocks.
    """
    found: list[tuple] = []
    if expr is not None:
        _walk(expr, bound, found)
    return found


def body_references(
    body: syntax_nodes.Body,
    bound: frozenset[str] = frozenset(),
    skip_attributes: frozenset[str] = frozenset(),
) -> list[tuple]:
    """References in every attribute and nested block of a body (dynamic block iterators bound)."""
    found: list[tuple] = []
    bodies = [(body, bound, skip_attributes)]
    while bodies:
        current, names, skip = bodies.pop()
        for name, attribute in current.attributes.items():
            if name not in skip:
                _walk(attribute.expr, names, found)
        for block in current.blocks:
            if block.type == "dynamic" and block.labels:
                iterator = block.labels[0]
                iterator_attr = block.body.attributes.get("iterator")
                if iterator_attr is not None:
                    _walk(iterator_attr.expr, names, found)
                    iterator = keyword_of(iterator_attr.expr) or iterator
                for key in ("for_each", "labels"):
                    attribute = block.body.attributes.get(key)
                    if attribute is not None:
                        _walk(attribute.expr, names, found)
                inner = names | {iterator}
                for nested in block.body.blocks:
                    if nested.type == "content":
                        bodies.append((nested.body, inner, frozenset()))
            else:
                bodies.append((block.body, names, frozenset()))
    return found


def keyword_of(expr: syntax_nodes.Expr) -> str | None:
    """A bare word written as a reference (native syntax) or as a string (JSON syntax)."""
    if isinstance(expr, syntax_nodes.Reference):
        return expr.name
    if isinstance(expr, syntax_nodes.Literal) and isinstance(expr.value, str):
        return expr.value
    return None


def _classify(root: str, steps: list[tuple[str, object]]) -> tuple | None:
    def attr(i: int) -> str | None:
        if i < len(steps) and steps[i][0] == "attr":
            return steps[i][1]  # type: ignore[return-value]
        if (
            i < len(steps)
            and isinstance(steps[i][1], syntax_nodes.Literal)
            and isinstance(steps[i][1].value, str)
        ):
            return steps[i][1].value  # type: ignore[union-attr]
        return None

    if root in _NOT_BLOCKS:
        return None
    first = attr(0)
    if first is None:
        return None
    if root == "var":
        return ("var", first)
    if root == "local":
        return ("local", first)
    if root == "module":
        if len(steps) > 1 and steps[1][0] == "index":
            output = attr(2)  # module.x[0].out, module.x["k"].out
        else:
            output = attr(1)
        return ("module", first, output)
    if root == "data":
        second = attr(1)
        return ("data", first, second) if second is not None else None
    return ("resource", root, first)


def _walk(expr: object, bound: frozenset[str], found: list[tuple]) -> None:
    kind = type(expr)
    if kind is syntax_nodes.GetAttr or kind is syntax_nodes.Index or kind is syntax_nodes.Reference:
        steps: list[tuple[str, object]] = []
        node = expr
        while True:
            node_kind = type(node)
            if node_kind is syntax_nodes.GetAttr:
                steps.append(("attr", node.name))  # type: ignore[attr-defined]
                node = node.target  # type: ignore[attr-defined]
            elif node_kind is syntax_nodes.Index:
                steps.append(("index", node.key))  # type: ignore[attr-defined]
                _walk(node.key, bound, found)  # type: ignore[attr-defined]
                node = node.target  # type: ignore[attr-defined]
            else:
                break
        if type(node) is syntax_nodes.Reference:
            if node.name not in bound:  # type: ignore[attr-defined]
                steps.reverse()
                reference = _classify(node.name, steps)  # type: ignore[attr-defined]
                if reference is not None:
                    found.append(reference)
        else:
            _walk(node, bound, found)
        return
    if kind is syntax_nodes.Literal or kind is syntax_nodes.SplatItem:
        return
    if kind is syntax_nodes.TemplateExpr:
        _walk_parts(expr.parts, bound, found)  # type: ignore[attr-defined]
    elif kind is syntax_nodes.BinaryOp:
        _walk(expr.left, bound, found)  # type: ignore[attr-defined]
        _walk(expr.right, bound, found)  # type: ignore[attr-defined]
    elif kind is syntax_nodes.UnaryOp:
        _walk(expr.operand, bound, found)  # type: ignore[attr-defined]
    elif kind is syntax_nodes.FunctionCall:
        for arg in expr.args:  # type: ignore[attr-defined]
            _walk(arg, bound, found)
    elif kind is syntax_nodes.Conditional:
        _walk(expr.condition, bound, found)  # type: ignore[attr-defined]
        _walk(expr.true_expr, bound, found)  # type: ignore[attr-defined]
        _walk(expr.false_expr, bound, found)  # type: ignore[attr-defined]
    elif kind is syntax_nodes.TupleExpr:
        for item in expr.items:  # type: ignore[attr-defined]
            _walk(item, bound, found)
    elif kind is syntax_nodes.ObjectExpr:
        for key, value in expr.items:  # type: ignore[attr-defined]
            _walk(key, bound, found)
            _walk(value, bound, found)
    elif kind is syntax_nodes.Splat:
        _walk(expr.source, bound, found)  # type: ignore[attr-defined]
        _walk(expr.each, bound, found)  # type: ignore[attr-defined]
    elif kind is syntax_nodes.ForExpr:
        _walk(expr.collection, bound, found)  # type: ignore[attr-defined]
        inner = bound | {expr.value_var} | ({expr.key_var} if expr.key_var else set())  # type: ignore[attr-defined]
        for part in (expr.key_expr, expr.value_expr, expr.condition):  # type: ignore[attr-defined]
            if part is not None:
                _walk(part, inner, found)
    # Anything else (a type expression, an unknown node) refers to no block.


def _walk_parts(parts: list, bound: frozenset[str], found: list[tuple]) -> None:
    for part in parts:
        if isinstance(part, syntax_nodes.Interpolation):
            _walk(part.expr, bound, found)
        elif isinstance(part, syntax_nodes.IfDirective):
            _walk(part.condition, bound, found)
            _walk_parts(part.then_parts, bound, found)
            _walk_parts(part.else_parts, bound, found)
        elif isinstance(part, syntax_nodes.ForDirective):
            _walk(part.collection, bound, found)
            inner = bound | {part.value_var} | ({part.key_var} if part.key_var else set())
            _walk_parts(part.body_parts, inner, found)
