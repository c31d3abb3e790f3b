"""What a policy repository can make the server do, before and after the bounds (not a test; prints a table).

    .venv/bin/python bench/bench_repository_reads.py [--budget-s 20]

- globs: the regular expression policies.hcl globs used to become (``**/`` as ``(?:[^/]+/)*``) run by
  Python's ``re``, against the same expression run by RE2 (policies/git/folders.py), for ``**/``
  repeated N times on a path of 2N + 6 folders that does not match (the worst case: every split of
  the folders is tried). Python's time grows by a factor per added ``**/``; RE2's stays flat.
- YAML: ``yaml.safe_load`` of a data file of nested aliases, then the JSON a revision would store,
  against guards/yaml_limits.py refusing the same file, for 5 to 7 levels of nine aliases each.

Python's side is cut off once one case takes longer than the budget (the next would take ~N times
more). Ratios are of times measured in this one run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import re2
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies_app.guards.yaml_limits import load_bounded_yaml  # noqa: E402


def _timed(function, *arguments) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*arguments)
    return time.perf_counter() - started, result


def bench_globs(budget_s: float) -> None:
    print("globs: '**/' * N + 'x.rego' against a path of 2N + 6 folders that does not match")
    print(f"{'N':>3} {'python re (s)':>14} {'RE2 (s)':>10} {'ratio':>10}")
    python_done = False
    for repeats in range(4, 13):
        expression = "(?:[^/]+/)*" * repeats + r"x\.rego"
        path = "a/" * (2 * repeats + 6) + "y.rego"
        fast, matched = _timed(lambda e, p: re2.compile(e).fullmatch(p), expression, path)
        assert matched is None
        if python_done:
            print(f"{repeats:>3} {'(skipped)':>14} {fast:>10.6f} {'':>10}")
            continue
        slow, matched = _timed(lambda e, p: re.compile(e + r"\Z").match(p), expression, path)
        assert matched is None
        print(f"{repeats:>3} {slow:>14.3f} {fast:>10.6f} {slow / fast:>10.0f}")
        python_done = slow > budget_s


def _bomb(levels: int) -> str:
    lines = ["a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    names = "abcdefghijklmnop"
    for previous, name in zip(names[: levels - 1], names[1:levels], strict=True):
        lines.append(f"{name}: &{name} [{','.join(['*' + previous] * 9)}]")
    return "\n".join(lines) + "\n"


def _refused(text: str) -> None:
    try:
        load_bounded_yaml(text)
    except yaml.YAMLError:
        return
    raise AssertionError("the bomb was not refused")


def bench_yaml(budget_s: float) -> None:
    print("\nYAML: nested aliases, nine per level")
    print(
        f"{'levels':>6} {'bytes':>6} {'safe_load + JSON (s)':>21} {'JSON (MB)':>10} {'bounded (s)':>12} {'ratio':>8}"
    )
    python_done = False
    for levels in range(5, 8):
        text = _bomb(levels)

        fast, _ = _timed(_refused, text)
        if python_done:
            print(f"{levels:>6} {len(text):>6} {'(skipped)':>21} {'':>10} {fast:>12.6f} {'':>8}")
            continue
        slow, stored = _timed(lambda t: json.dumps(yaml.safe_load(t)), text)
        size = len(stored) / 1e6
        print(f"{levels:>6} {len(text):>6} {slow:>21.3f} {size:>10.1f} {fast:>12.6f} {slow / fast:>8.0f}")
        python_done = slow > budget_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=20.0, help="stop timing Python past this")
    parser.add_argument("--smoke", action="store_true", help="a budget of 0.05 s: proves it runs")
    arguments = parser.parse_args()
    arguments.budget_s = 0.05 if arguments.smoke else arguments.budget_s
    bench_globs(arguments.budget_s)
    bench_yaml(arguments.budget_s)


if __name__ == "__main__":
    main()
