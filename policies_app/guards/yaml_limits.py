"""YAML from outside (policy data in repositories), read with PyYAML's safe loader and a bound on aliases.

``yaml.safe_load`` shares the node of an anchor between its aliases, so a "billion laughs" document stays
small in memory until something walks it: a 330-byte ``data.yaml`` of nested aliases became 15 MB of
policy data once stored as JSON, and took 10.6 s. Here the composed document is measured before it is
constructed: what aliases add (each alias counts as the whole subtree it stands for) may not exceed
``ALIAS_EXPANSION_BUDGET`` nodes, and an alias may not stand inside the node it names (a document that
contains itself has no JSON form). The measure is one pass over the nodes, memoised, so it costs no more
than reading the document. No Django here: repository folders are read without it.
"""

from __future__ import annotations

from typing import Any

import yaml

# Nodes that aliases may add to a document: plenty for anchors that share a block of settings a few
# times, far below what makes a data file grow by orders of magnitude.
ALIAS_EXPANSION_BUDGET = 10_000


class YAMLTooExpansiveError(yaml.constructor.ConstructorError):
    """Refused before construction; ``problem`` and ``problem_mark`` say why and where, as PyYAML's own."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def require_bounded_expansion(root: yaml.Node, budget: int = ALIAS_EXPANSION_BUDGET) -> None:
    """Raise YAMLTooExpansiveError when the aliases of the document under ``root`` expand too far."""
    expanded: dict[int, int] = {}  # id(node) -> nodes it stands for, aliases expanded
    open_nodes: set[int] = set()  # nodes whose subtree is being measured: an alias to one is a cycle
    first_too_large: yaml.Node | None = None  # the innermost node over the budget by itself: named
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, measured_children = stack.pop()
        key = id(node)
        if measured_children:
            open_nodes.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            if first_too_large is None and expanded[key] > budget:
                first_too_large = node
            continue
        if key in expanded:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise YAMLTooExpansiveError(
                    None, None, "an alias refers to a node that contains it", child.start_mark
                )
            if id(child) not in expanded:
                stack.append((child, False))
    added = expanded[id(root)] - len(expanded)
    if added > budget:
        raise YAMLTooExpansiveError(
            None,
            None,
            f"its aliases expand it by {added:,} nodes, more than the {budget:,} allowed "
            "(write the values out, or share fewer of them)",
            (first_too_large or root).start_mark,
        )


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that measures each document before constructing it."""

    def construct_document(self, node: yaml.Node) -> Any:
        require_bounded_expansion(node)
        return super().construct_document(node)


def load_bounded_yaml(text: str) -> Any:
    """The one document of ``text``, as ``yaml.safe_load`` reads it, within the alias budget.

    Raises yaml.YAMLError (with ``problem`` and ``problem_mark``) for what it refuses, and RecursionError
    for a document nested deeper than Python's stack, which the caller reports as too deep."""
    return yaml.load(text, Loader=BoundedSafeLoader)  # noqa: S506 - a SafeLoader subclass
