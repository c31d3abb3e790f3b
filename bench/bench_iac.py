"""Benchmark of the static evaluator against terraform validate (not a test: prints a table).

    .venv/bin/python bench/bench_iac.py [--runs 5] [--keep DIR]

Generates four configurations in a temporary directory:
  chain    2,000 locals, each the previous plus one (the last is 1,999)
  chain4k  4,000 locals, the same
  wide     2,000 terraform_data resources with count = 2, over ten files (~548 KB)
  modules  a root calling one local module 50 times, 20 resources each
and times, as whole processes (median of --runs): our CLI cold (empty parse cache) and warm (second
run on the same cache), and ``terraform validate`` after one offline ``terraform init``. Cold and warm are also timed in CPU
seconds of the child process (what a loaded, shared machine does not inflate), with the ratio cold / warm
(target 1.2), with the wall-clock ratio and warm / validate (target 1.0) beside it; the start-up of the
command on a one-output root with a warm cache (target 100 ms); and, in-process, the parse of the wide
configuration by the LALR parser alone against the recursive-descent parser that now fronts it. Every value
is checked: the chain's last local, every module output resolved. Checkov's figures on this machine
(measured once, 2026-12) are printed for the 3x target.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKOV_SECONDS = {"chain": 2.96, "chain4k": 4.13, "wide": 14.6, "modules": 5.39}


# The configurations' sizes; --smoke shrinks them (a tenth or less) to prove the bench still runs.
SIZES = {"chain": 2000, "chain4k": 4000, "wide": 2000, "module_calls": 50, "module_resources": 20}
SMOKE_SIZES = {"chain": 20, "chain4k": 40, "wide": 20, "module_calls": 3, "module_resources": 20}


def write_chain(directory: Path, length: int) -> None:
    lines = ["locals {", "  l0 = 0"]
    lines += [f"  l{i} = local.l{i - 1} + 1" for i in range(1, length)]
    lines += ["}", "", f'output "last" {{\n  value = local.l{length - 1}\n}}']
    (directory / "main.tf").write_text("\n".join(lines) + "\n")


def write_wide(directory: Path, resources: int, files: int = 10) -> None:
    per_file = resources // files
    for f in range(files):
        blocks = []
        for r in range(f * per_file, (f + 1) * per_file):
            blocks.append(f"""resource "terraform_data" "r{r:04d}" {{
  count = 2
  input = {{
    name        = "resource-{r:04d}-${{count.index}}"
    description = "a resource of the wide benchmark, number {r:04d}"
    tags        = {{ team = "platform", env = "production", index = count.index }}
    ports       = [80, 443, 8080]
  }}
}}
""")
        (directory / f"resources_{f:02d}.tf").write_text("\n".join(blocks))


def write_modules(directory: Path, calls: int, resources: int) -> None:
    module = directory / "modules" / "unit"
    module.mkdir(parents=True)
    body = ['variable "name" {\n  type = string\n}\n']
    for r in range(resources):
        body.append(f'resource "terraform_data" "r{r:02d}" {{\n  input = "${{var.name}}-{r:02d}"\n}}\n')
    body.append('output "result" {\n  value = "${var.name}-done"\n}\n')
    body.append(f'output "last_input" {{\n  value = terraform_data.r{resources - 1:02d}.input\n}}\n')
    (module / "main.tf").write_text("\n".join(body))
    root = []
    for c in range(calls):
        root.append(f'module "m{c:02d}" {{\n  source = "./modules/unit"\n  name   = "m{c:02d}"\n}}\n')
        root.append(
            f'output "m{c:02d}" {{\n  value = [module.m{c:02d}.result, module.m{c:02d}.last_input]\n}}\n'
        )
    (directory / "main.tf").write_text("\n".join(root))


def expected_outputs(name: str) -> dict:
    if name in ("chain", "chain4k"):
        return {"last": SIZES[name] - 1}
    if name == "modules":
        last = SIZES["module_resources"] - 1
        return {f"m{c:02d}": [f"m{c:02d}-done", f"m{c:02d}-{last:02d}"] for c in range(SIZES["module_calls"])}
    return {}


def our_command() -> list[str]:
    """The evaluator's own command: manage.py iac_evaluate runs the same code after Django's start-up
    (bench_iac_roots.py times both)."""
    return [sys.executable, "-m", "policies_app.iac"]


CPU: dict[str, list[float]] = {}  # CPU seconds of the last child process timed, by kind


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    command: list[str], cwd: Path, env: dict | None = None, cpu: list[float] | None = None
) -> tuple[float, subprocess.CompletedProcess]:
    started, started_cpu = time.perf_counter(), child_cpu()
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if cpu is not None:
        cpu.append(child_cpu() - started_cpu)
    return time.perf_counter() - started, completed


def startup(runs: int) -> tuple[float, float]:
    """Wall and CPU seconds of the command on a one-output root, its parse cache warm (medians)."""
    directory = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    (directory / "main.tf").write_text('output "x" {\n  value = 1\n}\n')
    command = [*our_command(), str(directory), "--cache-dir", str(directory / "cache")]
    timed(command, ROOT)
    wall, cpu = [], []
    for _ in range(max(runs, 3)):
        wall.append(timed(command, ROOT, cpu=cpu)[0])
    shutil.rmtree(directory)
    return statistics.median(wall), statistics.median(cpu)


def check(name: str, document: dict) -> str:
    problems = []
    errors = [d for d in document["diagnostics"] if d["severity"] == "error"]
    if errors:
        problems.append(f"{len(errors)} errors")
    values = {k: v["value"] for k, v in document["outputs"].items()}
    for key, expected in expected_outputs(name).items():
        if values.get(key) != expected:
            problems.append(f"output {key} = {values.get(key)!r}, expected {expected!r}")
    expected = {"wide": 2 * SIZES["wide"], "modules": SIZES["module_calls"] * SIZES["module_resources"]}
    if name in expected and len(document["resources"]) != expected[name]:
        problems.append(f"{len(document['resources'])} resource instances, expected {expected[name]}")
    return "ok" if not problems else "; ".join(problems[:3])


def evaluation_seconds(directory: Path) -> tuple[float, int]:
    """In-process time of a whole evaluation with the parse cache warm (loading the cached trees, the
    graph, the values, the document: no process start, no parsing), and the number of graph nodes:
    what shows that evaluation grows linearly with the graph."""
    sys.path.insert(0, str(ROOT))
    from policies_app.iac.configuration import ConfigurationEvaluator
    from policies_app.iac.loader import load_module

    cache = tempfile.mkdtemp(prefix="bench-cache-")
    load_module(str(directory), cache_dir=cache)
    best = float("inf")
    nodes = 0
    for _ in range(3):
        gc.disable()  # as evaluate_configuration does
        started = time.perf_counter()
        evaluator = ConfigurationEvaluator(str(directory), cache_dir=cache)
        evaluator.document()
        finished = time.perf_counter()
        gc.enable()
        best = min(best, finished - started)
        nodes = len(evaluator.graph)
    shutil.rmtree(cache)
    return best, nodes


def parse_seconds(directory: Path) -> tuple[float, float]:
    """CPU seconds to parse every file of ``directory`` with the LALR parser alone and with the
    recursive-descent parser in front of it (best of three, the parse only: no cache, no pickling)."""
    sys.path.insert(0, str(ROOT))
    from policies_app.iac import hcl_native

    texts = [(p.read_text(), str(p)) for p in sorted(directory.glob("*.tf"))]

    def best() -> float:
        times = []
        for _ in range(3):
            gc.disable()
            started = time.process_time()
            for text, path in texts:
                hcl_native.parse_native(text, path)
            times.append(time.process_time() - started)
            gc.enable()
        return min(times)

    descent = best()
    with hcl_native.lalr_only():
        lalr = best()
    return lalr, descent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", help="generate the configurations here and keep them")
    parser.add_argument("--no-terraform", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny configurations, one run: proves it runs")
    arguments = parser.parse_args()
    if arguments.smoke:
        SIZES.update(SMOKE_SIZES)
        arguments.runs = 1
    base = Path(arguments.keep or tempfile.mkdtemp(prefix="bench-iac-"))
    base.mkdir(parents=True, exist_ok=True)
    builders = {
        "chain": lambda d: write_chain(d, SIZES["chain"]),
        "chain4k": lambda d: write_chain(d, SIZES["chain4k"]),
        "wide": lambda d: write_wide(d, SIZES["wide"]),
        "modules": lambda d: write_modules(d, SIZES["module_calls"], SIZES["module_resources"]),
    }
    command = our_command()
    terraform = None if arguments.no_terraform else shutil.which("terraform")
    tf_env = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "CHECKPOINT_DISABLE": "1"}
    rows = []
    for name, build in builders.items():
        directory = base / name
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir()
        build(directory)
        size = sum(p.stat().st_size for p in directory.rglob("*.tf"))
        cold, warm, cold_cpu, warm_cpu = [], [], [], []
        verdict = "?"
        for _ in range(arguments.runs):
            cache = Path(tempfile.mkdtemp(prefix="bench-cache-"))
            seconds, completed = timed(
                [*command, str(directory), "--compact", "--cache-dir", str(cache)], ROOT, cpu=cold_cpu
            )
            cold.append(seconds)
            seconds, completed = timed(
                [*command, str(directory), "--compact", "--cache-dir", str(cache)], ROOT, cpu=warm_cpu
            )
            warm.append(seconds)
            shutil.rmtree(cache)
            try:
                verdict = check(name, json.loads(completed.stdout))
            except ValueError:
                verdict = f"no JSON (exit {completed.returncode}): {completed.stderr[-200:]}"
        validate = []
        if terraform:
            subprocess.run(
                [terraform, "init", "-backend=false", "-input=false"],
                cwd=directory,
                env=tf_env,
                capture_output=True,
            )
            for _ in range(arguments.runs):
                seconds, completed = timed([terraform, "validate", "-no-color"], directory, tf_env)
                if completed.returncode != 0:
                    print(f"terraform validate failed on {name}: {completed.stdout[-300:]}", file=sys.stderr)
                validate.append(seconds)
        eval_s, nodes = evaluation_seconds(directory)
        CPU[name] = [statistics.median(cold_cpu), statistics.median(warm_cpu)]
        rows.append(
            (
                name,
                size,
                statistics.median(cold),
                statistics.median(warm),
                statistics.median(validate) if validate else None,
                verdict,
                eval_s,
                nodes,
            )
        )

    print(
        f"{'config':<9}{'KB':>7}{'cold s':>9}{'warm s':>9}{'tf val s':>10}{'checkov':>9}"
        f"{'ckv/cold':>10}{'cold/tf':>9}{'warm/tf':>9}{'nodes':>7}{'inproc ms':>10}{'us/node':>9}  values"
    )
    for name, size, cold_s, warm_s, tf_s, verdict, eval_s, nodes in rows:
        checkov = CHECKOV_SECONDS[name]
        tf_text = f"{tf_s:10.2f}" if tf_s else f"{'-':>10}"
        ratio_cold = f"{cold_s / tf_s:9.2f}" if tf_s else f"{'-':>9}"
        ratio_warm = f"{warm_s / tf_s:9.2f}" if tf_s else f"{'-':>9}"
        print(
            f"{name:<9}{size / 1024:7.0f}{cold_s:9.2f}{warm_s:9.2f}{tf_text}{checkov:9.2f}"
            f"{checkov / cold_s:10.1f}{ratio_cold}{ratio_warm}{nodes:7d}{eval_s * 1000:9.1f}"
            f"{eval_s * 1e6 / max(nodes, 1):9.1f}  {verdict}"
        )
    print(f"(medians of {arguments.runs} runs; command: {' '.join(Path(c).name for c in command)})")
    print(
        f"{'config':<9}{'cold cpu':>10}{'warm cpu':>10}{'cold/warm':>11}{'wall c/w':>10}{'warm/tf':>9}"
        "  (CPU seconds; targets: cold/warm <= 1.2, warm/tf <= 1.0)"
    )
    walls = {row[0]: row for row in rows}
    for name, (cold_cpu_s, warm_cpu_s) in CPU.items():
        ratio = cold_cpu_s / warm_cpu_s
        _, _, cold_s, warm_s, tf_s, *_ = walls[name]
        warm_tf = warm_s / tf_s if tf_s else None
        verdict = ""
        if not arguments.smoke:
            verdict = "cold/warm " + ("met" if ratio <= 1.2 else "MISSED")
            if warm_tf is not None:
                verdict += ", warm/tf " + ("met" if warm_tf <= 1.0 else "MISSED")
        warm_tf_text = f"{warm_tf:8.2f}x" if warm_tf is not None else f"{'-':>9}"
        print(
            f"{name:<9}{cold_cpu_s:10.2f}{warm_cpu_s:10.2f}{ratio:10.2f}x{cold_s / warm_s:9.2f}x{warm_tf_text}  {verdict}"
        )
    wall_s, cpu_s = startup(arguments.runs)
    verdict = "" if arguments.smoke else ("met" if cpu_s < 0.1 else "MISSED")
    print(
        f"start-up, one-output root, warm cache: {wall_s * 1000:.0f} ms wall, {cpu_s * 1000:.0f} ms CPU "
        f"(target < 100 ms) {verdict}"
    )
    lalr_s, descent_s = parse_seconds(base / "wide")
    print(
        f"parsing the wide configuration in-process: LALR parser {lalr_s:.3f} s, recursive descent "
        f"{descent_s:.3f} s CPU ({lalr_s / descent_s:.1f}x faster)"
    )
    if not arguments.keep:
        shutil.rmtree(base)
    return 0 if all(row[5] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
