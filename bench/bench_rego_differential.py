"""Random differential run against OPA (not a test; prints its figures).

    .venv/bin/python bench/bench_rego_differential.py [--cases 1000] [--first-seed 0] [--show 5]

Generates env0-style policies and inputs (tests/engine/rego_differential.py) and evaluates each on
every engine the platform offers and on OPA itself, through the public interface. Prints how many
cases OPA refused (refused on save everywhere), how many evaluations agreed, disagreed (defects) or
failed closed (an error where OPA decided; documented in docs/opa-fidelity.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies_app.rego import ENGINES  # noqa: E402
from tests.engine.rego_differential import REFERENCE, generated_case, tally  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="disagreements to print in full")
    parser.add_argument("--smoke", action="store_true", help="10 cases: proves it runs")
    args = parser.parse_args()
    args.cases = 10 if args.smoke else args.cases
    status = 0
    for engine in (engine for engine in ENGINES if engine != REFERENCE):
        started = time.monotonic()
        total = tally(
            (generated_case(seed) for seed in range(args.first_seed, args.first_seed + args.cases)), engine
        )
        print(
            f"{engine} vs {REFERENCE}: {total.cases} policies ({total.refused} refused by OPA), {total.evaluations} "
            f"evaluations: {total.agreed} agreed, {len(total.differences)} disagreed, {len(total.failed_closed)} "
            "failed closed "
            f"({time.monotonic() - started:.0f} s)",
            flush=True,
        )
        for line in total.differences[: args.show]:
            print("  disagreement:", line)
        for line in total.failed_closed[: min(args.show, 2)]:
            print("  failed closed:", line)
        status = status or (1 if total.differences else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
