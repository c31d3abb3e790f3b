"""The document of an evaluated configuration: root outputs, resource instances in Terraform's order,
diagnostics (the shape is described in configuration.py)."""

from __future__ import annotations

import math
from typing import Any

from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expressions import Diagnostic
from policies_app.iac.module_calls import declared_sensitive
from policies_app.iac.values import UNKNOWN, contains_unknown, to_json_compatible, unknown_tree


def render_document(evaluation: EvaluationState) -> dict:
    reporter = evaluation.reporter
    outputs = {}
    for name, block in evaluation.root.outputs.items():
        value = evaluation.values.get(((), "output", name), {}).get((), UNKNOWN)
        plain, finite = finite_json(to_json_compatible(value))
        if not finite:
            reporter.error(
                "Failed to serialize output value",
                f"output {name!r}: cannot serialize infinity as JSON",
                block.pos,
            )
        outputs[name] = {
            "value": plain,
            "sensitive": declared_sensitive(reporter, block),
            # A wholly known output is plain false, as a plan's output_changes say.
            "unknown": unknown_tree(value) if contains_unknown(value) else False,
        }
    # Terraform's order: by module instance, then mode, type, name and index (numbers as numbers).
    resources = [entry for _, entry in sorted(evaluation.resource_entries, key=lambda pair: pair[0])]
    for entry in resources:
        entry["values"], finite = finite_json(entry["values"])
        if not finite:
            reporter.add(
                Diagnostic(
                    "error",
                    "Failed to serialize resource value",
                    f"{entry['address']}: cannot serialize infinity as JSON",
                )
            )
    return {
        "outputs": outputs,
        "resources": resources,
        "diagnostics": [d.as_dict() for d in reporter.diagnostics],
    }


def finite_json(value: Any) -> tuple[Any, bool]:
    """``value`` with infinite numbers (1/0) replaced by null, and whether it had none: JSON has no
    infinity, and terraform refuses to write a plan holding one."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, False
    if isinstance(value, dict):
        finite = True
        result = {}
        for key, inner in value.items():
            result[key], ok = finite_json(inner)
            finite = finite and ok
        return result, finite
    if isinstance(value, list):
        pairs = [finite_json(inner) for inner in value]
        return [v for v, _ in pairs], all(ok for _, ok in pairs)
    return value, True
