"""What a policy that walks every resource change costs in regorus itself, without our adapter (not a test).

    .venv/bin/python bench/bench_regorus_walks.py [--resources 10000] [--runs 9]
    .venv/bin/python bench/bench_regorus_walks.py --smoke     # 100 resource changes, one run: seconds

bench_rego.py --cpu measures regorus's part of an evaluation against its floor (the input read into the
engine once). This takes that part apart, in CPU time of this process, medians of ``--runs``:
- the input read (``set_input_json``): the floor's whole cost;
- each bench_rego.py policy evaluated straight on regorus (an engine clone sharing the input, the
  policy added, its four decision rules queried), and the same policy through RegorusAdapter;
- the four decision rules read in one query (as the adapter does) against a query per rule;
- what one resource change costs regorus per construct (iterating, one statement, one field step),
  from minimal policies over the same input;
- the lowest ratios regorus itself allows for the bench's 10 and 50 policies: the floor plus the
  straight costs, no adapter at all. When these already miss issue 17's targets (1.5x, 3x), nothing
  the adapter does can meet them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_rego import TEMPLATES, make_input, make_policies  # noqa: E402

from policies_app.rego.contract import DECISION_RULES  # noqa: E402
from policies_app.rego.engines import RegorusAdapter, reaches_library  # noqa: E402
from policies_app.rego.prepare import (  # noqa: E402
    PreparedPolicy,
    library_modules_for_regorus,
    policy_payload,
    prepare_policy,
)

EACH = "some rc in input.plan.resource_changes"
# One construct added at a time: each line's cost minus the one before it is that construct's cost.
CONSTRUCTS = [
    ("iterate, body fails at once", f"x contains 1 if {{ {EACH}; false }}"),
    ("+ one statement (rc == 2)", f"x contains 1 if {{ {EACH}; rc == 2 }}"),
    ("+ one field step (rc.type)", f'x contains 1 if {{ {EACH}; rc.type == "a" }}'),
    ("+ three field steps", f'x contains 1 if {{ {EACH}; rc.change.after.instance_type == "a" }}'),
    (
        "two statements, one step each",
        f'x contains 1 if {{ {EACH}; rc.type == "aws_instance"; rc.name == "z" }}',
    ),
    ("same walk with [_]", 'x contains 1 if { rc := input.plan.resource_changes[_]; rc.type == "a" }'),
]


SHARED = """package env0
created contains rc.address if { some rc in input.plan.resource_changes; "create" in rc.change.actions }
pending contains "many creations" if { count(created) > 100 }
allow contains "few creations" if { count(created) <= 100 }
warn contains sprintf("%d created", [count(created)]) if { count(created) > 0 }
"""


def cpu_ms(function: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.process_time()
        function()
        times.append((time.process_time() - began) * 1000.0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--smoke", action="store_true", help="100 resource changes, one run (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.resources, args.runs = 100, 1
    import regorus

    input_json = make_input(args.resources)
    floor = cpu_ms(lambda: regorus.Engine().set_input_json(input_json), args.runs)
    print(f"input read (set_input_json), {args.resources} resource changes: {floor:.1f} ms")
    base = regorus.Engine()
    base.set_input_json(input_json)
    adapter = RegorusAdapter()

    library = base.clone()  # what the adapter makes once per evaluation for a policy reading data.lib
    for filename, source in library_modules_for_regorus():
        library.add_policy(filename, source)

    def straight(parent: object, source: str) -> None:
        engine = parent.clone()
        engine.add_policy("policy.rego", source)
        engine.add_data_json('{"limit":500}')
        for rule in DECISION_RULES:
            engine.eval_query_as_json(f"data.env0.{rule}")

    def adapted(parent: object, prepared: PreparedPolicy) -> None:
        adapter._rules(adapter._engine(parent, prepared, with_library=False), prepared)

    print(f"\n{'bench policy':>12} {'regorus ms':>10} {'adapter ms':>10}  first line")
    costs = []
    for number, policy in enumerate(make_policies(len(TEMPLATES))):
        source = policy.modules[0].source
        prepared = prepare_policy(policy_payload(policy))
        parent = library if reaches_library(prepared) else base
        straight_ms = cpu_ms(lambda parent=parent, source=source: straight(parent, source), args.runs)
        adapter_ms = cpu_ms(lambda parent=parent, prepared=prepared: adapted(parent, prepared), args.runs)
        costs.append(straight_ms)
        print(f"{number:12} {straight_ms:10.2f} {adapter_ms:10.2f}  {TEMPLATES[number].splitlines()[0][:60]}")

    # The adapter reads the four rules in one query: no dearer for a policy that walks once, and a helper
    # several rules share is evaluated once instead of once per rule (SHARED, not a bench policy).
    together = "; ".join(f"{rule} := [value | value := data.env0.{rule}]" for rule in DECISION_RULES)
    print()
    for label, source in (
        ("bench policy 0", make_policies(1)[0].modules[0].source),
        ("bench policy 6", make_policies(7)[6].modules[0].source),
        ("a helper read by three rules", SHARED),
    ):

        def at_once(source: str = source) -> None:
            engine = base.clone()
            engine.add_policy("policy.rego", source)
            engine.add_data_json('{"limit":500}')
            engine.eval_query_as_json(together)

        four = cpu_ms(lambda source=source: straight(base, source), args.runs)
        print(f"{label:28}: a query per rule {four:7.3f} ms, one query {cpu_ms(at_once, args.runs):7.3f} ms")

    print(f"\nper resource change ({args.resources}), minimal policies straight on regorus:")
    for label, body in CONSTRUCTS:
        source = f"package t\n{body}\n"

        def walk(source: str = source) -> None:
            engine = base.clone()
            engine.add_policy("t.rego", source)
            engine.eval_query_as_json("data.t.x")

        spent = cpu_ms(walk, args.runs)
        print(f"  {label:34} {spent:7.2f} ms  {spent * 1e6 / args.resources:6.0f} ns each")

    print("\nlowest ratio regorus itself allows (floor + the policies straight on regorus, no adapter):")
    for count, target in ((10, 1.5), (50, 3.0)):
        total = floor + sum(costs[number % len(costs)] for number in range(count))
        print(f"  {count:3} policies: {total:7.1f} ms = {total / floor:4.2f}x the floor (target {target}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
