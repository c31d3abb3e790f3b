"""The dependency graph of a configuration: one node per variable, local, resource, data source,
module call, output and check block of every module, and an edge for every reference.

Nodes are per module *path* (``("app", "net")``), not per module instance: every node of a child
module also depends on its module call, whose count/for_each says which instances there are.
"""

from __future__ import annotations

from collections.abc import Iterable

from policies_app.iac import syntax_nodes
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.graph import Graph, body_references, expression_references
from policies_app.iac.module_tree import MODULE_META_ATTRIBUTES, Module

Node = tuple  # (module path, kind, name); kind: var, local, resource, data, call, output, check

_LABELS = {
    "var": "var.",
    "local": "local.",
    "data": "data.",
    "call": "module.",
    "output": "output.",
    "check": "check.",
}


def node_name(node: Node) -> str:
    """A node as a user reads it: ``module.app.local.a``, ``aws_instance.web``, ``output.x``."""
    path, kind, name = node
    prefix = "".join(f"module.{p}." for p in path)
    return prefix + _LABELS.get(kind, "") + name


def node_block(
    modules: dict[tuple[str, ...], Module], node: Node
) -> syntax_nodes.Block | syntax_nodes.Attribute:
    path, kind, name = node
    module = modules[path]
    table = {
        "var": module.variables,
        "local": module.locals,
        "resource": module.resources,
        "data": module.data,
        "call": module.calls,
        "output": module.outputs,
        "check": module.checks,
    }[kind]
    return table[name]


def node_pos(modules: dict[tuple[str, ...], Module], node: Node) -> syntax_nodes.Pos | None:
    try:
        return node_block(modules, node).pos
    except KeyError:
        return None


def build_graph(modules: dict[tuple[str, ...], Module], reporter: Reporter) -> Graph:
    return _GraphBuilder(modules, reporter).build()


class _GraphBuilder:
    def __init__(self, modules: dict[tuple[str, ...], Module], reporter: Reporter) -> None:
        self.modules = modules
        self.reporter = reporter
        self.graph = Graph()
        self.self_referencing: set[Node] = set()

    def _targets(self, module: Module, reference: tuple) -> list[Node]:
        kind = reference[0]
        path = module.path
        if kind == "var" or kind == "local":
            return [(path, kind, reference[1])]
        if kind == "resource" or kind == "data":
            return [(path, kind, f"{reference[1]}.{reference[2]}")]
        name, output = reference[1], reference[2]
        nodes: list[Node] = [(path, "call", name)]
        child = module.children.get(name)
        if child is not None:
            outputs = [output] if output is not None else list(child.outputs)
            nodes.extend((child.path, "output", out) for out in outputs)
        return nodes

    def _link(
        self, node: Node, module: Module, references: Iterable[tuple], may_name_itself: Iterable[tuple] = ()
    ) -> None:
        """Edges from the node to what its references name; a reference to the node itself is an
        error, except those of ``may_name_itself`` (terraform ignores them)."""
        graph = self.graph
        harmless = list(may_name_itself)
        for reference in references:
            for target in self._targets(module, reference):
                if target != node:
                    graph.add_edge(node, target)
                elif reference in harmless:
                    harmless.remove(reference)  # one use of the name, not every one
                elif node[1] != "var" and node not in self.self_referencing:
                    # A variable's validation reads its own value; any other block cannot.
                    self.self_referencing.add(node)
                    self.reporter.error(
                        "Self-referential block",
                        f"the configuration of {node_name(node)} refers to itself",
                        node_pos(self.modules, node),
                    )

    def _add(self, node: Node, nodes: list[Node]) -> None:
        self.graph.add_node(node)
        nodes.append(node)

    def build(self) -> Graph:
        for module in self.modules.values():
            path = module.path
            parent = self.modules.get(path[:-1]) if path else None
            nodes: list[Node] = []
            for name, block in module.variables.items():
                node = (path, "var", name)
                self._add(node, nodes)
                for nested in block.body.blocks:
                    if nested.type == "validation":
                        self._link(node, module, body_references(nested.body))
                if parent is not None:
                    argument = parent.calls[path[-1]].body.attributes.get(name)
                    if argument is not None:
                        self._link(node, parent, expression_references(argument.expr))
            for name, attribute in module.locals.items():
                node = (path, "local", name)
                self._add(node, nodes)
                self._link(node, module, expression_references(attribute.expr))
            for kind, table in (("resource", module.resources), ("data", module.data)):
                for name, block in table.items():
                    node = (path, kind, name)
                    self._add(node, nodes)
                    self._link(node, module, body_references(block.body), _ordering_references(block))
            for name, block in module.calls.items():
                node = (path, "call", name)
                self._add(node, nodes)
                meta = {k: v for k, v in block.body.attributes.items() if k in MODULE_META_ATTRIBUTES}
                self._link(node, module, body_references(syntax_nodes.Body(meta)))
                self._check_module_arguments(module, name, block)
            for kind, table in (("output", module.outputs), ("check", module.checks)):
                for name, block in table.items():
                    node = (path, kind, name)
                    self._add(node, nodes)
                    self._link(node, module, body_references(block.body))
            if path:
                parent_call = (path[:-1], "call", path[-1])
                for node in nodes:
                    self.graph.add_edge(node, parent_call)
        return self.graph

    def _check_module_arguments(self, module: Module, name: str, block: syntax_nodes.Block) -> None:
        child = module.children.get(name)
        if child is None or not child.loaded:
            return
        for argument, attribute in block.body.attributes.items():
            if argument not in MODULE_META_ATTRIBUTES and argument not in child.variables:
                self.reporter.error(
                    "Unsupported argument",
                    f"module {name}: an argument named {argument!r} is not expected "
                    "(no such variable in the module)",
                    attribute.pos,
                )


def _ordering_references(block: syntax_nodes.Block) -> list[tuple]:
    """The references of a resource's ``depends_on``: terraform accepts the resource's own name there
    (a self-edge it drops), unlike anywhere else in the block (``replace_triggered_by`` naming itself
    fails its plan)."""
    depends_on = block.body.attributes.get("depends_on")
    return expression_references(depends_on.expr) if depends_on is not None else []
