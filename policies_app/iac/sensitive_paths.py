"""Where a configuration's values derive from variables the platform holds sensitive but the template does
not declare so (``sensitive = true``).

Terraform tracks sensitivity by marks that travel with values (values.py): a connection string built from
a sensitive variable is sensitive. The platform's own sensitive variables are sensitive only to the
platform: marking them in the evaluation policies see would change that document (a root output holding
a mark is an error, ``for_each`` refuses a marked collection, ``issensitive`` answers otherwise). So the
configuration is evaluated a second time with those root variables marked, and only where the marks
land is kept: paths into the first document (``["outputs", NAME, "value", ...]``,
``["resources", INDEX, "values", ...]``), which whatever shows the document masks (guards/masking.py).
"""

from __future__ import annotations

from typing import Any

from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.module_calls import declared_sensitive
from policies_app.iac.values import UNKNOWN, sensitive_tree

Path = list[str | int]


def needs_marking(evaluation: EvaluationState, names: frozenset[str]) -> frozenset[str]:
    """Those of ``names`` that are root variables of the configuration not already declared sensitive
    (whose values the first evaluation already marks)."""
    return frozenset(
        name
        for name in names
        if name in evaluation.root.variables
        and not declared_sensitive(evaluation.reporter, evaluation.root.variables[name])
    )


def tree_paths(tree: Any, prefix: Path) -> list[Path]:
    """The paths a sensitivity tree (values.sensitive_tree, a plan's ``after_sensitive``) marks."""
    if tree is True:
        return [prefix]
    if isinstance(tree, dict):
        return [path for key, inner in tree.items() for path in tree_paths(inner, [*prefix, key])]
    if isinstance(tree, list):
        return [path for index, inner in enumerate(tree) for path in tree_paths(inner, [*prefix, index])]
    return []


def marked_paths(document: dict[str, Any], marked: EvaluationState) -> list[Path]:
    """Where the marks of the ``marked`` evaluation (everything evaluated) land in ``document``, the
    unmarked evaluation's document. A resource is found by its address: the marked evaluation may expand
    differently (a marked ``for_each`` is refused), and what it has that the document lacks is nothing
    to mask."""
    paths: list[Path] = []
    for name in marked.root.outputs:
        value = marked.values.get(((), "output", name), {}).get((), UNKNOWN)
        paths += tree_paths(sensitive_tree(value), ["outputs", name, "value"])
    index_of = {entry["address"]: index for index, entry in enumerate(document.get("resources", []))}
    for _, entry in marked.resource_entries:
        index = index_of.get(entry["address"])
        if index is not None:
            paths += tree_paths(entry["sensitive"], ["resources", index, "values"])
    return paths
