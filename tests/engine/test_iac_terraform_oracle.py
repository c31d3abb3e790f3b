"""Our static evaluation against terraform's own plan, over the corpus in iac_corpus/.

Every case is a configuration of ``terraform_data`` resources (builtin provider: ``terraform init``
works offline) whose ``input`` holds the values under test. For each case terraform plans it and we
compare every planned resource's ``after``/``after_unknown``/``after_sensitive`` and every output
with our document. A
case may carry a ``case.json``: ``vars`` (-var flags), ``var_files`` (relative -var-file paths),
``root`` (the root module's directory inside the case, which is the template's whole source), or
``expect_error`` (terraform must fail and one of our error diagnostics must contain the text).
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from policies_app.iac.configuration import evaluate_configuration
from tests.engine.plan_compare import TERRAFORM, canonical, compare_plan, terraform_plan

CORPUS = Path(__file__).resolve().parent / "iac_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []

pytestmark = [
    pytest.mark.terraform,
    pytest.mark.skipif(TERRAFORM is None, reason="terraform is not on PATH: the oracle cannot run"),
]


def _case_settings(case: str) -> dict:
    path = CORPUS / case / "case.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _plan_case(case: str, workdir: Path) -> dict[str, Any]:
    """terraform's plan of a case as JSON, or {"error": stderr} when terraform refuses it."""
    directory = workdir / case
    shutil.copytree(CORPUS / case, directory)
    settings = _case_settings(case)
    flags = [f"-var={name}={value}" for name, value in settings.get("vars", {}).items()]
    flags += [f"-var-file={path}" for path in settings.get("var_files", [])]
    return terraform_plan(directory / settings.get("root", ""), flags)


@pytest.fixture(scope="module")
def terraform_plans(tmp_path_factory) -> dict[str, dict]:
    workdir = tmp_path_factory.mktemp("terraform-oracle")
    with ThreadPoolExecutor(max_workers=2) as pool:  # the machine has 2 cores
        futures = {case: pool.submit(_plan_case, case, workdir) for case in CASES}
        return {case: future.result() for case, future in futures.items()}


def test_the_canonical_form_tells_a_bool_from_a_number():
    assert canonical({"a": [True]}) != canonical({"a": [1]})
    assert canonical(1) != canonical(1.0)
    assert canonical({"b": 1, "a": 2}) == canonical({"a": 2, "b": 1})


def _ours(case: str) -> dict:
    settings = _case_settings(case)
    directory = CORPUS / case / settings.get("root", "")
    return evaluate_configuration(
        str(directory),
        variables=settings.get("vars"),
        var_files=[str(directory / p) for p in settings.get("var_files", [])],
        source_root=str(CORPUS / case),
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
    assert compare_plan(plan, ours).differences == []
