"""The polling and Rego benches are too slow for the suite; their smoke modes (a tiny database or tiny
plans, seconds) run here so that they cannot rot: each must run to its table."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(*args: str) -> str:
    run = subprocess.run(
        [sys.executable, *args, "--smoke"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def test_the_polling_bench_measures_the_gates_poll_against_healthz():
    out = run_bench("bench/bench_polling.py")
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    for name in ("GET /healthz", "full GET (the gate's old poll)", "slim status, If-None-Match (gate)"):
        assert name in rows and "absent" not in rows[name], out
    assert "the gate's poll:" in out


def test_the_rego_bench_reports_each_figure_against_its_floor():
    out = run_bench("bench/bench_rego.py")
    floors = [line for line in out.splitlines() if " floor " in line]
    assert len(floors) == 4 and all(line.rstrip().endswith("1.00x") for line in floors), out
