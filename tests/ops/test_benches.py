"""Benches that cannot rot: every bench in bench/ has a smoke mode (``--smoke``: a tiny size, seconds), and
each runs here as a whole process, so a bench that no longer runs (a renamed field, a schema its data
generator does not fill, a setting production now requires) fails the suite. Their figures are not
judged here (bench/ measures speed; a figure from a smoke size means nothing), only that they run to
the end and report success.

Every bench_*.py found in bench/ is run: a new bench without ``--smoke`` fails here (argparse refuses the
flag). The smoke runs start together when the first of these tests runs and are awaited one per test:
most of a smoke run is waiting (a database migrated, a server started), so the whole costs about the
longest one rather than their sum.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(path.stem for path in (ROOT / "bench").glob("bench_*.py"))
POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
TERRAFORM = shutil.which("terraform") is not None

# What a bench needs besides Python: it is marked so, and skipped where it is missing.
NEEDS_POSTGRES = {"bench_scale", "bench_schemathesis"}  # COPY, pg_database_size; the production shape
NEEDS_TERRAFORM = {"bench_module_corpus"}  # terraform's own plans are what it compares with
# Run elsewhere in the suite, with its figures checked.
ELSEWHERE = {"bench_mutations": "tests/ops/test_mutation_bench.py runs its smoke mode and checks its counts"}
SMOKE_TIMEOUT_S = 300


def bench_database(name: str) -> str:
    """A database of the bench's own beside the suite's (never the suite's: a bench may flush it)."""
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}_smoke"


def smoke_environment(name: str) -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE")
    }
    if name in NEEDS_POSTGRES:
        environment["DATABASE_URL"] = bench_database(name)
    return environment


def drop_database(url: str) -> None:
    """Start from nothing: a smoke run must prove the bench works on a fresh database."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class SmokeRun:
    process: subprocess.Popen
    output: Path

    def result(self) -> tuple[int, str]:
        try:
            code = self.process.wait(SMOKE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = -9
        return code, self.output.read_text(errors="replace")


def runnable(name: str) -> bool:
    return (
        name not in ELSEWHERE
        and (name not in NEEDS_POSTGRES or POSTGRES)
        and (name not in NEEDS_TERRAFORM or TERRAFORM)
    )


def selected(session) -> set[str]:
    """The benches whose smoke test this session runs (all, or those chosen with -k)."""
    return {
        item.callspec.params["name"]
        for item in session.items
        if getattr(item, "originalname", "") == "test_the_bench_runs_in_its_smoke_mode"
    }


@pytest.fixture(scope="module")
def smoke_runs(request, tmp_path_factory):
    """The smoke mode of every selected bench that can run here, started at once."""
    directory = tmp_path_factory.mktemp("bench-smoke")
    runs = {}
    for name in sorted(filter(runnable, selected(request.session))):
        if name in NEEDS_POSTGRES:
            drop_database(bench_database(name))
        output = directory / f"{name}.log"
        process = subprocess.Popen(
            [sys.executable, f"bench/{name}.py", "--smoke"],
            cwd=ROOT,
            env=smoke_environment(name),
            stdout=output.open("w"),
            stderr=subprocess.STDOUT,
        )
        runs[name] = SmokeRun(process, output)
    yield runs
    for run in runs.values():
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


def marks_of(name: str) -> list:
    marks = []
    if name in NEEDS_POSTGRES:
        marks += [
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES, reason="needs PostgreSQL: DATABASE_URL=postgres://..."),
        ]
    if name in NEEDS_TERRAFORM:
        marks += [pytest.mark.terraform, pytest.mark.skipif(not TERRAFORM, reason="terraform is not on PATH")]
    if name in ELSEWHERE:
        marks.append(pytest.mark.skip(reason=ELSEWHERE[name]))
    return marks


@pytest.mark.parametrize("name", [pytest.param(name, marks=marks_of(name)) for name in BENCHES])
def test_the_bench_runs_in_its_smoke_mode(name, smoke_runs):
    code, output = smoke_runs[name].result()
    assert code == 0, f"bench/{name}.py --smoke exited {code}:\n{output[-4000:]}"


def test_every_bench_is_found_and_every_exception_names_one():
    """The lists above name benches that exist: a renamed bench cannot quietly lose its marks."""
    assert {"bench_storage", "bench_scale", "bench_rego"} <= set(BENCHES)
    assert (NEEDS_POSTGRES | NEEDS_TERRAFORM | set(ELSEWHERE)) <= set(BENCHES)
