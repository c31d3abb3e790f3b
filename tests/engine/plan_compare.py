"""Terraform as the oracle: running it offline, and comparing its plan with our document.

Shared by the oracle tests (iac_corpus/, module_corpus/) and by bench/bench_module_corpus.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TERRAFORM = shutil.which("terraform")


def run_terraform(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": "/dev/null",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",
    }
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    return subprocess.run(
        [TERRAFORM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def terraform_plan(directory: Path, flags: list[str] = ()) -> dict[str, Any]:
    """terraform's plan of a directory as JSON, or {"error": text} when terraform refuses it."""
    init = run_terraform(["init", "-backend=false", "-input=false", "-no-color"], directory)
    if init.returncode != 0:
        return {"error": init.stderr or init.stdout}
    plan = run_terraform(["plan", "-input=false", "-no-color", "-out=plan.out", *flags], directory)
    if plan.returncode != 0:
        return {"error": plan.stderr or plan.stdout}
    show = run_terraform(["show", "-json", "plan.out"], directory)
    if show.returncode != 0:
        return {"error": show.stderr}
    return json.loads(show.stdout)


def provider_schema(directory: Path) -> dict[str, Any]:
    """``terraform providers schema -json`` of an initialised directory."""
    shown = run_terraform(["providers", "schema", "-json"], directory)
    shown.check_returncode()
    return json.loads(shown.stdout)


def with_unknowns_as_null(after: Any, unknown: Any) -> Any:
    """terraform's ``after`` leaves unknown attributes out; ours has them as null."""
    if unknown is True:
        return None
    if isinstance(after, dict) and isinstance(unknown, dict):
        merged = dict(after)
        for key, inner in unknown.items():
            merged[key] = with_unknowns_as_null(after.get(key), inner)
        return merged
    if isinstance(after, list) and isinstance(unknown, list):
        return [with_unknowns_as_null(a, u) for a, u in zip(after, unknown, strict=False)]
    return after


def _has_mark(tree: Any) -> bool:
    if tree is True:
        return True
    if isinstance(tree, dict):
        return any(_has_mark(v) for v in tree.values())
    if isinstance(tree, list):
        return any(_has_mark(v) for v in tree)
    return False


def pruned(tree: Any) -> Any:
    """terraform's after_unknown (or after_sensitive) in values.unknown_tree's (sensitive_tree's)
    shape: it also lists nested collections holding nothing marked (as {} or [false]); ours keeps
    only what leads to a mark."""
    if isinstance(tree, dict):
        return {k: pruned(v) for k, v in tree.items() if _has_mark(v)}
    if isinstance(tree, list):
        return [pruned(v) if _has_mark(v) else False for v in tree]
    return tree


def canonical(value: Any) -> str:
    """JSON text as the comparison key: Python's == takes True, 1 and 1.0 for one value, terraform
    does not (a bool where a number belongs is a real difference)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass
class Comparison:
    """How our document compares with terraform's plan of the same configuration."""

    differences: list[str] = field(default_factory=list)
    their_instances: int = 0
    same_address: int = 0  # of their instances, how many we plan at the same address
    same_values: int = 0  # of those, how many with the same values, unknowns and sensitivity

    @property
    def matches(self) -> bool:
        return not self.differences


def compare_plan(plan: dict[str, Any], ours: dict[str, Any]) -> Comparison:
    """Every difference between terraform's plan and our document: error diagnostics of ours,
    managed resource instances (address, values, unknown and sensitive trees) and root outputs."""
    result = Comparison()
    for diagnostic in ours["diagnostics"]:
        if diagnostic["severity"] == "error":
            result.differences.append(
                f"our error: {diagnostic['summary']}: {diagnostic['detail']} "
                f"({diagnostic.get('file')}:{diagnostic.get('line')})"
            )
    theirs = {
        change["address"]: change["change"]
        for change in plan.get("resource_changes", [])
        if change["mode"] == "managed"
    }
    mine = {r["address"]: r for r in ours["resources"] if r["mode"] == "managed"}
    result.their_instances = len(theirs)
    for address in sorted(set(mine) - set(theirs)):
        result.differences.append(f"{address}: planned by us only")
    for address, change in theirs.items():
        if address not in mine:
            result.differences.append(f"{address}: planned by terraform only")
            continue
        result.same_address += 1
        resource = mine[address]
        problems = []
        expected = with_unknowns_as_null(change["after"], change["after_unknown"])
        if canonical(resource["values"]) != canonical(expected):
            problems.append("values")
        if canonical(resource["unknown"]) != canonical(pruned(change["after_unknown"])):
            problems.append("unknown")
        if canonical(resource["sensitive"]) != canonical(pruned(change["after_sensitive"])):
            problems.append("sensitive")
        if problems:
            result.differences.append(f"{address}: {', '.join(problems)} differ")
        else:
            result.same_values += 1
    their_outputs = plan.get("output_changes", {})
    for name in sorted(set(ours["outputs"]) ^ set(their_outputs)):
        result.differences.append(f"output {name}: only in {'ours' if name in ours['outputs'] else 'theirs'}")
    for name, change in their_outputs.items():
        if name not in ours["outputs"]:
            continue
        output = ours["outputs"][name]
        expected = with_unknowns_as_null(change.get("after"), change["after_unknown"])
        if (
            canonical(output["unknown"]) != canonical(pruned(change["after_unknown"]))
            or canonical(output["value"]) != canonical(expected)
            or canonical(output["sensitive"]) != canonical(change["after_sensitive"])
        ):
            result.differences.append(f"output {name}: differs")
    return result
