"""Real public modules: how many example roots we plan exactly as terraform does (not a test: prints).

    .venv/bin/python bench/bench_module_corpus.py [--work DIR] [--only owner/name ...] [--verbose]

Reads the repository snapshots on this machine (IAC_MODULE_MIRRORS, default /work/.mirror; the
search tool's ``fetch`` puts them there), writes every repository transformed into --work
(tests/engine/real_modules.py says how: provider resources become terraform_data), plans every
example root with terraform (plans are kept in --work/plans and reused while the transformed root
is unchanged) and evaluates it with our evaluator, then prints:

- match count: roots terraform plans whose every managed instance (address, values, unknowns,
  sensitivity), every root output and the absence of error diagnostics agree with ours;
- instance coverage: of terraform's planned instances, how many we plan at the same address, and
  how many of those with the same values;
- on the originals (the same roots untransformed, module sources made local the same way): the
  error diagnostics we report (terraform reports none on their transformed form), and how many of
  terraform's instances (mapped back to their original addresses) we plan at the same address.

Roots terraform refuses (a count over an unknown stub output, for instance) are counted apart.
"""

from __future__ import annotations

import argparse
import collections
import gc
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "engine"))

import real_modules  # noqa: E402
from plan_compare import TERRAFORM, compare_plan, terraform_plan  # noqa: E402
from real_modules import build_corpus, mirrored_repositories  # noqa: E402

from policies_app.iac.configuration import evaluate_configuration  # noqa: E402


def corpus_digest(corpus_dir: Path) -> str:
    """What terraform's plans depend on: every file of the transformed corpus (taken before planning)."""
    digest = hashlib.sha256()
    for path in sorted(corpus_dir.rglob("*")):
        if path.name in ("plan.out", ".terraform.lock.hcl") or ".terraform" in path.parts:
            continue
        if path.is_file() and "originals" not in path.parts:
            digest.update(str(path.relative_to(corpus_dir)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def planned(root: Path, cache: Path, key: str) -> dict:
    cached = cache / f"{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    plan = terraform_plan(root)
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(plan))
    return plan


def ours(root: Path, source_root: Path) -> tuple[dict, float]:
    started = time.perf_counter()
    try:
        document = evaluate_configuration(str(root), source_root=str(source_root))
    except TypeError:  # an evaluator without source_root (before issue 11)
        document = evaluate_configuration(str(root))
    return document, time.perf_counter() - started


def original_address(address: str) -> str | None:
    """terraform_data.aws_vpc__this[0] -> aws_vpc.this[0]; None for the corpus's own helpers."""
    parts = address.split(".")
    out = []
    i = 0
    while i < len(parts):
        if parts[i] == "module":
            out += parts[i : i + 2]
            i += 2
            continue
        if parts[i] != "terraform_data":
            return None
        name = ".".join(parts[i + 1 :])
        if name.startswith("corpus_unknown"):
            return None
        if name.startswith(("data__", "ephemeral__")):
            return None
        type_, separator, rest = name.partition("__")
        # A built-in terraform_data of the original keeps its name; a transformed resource, TYPE__NAME.
        out += [type_, rest] if separator else ["terraform_data", name]
        break
    return ".".join(out)


def smoke_mirror(directory: Path) -> Path:
    """A snapshot of one small module repository (a provider resource, an example root calling it): what
    --smoke builds its corpus from, in seconds, instead of the machine's snapshots."""
    repo = directory / "smoke+vpc" / "repo"
    (repo / "examples" / "basic").mkdir(parents=True)
    (repo / "main.tf").write_text(
        'variable "cidr" {\n  type = string\n}\n'
        'resource "aws_vpc" "this" {\n  count      = 2\n  cidr_block = var.cidr\n  tags = { Name = "smoke" }\n}\n'
        'output "vpc_ids" {\n  value = aws_vpc.this[*].id\n}\n'
    )
    (repo / "examples" / "basic" / "main.tf").write_text(
        'module "vpc" {\n  source = "../.."\n  cidr   = "10.0.0.0/16"\n}\n'
        'output "ids" {\n  value = module.vpc.vpc_ids\n}\n'
    )
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-C", str(repo)]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "smoke"]):
        subprocess.run([*git, *command], check=True, capture_output=True)
    return directory


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="/tmp/iac-module-corpus")
    parser.add_argument("--only", action="append", help="owner/name of a repository (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="print the first differences of each root")
    parser.add_argument("--smoke", action="store_true", help="one small stand-in repository: proves it runs")
    arguments = parser.parse_args()
    if TERRAFORM is None:
        print("terraform is not on PATH: nothing to compare with", file=sys.stderr)
        return 2
    if arguments.smoke:
        scratch = Path(tempfile.mkdtemp(prefix="bench-corpus-smoke-"))
        real_modules.MIRRORS = smoke_mirror(scratch / "mirror")
        arguments.work, arguments.only = str(scratch / "work"), None
    if not mirrored_repositories():
        print("no repository snapshots on this machine (IAC_MODULE_MIRRORS)", file=sys.stderr)
        return 2
    work = Path(arguments.work)
    started = time.perf_counter()
    corpus = build_corpus(work / "corpus", set(arguments.only) if arguments.only else None)
    print(
        f"{len(corpus.commits)} repositories, {len(corpus.roots)} example roots, "
        f"built in {time.perf_counter() - started:.1f} s; {len(corpus.problems)} transformation problems"
    )
    for problem in corpus.problems[:20]:
        print("  problem:", problem)
    digest = corpus_digest(corpus.directory)
    totals = collections.Counter()
    per_repository = collections.defaultdict(collections.Counter)
    our_seconds = 0.0
    for slug, relative in corpus.roots:
        root = corpus.root(slug, relative)
        key = hashlib.sha256(f"{digest}/{slug}/{relative}".encode()).hexdigest()[:32]
        plan = planned(root, work / "plans", key)
        name = f"{slug}/{relative}"
        if "error" in plan:
            totals["terraform refuses"] += 1
            per_repository[slug]["refused"] += 1
            if arguments.verbose:
                first = next((line for line in plan["error"].splitlines() if line.startswith("Error")), "")
                print(f"REFUSED {name}: {first}")
            continue
        gc.collect()
        document, seconds = ours(root, corpus.directory)
        our_seconds += seconds
        comparison = compare_plan(plan, document)
        totals["roots"] += 1
        totals["matches"] += comparison.matches
        totals["instances"] += comparison.their_instances
        totals["same address"] += comparison.same_address
        totals["same values"] += comparison.same_values
        per_repository[slug]["roots"] += 1
        per_repository[slug]["matches"] += comparison.matches
        if arguments.verbose and not comparison.matches:
            print(f"DIFFERS {name}: " + "; ".join(comparison.differences[:4]))

        original = corpus.root(slug, relative, original=True)
        original_document, _ = ours(original, corpus.directory)
        errors = [d for d in original_document["diagnostics"] if d["severity"] == "error"]
        totals["original errors"] += len(errors)
        totals["original roots with errors"] += bool(errors)
        wanted = {
            original_address(c["address"]) for c in plan.get("resource_changes", []) if c["mode"] == "managed"
        } - {None}
        found = {r["address"] for r in original_document["resources"] if r["mode"] == "managed"}
        totals["original instances"] += len(wanted)
        totals["original same address"] += len(wanted & found)
        if arguments.verbose and errors:
            print(
                f"ORIGINAL {name}: {len(errors)} errors, first: {errors[0]['summary']}: {errors[0]['detail'][:160]}"
            )

    print()
    print(f"{'repository':<58}{'roots':>6}{'match':>6}{'refused':>8}")
    for slug in sorted(per_repository):
        counts = per_repository[slug]
        print(f"{slug:<58}{counts['roots']:>6}{counts['matches']:>6}{counts['refused']:>8}")
    print()
    roots = totals["roots"]
    print(
        f"match count: {totals['matches']} of {roots} roots terraform plans "
        f"({totals['terraform refuses']} roots terraform refuses)"
    )
    instances = totals["instances"] or 1
    print(
        f"instance coverage: {totals['same address']} of {totals['instances']} instances at the same address "
        f"({100 * totals['same address'] / instances:.1f} %), {totals['same values']} with the same values "
        f"({100 * totals['same values'] / instances:.1f} %)"
    )
    original = totals["original instances"] or 1
    print(
        f"originals: {totals['original errors']} error diagnostics in {totals['original roots with errors']} "
        f"roots; {totals['original same address']} of {totals['original instances']} instances at the same "
        f"address ({100 * totals['original same address'] / original:.1f} %)"
    )
    print(f"our evaluation time over the transformed roots: {our_seconds:.1f} s")
    return 0 if roots else 1  # nothing compared: the corpus or terraform's plans no longer come out


if __name__ == "__main__":
    sys.exit(main())
