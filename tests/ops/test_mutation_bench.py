"""The mutation run (bench/bench_mutations.py) is too slow for the suite; its smoke mode (one module, a
few mutants) runs here so that the bench cannot rot: mutmut generates, runs and reports, and the tests kill
what they must."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_mutation_bench_kills_the_smoke_mutants_and_reports_them_per_module(tmp_path):
    run = subprocess.run(
        [sys.executable, "bench/bench_mutations.py", "--smoke", "--workdir", str(tmp_path / "mutations")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    row = next(line for line in run.stdout.splitlines() if line.startswith("policies_app/rego/decisions.py"))
    mutants, killed, survived, other = (int(number) for number in row.split()[1:])
    assert (mutants, killed, survived, other) == (4, 4, 0, 0), run.stdout
