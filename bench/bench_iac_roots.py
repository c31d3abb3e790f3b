"""Start-up, and cold and warm evaluations of real roots, as whole processes (not a test: prints).

    .venv/bin/python bench/bench_iac_roots.py [--work DIR] [--roots N] [--runs 5] [--against DIR]

- start-up: ``python -m policies_app.iac`` on a one-output root with a warm parse cache, and
  ``manage.py iac_evaluate`` on the same (Django's own start-up on top);
- real roots: the public modules' example roots as written (bench_module_corpus.py builds them in
  --work: run it first), the N largest by the size of their module tree plus N spread over the rest;
  cold is a run with an empty parse cache, warm the next run on that cache;
- --against DIR: the same commands run from another checkout of the project (an older commit, say),
  for before/after figures in one table.
Medians of --runs runs; the machine is shared, so compare ratios rather than absolute seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = {"exit": False}  # --smoke: a command that fails fails the bench


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    if CHECKED["exit"] and completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({completed.returncode}): {completed.stderr[-500:]!r}")
    return time.perf_counter() - started


def smoke_corpus(work: Path) -> Path:
    """A corpus of one repository with one example root calling its module: what --smoke times (the
    real corpus, built by bench_module_corpus.py, takes minutes)."""
    module = work / "corpus" / "originals" / "smoke-module"
    (module / "examples" / "basic").mkdir(parents=True, exist_ok=True)
    (module / "main.tf").write_text(
        'variable "name" {\n  type = string\n}\n'
        'resource "terraform_data" "this" {\n  input = var.name\n}\n'
        'output "name" {\n  value = terraform_data.this.input\n}\n'
    )
    (module / "examples" / "basic" / "main.tf").write_text(
        'module "this" {\n  source = "../.."\n  name   = "smoke"\n}\n'
        'output "name" {\n  value = module.this.name\n}\n'
    )
    return module.parent


def module_tree_size(root: Path, corpus: Path) -> int:
    """Bytes of .tf in the root and in every directory its local module sources reach (roughly: the
    repository holding it)."""
    repository = root
    while repository.parent != corpus and repository.parent != repository:
        repository = repository.parent
    return sum(p.stat().st_size for p in repository.rglob("*.tf"))


def pick_roots(corpus: Path, count: int) -> list[Path]:
    roots = sorted({p.parent for p in corpus.glob("*/examples/**/*.tf")})
    sized = sorted(roots, key=lambda r: (module_tree_size(r, corpus), str(r)), reverse=True)
    largest = sized[:count]
    rest = sized[count:]
    step = max(len(rest) // max(count, 1), 1)
    return largest + rest[::step][:count]


def cold_and_warm(code: Path, root: Path, corpus: Path, runs: int) -> tuple[float, float]:
    command = [sys.executable, "-m", "policies_app.iac", str(root), "--compact"]
    cold, warm = [], []
    for _ in range(runs):
        cache = Path(tempfile.mkdtemp(prefix="bench-roots-"))
        extra = ["--cache-dir", str(cache)]
        if (code / "policies_app" / "iac" / "provider_schemas.py").exists():  # has --source-root
            extra += ["--source-root", str(corpus.parent)]
        cold.append(timed([*command, *extra], code))
        warm.append(timed([*command, *extra], code))
        shutil.rmtree(cache)
    return statistics.median(cold), statistics.median(warm)


def startup(code: Path, runs: int) -> tuple[float, float]:
    directory = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    (directory / "main.tf").write_text('output "x" {\n  value = 1\n}\n')
    cache = directory / "cache"
    fast = [sys.executable, "-m", "policies_app.iac", str(directory), "--cache-dir", str(cache)]
    django = [sys.executable, "manage.py", "iac_evaluate", str(directory), "--cache-dir", str(cache)]
    timed(fast, code)  # fills the caches
    timed(django, code)
    fast_s = statistics.median(timed(fast, code) for _ in range(runs))
    django_s = statistics.median(timed(django, code) for _ in range(runs))
    shutil.rmtree(directory)
    return fast_s, django_s


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="/tmp/iac-module-corpus")
    parser.add_argument(
        "--roots", type=int, default=6, help="how many of the largest roots (and as many others)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", help="another checkout of the project to time the same way")
    parser.add_argument("--smoke", action="store_true", help="one run of a stand-in root: proves it runs")
    arguments = parser.parse_args()
    corpus = Path(arguments.work) / "corpus" / "originals"
    if arguments.smoke:
        CHECKED["exit"] = True
        arguments.roots, arguments.runs = 1, 1
        corpus = smoke_corpus(Path(tempfile.mkdtemp(prefix="bench-roots-smoke-")))
    versions = {"this": ROOT}
    if arguments.against:
        versions["against"] = Path(arguments.against).resolve()
    env_note = "PYTHONDONTWRITEBYTECODE is set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""
    print(f"python {sys.version.split()[0]} {env_note}")
    for name, code in versions.items():
        fast_s, django_s = startup(code, arguments.runs)
        print(
            f"start-up ({name}): python -m policies_app.iac {fast_s:.3f} s, manage.py iac_evaluate {django_s:.3f} s"
        )
    if not corpus.is_dir():
        print(f"no corpus in {corpus}: run bench/bench_module_corpus.py first", file=sys.stderr)
        return 1
    roots = pick_roots(corpus, arguments.roots)
    header = f"{'root':<72}{'KB':>6}"
    for name in versions:
        header += f"{name + ' cold':>13}{name + ' warm':>13}{'cold/warm':>10}"
    print(header)
    ratios = {name: [] for name in versions}
    for root in roots:
        line = f"{str(root.relative_to(corpus))[:71]:<72}{module_tree_size(root, corpus) / 1024:6.0f}"
        for name, code in versions.items():
            cold, warm = cold_and_warm(code, root, corpus, arguments.runs)
            ratios[name].append((cold, warm))
            line += f"{cold:13.3f}{warm:13.3f}{cold / warm:10.2f}"
        print(line, flush=True)
    for name in versions:
        worst = max(cold / warm for cold, warm in ratios[name])
        total_warm = sum(warm for _, warm in ratios[name])
        print(f"{name}: worst cold/warm {worst:.2f}, total warm {total_warm:.2f} s")
    if "against" in versions:
        slower = [
            str(root.relative_to(corpus))
            for root, (_, mine), (_, theirs) in zip(roots, ratios["this"], ratios["against"], strict=True)
            if mine > theirs * 1.05
        ]
        print(f"roots warm more than 5 % slower than the other checkout: {slower or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
