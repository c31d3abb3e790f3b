"""env0's published Rego policies on every engine the platform offers against OPA (not a test; prints figures).

    .venv/bin/python bench/bench_rego_env0_published.py GIT_DIR [GIT_DIR ...] [--show 10]
    .venv/bin/python bench/bench_rego_env0_published.py --smoke   # two policies of ours: proves it runs

GIT_DIR: a clone (or bare mirror) of a repository of env0's published policies, e.g. env0/templates
and env0/policy-catalog. Their code is not ours to copy: it is read from the clone at run time.
Every distinct version of every ``*.rego`` file in the repository's history is one policy (its
``package`` kept; helper modules in another package are evaluated too and simply never decide).
A version is taken as Rego v1 when OPA compiles it so, else as v0 (converted as the platform does).
Each runs on env0-shaped inputs (tests/engine/rego_differential.py: ENV0_INPUTS) through the public
interface, compared exactly as the differential tests compare (decision and message text).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies_app.rego import ENGINES, PolicyCompileError, check_policy  # noqa: E402
from tests.engine.rego_differential import ENV0_INPUTS, REFERENCE, Case, tally  # noqa: E402


def rego_versions(git_dir: str) -> list[tuple[str, str]]:
    """(path@blob, text) of every distinct version of every .rego file in the repository's history."""
    seen: dict[str, str] = {}
    commits = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-list", "--all"], capture_output=True, text=True, check=True
    ).stdout.split()
    for commit in commits:
        tree = subprocess.run(
            ["git", "--git-dir", git_dir, "ls-tree", "-r", commit], capture_output=True, text=True, check=True
        ).stdout
        for line in tree.splitlines():
            meta, path = line.split("\t", 1)
            blob = meta.split()[2]
            if path.endswith(".rego") and blob not in seen:
                seen[blob] = path
    found = []
    for blob, path in sorted(seen.items(), key=lambda item: (item[1], item[0])):
        text = subprocess.run(
            ["git", "--git-dir", git_dir, "cat-file", "-p", blob], capture_output=True, check=True
        ).stdout.decode("utf-8", "replace")
        found.append((f"{path}@{blob[:8]}", text))
    return found


def as_case(name: str, text: str) -> Case:
    """v1 when OPA compiles it as v1, else v0 (what the platform's Rego version setting would say)."""
    v1 = Case(name, (("policy.rego", text),), ENV0_INPUTS, "v1")
    try:
        check_policy(v1.source(), REFERENCE, timeout_s=30)
        return v1
    except PolicyCompileError:
        return Case(name, (("policy.rego", text),), ENV0_INPUTS, "v0")


# For --smoke: env0-shaped policies of our own (one Rego v1, one v0), in a repository made on the spot.
SMOKE_POLICIES = {
    "cost.rego": 'package env0\n\ndeny contains "over budget" if input.costEstimation.monthlyCostDiff > 100\n',
    "approvers.rego": 'package env0\n\npending[msg] {\n  count(input.approvers) < 2\n  msg := "two approvals"\n}\n',
}


def smoke_repository(directory: str) -> str:
    """A git repository holding SMOKE_POLICIES in one commit; returns its git directory."""
    for name, text in SMOKE_POLICIES.items():
        (Path(directory) / name).write_text(text)
    git = ["git", "-C", directory, "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "smoke"]):
        subprocess.run([*git, *command], check=True, capture_output=True)
    return str(Path(directory) / ".git")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("git_dirs", nargs="*")
    parser.add_argument("--show", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="two policies of ours: proves it runs")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as directory:
            return compare_all(rego_versions(smoke_repository(directory)), args.show)
    if not args.git_dirs:
        parser.error("give at least one GIT_DIR (or --smoke)")
    return compare_all([item for git_dir in args.git_dirs for item in rego_versions(git_dir)], args.show)


def compare_all(policies: list[tuple[str, str]], show: int) -> int:
    """Print each engine's agreement with OPA over ``policies``; 1 when any disagreed or failed closed."""
    cases = [as_case(name, text) for name, text in policies]
    status = 0
    for engine in (engine for engine in ENGINES if engine != REFERENCE):
        started = time.monotonic()
        total = tally(cases, engine)
        print(
            f"{engine} vs {REFERENCE}: {total.cases} policy versions ({total.refused} refused by OPA as v1 and "
            f"v0, {total.cases - total.refused} compiled), {total.evaluations} evaluations: {total.agreed} agreed, "
            f"{len(total.differences)} disagreed, {len(total.failed_closed)} failed closed "
            f"({time.monotonic() - started:.0f} s)",
            flush=True,
        )
        for line in total.differences[:show]:
            print("  disagreement:", line[:2000])
        for line in total.failed_closed[:show]:
            print("  failed closed:", line[:2000])
        status = status or (1 if total.differences or total.failed_closed else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
