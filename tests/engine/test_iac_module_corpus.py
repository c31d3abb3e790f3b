"""Public modules' example roots, planned by terraform and by us (a bounded subset of the corpus that
bench/bench_module_corpus.py runs whole).

The roots are picked blind, by a hash of their names, among the repository snapshots on this machine
(IAC_MODULE_MIRRORS); tests/engine/real_modules.py makes them plannable offline, identically for both.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from policies_app.iac.configuration import evaluate_configuration
from tests.engine.plan_compare import TERRAFORM, compare_plan, terraform_plan
from tests.engine.real_modules import KEPT_ASIDE, build_corpus, mirrored_repositories

SUBSET_SIZE = 6  # roots terraform plans
CANDIDATES = 12  # at most this many tried: some roots made offline are refused by terraform itself

pytestmark = [
    pytest.mark.terraform,
    pytest.mark.skipif(TERRAFORM is None, reason="terraform is not on PATH: the oracle cannot run"),
]


def _example_roots(git_dir: Path) -> list[str]:
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD", "examples"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    directories = {str(Path(p).parent) for p in listing if p.endswith(".tf")}
    return sorted(d for d in directories if len(Path(d).parts) in (2, 3))


def _candidates() -> list[tuple[str, str]]:
    candidates = [
        (name, root)
        for name, git_dir in mirrored_repositories().items()
        if name not in KEPT_ASIDE
        for root in _example_roots(git_dir)
    ]
    candidates.sort(key=lambda pair: hashlib.sha256(f"{pair[0]}/{pair[1]}".encode()).hexdigest())
    return candidates[:CANDIDATES]


def test_example_roots_of_public_modules_plan_as_terraform_plans_them(tmp_path):
    candidates = _candidates()
    if not candidates:
        pytest.skip("no module repository snapshots on this machine (IAC_MODULE_MIRRORS)")
    corpus = build_corpus(tmp_path / "corpus", {name for name, _ in candidates})
    compared: dict[str, list[str]] = {}
    for name, root in candidates:
        directory = corpus.root(name.replace("/", "+"), root)
        if len(compared) == SUBSET_SIZE or (directory / "CORPUS_BROKEN").exists():
            continue
        plan = terraform_plan(directory)
        if "error" not in plan:
            ours = evaluate_configuration(str(directory), source_root=str(corpus.directory))
            compared[f"{name}/{root}"] = compare_plan(plan, ours).differences
    assert len(compared) >= SUBSET_SIZE // 2, f"terraform planned only {sorted(compared)}"
    assert {root: differences for root, differences in compared.items() if differences} == {}
