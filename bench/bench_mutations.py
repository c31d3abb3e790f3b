"""Mutation run (mutmut) over the modules that hold the platform's rules: prints, per module, how many
mutants the fast tests killed and how many survived, then lists the survivors (a survivor in a rule is a
missing test).

    .venv/bin/python bench/bench_mutations.py                 # every module below (1,871 mutants: hours)
    .venv/bin/python bench/bench_mutations.py --resume        # go on with an interrupted run
    .venv/bin/python bench/bench_mutations.py --report        # what a run has found so far
    .venv/bin/python bench/bench_mutations.py --module policies_app/access.py
    .venv/bin/python bench/bench_mutations.py --smoke         # one module, a few mutants, in seconds

The run works on a copy of the checkout (mutmut writes its mutants beside the sources it copies), in
var/mutations/ unless told otherwise, so the checkout is never touched. The tests are the fast tests of the
rules (FAST_TESTS), on SQLite, each process with its database in memory (bench/mutation_plugin.py);
mutmut runs, for each mutant, only the tests that called the mutated function.

mutmut 3 mutates function bodies only: module-level tables such as choices.ALLOWED_TRANSITIONS are not
mutated here; tests/deployments/test_transitions.py states the diagram independently and checks every move.
tests/ops/test_mutation_bench.py runs the smoke mode so that this script cannot rot.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The modules that hold the rules (the masking functions are the only mutated part of environments.py).
MODULES = [
    "policies_app/choices.py",
    "policies_app/access.py",
    "policies_app/projects/controls.py",
    "policies_app/projects/tree.py",
    "policies_app/deployments/lifecycle.py",
    "policies_app/deployments/approvals.py",
    "policies_app/deployments/evaluation.py",
    "policies_app/rego/decisions.py",
    "policies_app/projects/environments.py",
]
# Within a module, only the functions matching these (mutmut's names: module.x_function, module.xǁClassǁmethod).
ONLY_FUNCTIONS = {"policies_app/projects/environments.py": ("x_masked", "x_masked_input")}

FAST_TESTS = [
    "tests/deployments",
    "tests/projects",
    "tests/http_api/test_api_rules.py",
    "tests/http_api/test_serializers.py",
    "tests/http_api/test_hardening.py::test_sensitive_variables_are_masked_in_the_api_and_kept_when_sent_back_masked",
    "tests/http_api/test_hardening.py::test_policies_get_sensitive_values_but_the_input_and_pages_show_them_masked",
    "tests/http_api/test_hardening.py::test_sensitive_terraform_variables_are_masked_by_their_own_list",
    "tests/web/test_pages.py",
    "tests/notifications/test_notifications.py",
    "tests/policies/test_policy_tests.py",
    "tests/engine/test_rego_decisions.py",
    "tests/engine/test_rego_fidelity.py::test_limits_keep_the_strictest_messages_and_count_the_rest",
    "tests/engine/test_rego_fidelity.py::test_limits_never_change_a_policys_decision",
]
# Slow and beside the rules: a fresh process, and the template configuration policies read.
DESELECTED = [
    "tests/deployments/test_sweeper.py::test_the_periodic_command_runs_every_scheduled_task_in_a_fresh_process",
    "tests/deployments/test_policy_input.py",
]

SMOKE_MODULE = "policies_app/rego/decisions.py"
SMOKE_TESTS = ["tests/engine/test_rego_decisions.py"]
SMOKE_MUTANTS = "policies_app.rego.decisions.x_combine_decisions__mutmut_[1-4]"


def copy_checkout(work: Path) -> Path:
    """The checkout's files as they are now (committed or not), without ignored ones."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    project = work / "project"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the work tree
        target = project / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return project


def write_config(project: Path, modules: list[str], tests: list[str]) -> None:
    """mutmut reads setup.cfg when pyproject.toml has no [tool.mutmut]."""

    def lines(values: list[str]) -> str:
        return "".join(f"\n    {value}" for value in values)

    deselect = [f"--deselect={test}" for test in DESELECTED]
    (project / "setup.cfg").write_text(
        "[mutmut]\n"
        "source_paths = policies_app\n"
        f"only_mutate ={lines(modules)}\n"
        f"also_copy ={lines(['policy_platform/', 'policy_gate/', 'templates/', 'bench/', 'manage.py'])}\n"
        f"pytest_add_cli_args_test_selection ={lines(tests)}\n"
        f"pytest_add_cli_args ={lines(['-p', 'bench.mutation_plugin', '--reuse-db', *deselect])}\n"
    )


MAKE_TEMPLATE_DB = """
import django
django.setup()

from django.db import connection
connection.settings_dict["TEST"]["NAME"] = TEMPLATE
connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=False)
connection.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
connection.close()
"""


def make_template_database(project: Path, environment: dict[str, str]) -> Path:
    """The test database, migrated once, that each mutant's process copies (bench/mutation_plugin.py)."""
    template = project.parent / "databases" / "template.sqlite3"
    template.parent.mkdir()
    subprocess.run(
        [sys.executable, "-c", f"TEMPLATE = {str(template)!r}\n{MAKE_TEMPLATE_DB}"],
        cwd=project,
        env={**environment, "DJANGO_SETTINGS_MODULE": "policy_platform.settings"},
        check=True,
    )
    return template


def mutant_patterns(modules: list[str]) -> list[str]:
    patterns = []
    for module in modules:
        dotted = module.removesuffix(".py").replace("/", ".")
        functions = ONLY_FUNCTIONS.get(module)
        patterns += (
            [f"{dotted}.{function}__mutmut_*" for function in functions] if functions else [f"{dotted}.*"]
        )
    return patterns


def results(project: Path, modules: list[str], patterns: list[str]) -> dict[str, Counter]:
    """Status of every mutant of the run, per module, from mutmut's own records."""
    from fnmatch import fnmatch

    from mutmut.stats import status_by_exit_code

    by_module: dict[str, dict[str, str]] = {}
    for module in modules:
        meta = project / "mutants" / f"{module}.meta"
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        by_module[module] = {
            name: ("not run" if code is None else status_by_exit_code[code])
            for name, code in codes.items()
            if any(fnmatch(name, pattern) for pattern in patterns)
        }
    return by_module


def diff_of(project: Path, name: str, module: str) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    here = Path.cwd()
    os.chdir(project)
    try:
        diff = get_diff_for_mutant(name, path=module)
    finally:
        os.chdir(here)
    # The changed lines only: the function's name is in the mutant's name.
    return "\n".join(
        line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def run_mutmut(
    work: Path, modules: list[str], tests: list[str], patterns: list[str], args: argparse.Namespace
) -> tuple[int, float]:
    """A fresh copy of the checkout, mutmut's configuration, then the run; its exit code and duration.
    Resumed, the copy of an interrupted run is kept and mutmut tests only the mutants it has no result for."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "TEST_REDIS_URL", "CELERY_BROKER_URL", "PYTEST_ADDOPTS")
    }
    environment["PLATFORM_VAR_DIR"] = str(work / "var")
    project = work / "project"
    template = work / "databases" / "template.sqlite3"
    if not (args.resume and project.exists()):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        project = copy_checkout(work)
        write_config(project, modules, tests)
        if not args.smoke:  # the smoke's tests use no database
            template = make_template_database(project, environment)
    else:
        # mutmut runs again every mutant it is given by name: name only those without a result yet.
        unfinished = [
            name
            for statuses in results(project, modules, patterns).values()
            for name, status in statuses.items()
            if status == "not run"
        ]
        if not unfinished:
            return 0, 0.0
        patterns = unfinished
    if template.exists():
        environment["MUTATION_TEMPLATE_DB"] = str(template)
    started = time.monotonic()
    with (work / "mutmut.log").open("a" if args.resume else "w") as output:
        run = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children), *patterns],
            cwd=project,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return run.returncode, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help=f"a few mutants of {SMOKE_MODULE}, in seconds")
    parser.add_argument("--module", action="append", help="only this module (repeatable)")
    parser.add_argument(
        "--tests", nargs="+", help=f"the tests to run instead of {', '.join(FAST_TESTS[:2])}..."
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "var" / "mutations")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--no-diffs", action="store_true", help="list surviving mutants by name only")
    parser.add_argument(
        "--resume", action="store_true", help="go on with the run in --workdir (its copy, its results so far)"
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="only print what the run in --workdir has found so far (it may still run)",
    )
    args = parser.parse_args()

    modules = [SMOKE_MODULE] if args.smoke else (args.module or MODULES)
    unknown = sorted(set(modules) - set(MODULES))
    if unknown:
        parser.error(f"not a module of the run: {', '.join(unknown)} (choose from {', '.join(MODULES)})")
    tests = SMOKE_TESTS if args.smoke else (args.tests or FAST_TESTS)
    patterns = [SMOKE_MUTANTS] if args.smoke else mutant_patterns(modules)

    work = args.workdir.resolve()
    project = work / "project"
    seconds = 0.0
    if not args.report:
        returncode, seconds = run_mutmut(work, modules, tests, patterns, args)
        if returncode != 0:
            print((work / "mutmut.log").read_text()[-5000:])
            print(f"mutmut failed (exit {returncode}); its output is in {work / 'mutmut.log'}")
            return 1
    by_module = results(project, modules, patterns)
    if not any(by_module.values()):
        print(f"No mutant found in {work}")
        return 1

    took = f"in {seconds:.0f} s" if seconds else "(figures so far)"
    print(f"Mutation run over {len(modules)} module(s) {took} (work in {work})")
    print(f"{'module':45} {'mutants':>8} {'killed':>7} {'survived':>9} {'other':>6}")
    totals: Counter = Counter()
    for module, statuses in by_module.items():
        counted = Counter(statuses.values())
        other = len(statuses) - counted["killed"] - counted["survived"]
        totals.update(counted)
        print(f"{module:45} {len(statuses):8} {counted['killed']:7} {counted['survived']:9} {other:6}")
    print(f"{'all':45} {sum(totals.values()):8} {totals['killed']:7} {totals['survived']:9}")
    others = Counter(
        status for statuses in by_module.values() for status in statuses.values() if status != "killed"
    )
    if set(others) - {"survived"}:
        print("Other outcomes:", ", ".join(f"{status}: {count}" for status, count in sorted(others.items())))
    for module, statuses in by_module.items():
        survivors = sorted(name for name, status in statuses.items() if status not in ("killed", "not run"))
        if not survivors:
            continue
        print(f"\nSurviving in {module}:")
        for name in survivors:
            print(f"  {name} ({statuses[name]})")
            if not args.no_diffs:
                for line in diff_of(project, name, module).splitlines():
                    print(f"      {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
