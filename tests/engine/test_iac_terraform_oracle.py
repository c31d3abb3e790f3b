"""Our static evaluation against terraform's own plan, over the corpus in iac_corpus/.

Every case is a configuration of ``terraform_data`` resources (builtin provider: ``terraform init``
works offline) whose ``input`` holds the values under test. For each case terraform plans it and we
compare every planned resource's ``after``/``after_unknown``/``after_sensitive`` and every output
with our document. A
case may carry a ``case.json``: ``vars`` (-var flags), ``var_files`` (relative -var-file paths), or
``expect_error`` (terraform must fail and one of our error diagnostics must contain the text).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from policies_app.iac.configuration import evaluate_configuration

CORPUS = Path(__file__).resolve().parent / "iac_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
TERRAFORM = shutil.which("terraform")

pytestmark = [
    pytest.mark.terraform,
    pytest.mark.skipif(TERRAFORM is None, reason="terraform is not on PATH: the oracle cannot run"),
]


def _case_settings(case: str) -> dict:
    path = CORPUS / case / "case.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _terraform(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": "/dev/null",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",
    }
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    return subprocess.run([TERRAFORM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _plan_case(case: str, workdir: Path) -> dict[str, Any]:
    """terraform's plan of a case as JSON, or {"error": stderr} when terraform refuses it."""
    directory = workdir / case
    shutil.copytree(CORPUS / case, directory)
    settings = _case_settings(case)
    init = _terraform(["init", "-backend=false", "-input=false", "-no-color"], directory)
    if init.returncode != 0:
        return {"error": init.stderr or init.stdout}
    flags = [f"-var={name}={value}" for name, value in settings.get("vars", {}).items()]
    flags += [f"-var-file={path}" for path in settings.get("var_files", [])]
    plan = _terraform(["plan", "-input=false", "-no-color", "-out=plan.out", *flags], directory)
    if plan.returncode != 0:
        return {"error": plan.stderr or plan.stdout}
    show = _terraform(["show", "-json", "plan.out"], directory)
    if show.returncode != 0:
        return {"error": show.stderr}
    return json.loads(show.stdout)


@pytest.fixture(scope="module")
def terraform_plans(tmp_path_factory) -> dict[str, dict]:
    workdir = tmp_path_factory.mktemp("terraform-oracle")
    with ThreadPoolExecutor(max_workers=2) as pool:  # the machine has 2 cores
        futures = {case: pool.submit(_plan_case, case, workdir) for case in CASES}
        return {case: future.result() for case, future in futures.items()}


def _with_unknowns_as_null(after: Any, unknown: Any) -> Any:
    """terraform's ``after`` leaves unknown attributes out; ours has them as null."""
    if unknown is True:
        return None
    if isinstance(after, dict) and isinstance(unknown, dict):
        merged = dict(after)
        for key, inner in unknown.items():
            merged[key] = _with_unknowns_as_null(after.get(key), inner)
        return merged
    if isinstance(after, list) and isinstance(unknown, list):
        return [_with_unknowns_as_null(a, u) for a, u in zip(after, unknown, strict=False)]
    return after


def _has_unknown(tree: Any) -> bool:
    if tree is True:
        return True
    if isinstance(tree, dict):
        return any(_has_unknown(v) for v in tree.values())
    if isinstance(tree, list):
        return any(_has_unknown(v) for v in tree)
    return False


def _pruned(tree: Any) -> Any:
    """terraform's after_unknown (or after_sensitive) in values.unknown_tree's (sensitive_tree's)
    shape: it also lists nested collections holding nothing marked (as {} or [false]); ours keeps
    only what leads to a mark."""
    if isinstance(tree, dict):
        return {k: _pruned(v) for k, v in tree.items() if _has_unknown(v)}
    if isinstance(tree, list):
        return [_pruned(v) if _has_unknown(v) else False for v in tree]
    return tree


def _canonical(value: Any) -> str:
    """JSON text as the comparison key: Python's == takes True, 1 and 1.0 for one value, terraform
    does not (a bool where a number belongs is a real difference)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_the_canonical_form_tells_a_bool_from_a_number():
    assert _canonical({"a": [True]}) != _canonical({"a": [1]})
    assert _canonical(1) != _canonical(1.0)
    assert _canonical({"b": 1, "a": 2}) == _canonical({"a": 2, "b": 1})


def _ours(case: str) -> dict:
    settings = _case_settings(case)
    directory = CORPUS / case
    return evaluate_configuration(
        str(directory),
        variables=settings.get("vars"),
        var_files=[str(directory / p) for p in settings.get("var_files", [])],
    )


@pytest.mark.parametrize("case", CASES)
def test_our_evaluation_matches_terraforms_plan(case, terraform_plans):
    plan = terraform_plans[case]
    ours = _ours(case)
    our_errors = [d for d in ours["diagnostics"] if d["severity"] == "error"]
    expected_error = _case_settings(case).get("expect_error")
    if expected_error:
        assert "error" in plan, "terraform accepted a case that should fail"
        assert any(expected_error in f"{d['summary']}: {d['detail']}" for d in our_errors), our_errors
        return
    assert "error" not in plan, plan.get("error")
    assert our_errors == []

    theirs = {
        change["address"]: change["change"]
        for change in plan.get("resource_changes", [])
        if change["mode"] == "managed"
    }
    our_resources = {r["address"]: r for r in ours["resources"] if r["mode"] == "managed"}
    assert sorted(our_resources) == sorted(theirs)
    for address, change in theirs.items():
        expected_values = _with_unknowns_as_null(change["after"], change["after_unknown"])
        assert _canonical(our_resources[address]["values"]) == _canonical(expected_values), address
        assert _canonical(our_resources[address]["unknown"]) == _canonical(
            _pruned(change["after_unknown"])
        ), address
        assert _canonical(our_resources[address]["sensitive"]) == _canonical(
            _pruned(change["after_sensitive"])
        ), address

    their_outputs = plan.get("output_changes", {})
    assert sorted(ours["outputs"]) == sorted(their_outputs)
    for name, change in their_outputs.items():
        assert _canonical(ours["outputs"][name]["unknown"]) == _canonical(_pruned(change["after_unknown"])), (
            name
        )
        expected = _with_unknowns_as_null(change.get("after"), change["after_unknown"])
        assert _canonical(ours["outputs"][name]["value"]) == _canonical(expected), name
        assert _canonical(ours["outputs"][name]["sensitive"]) == _canonical(change["after_sensitive"]), name
