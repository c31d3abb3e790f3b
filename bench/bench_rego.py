"""Rego evaluation time through the public, supervised path (not a test; prints a table).

    .venv/bin/python bench/bench_rego.py [--runs 5] [--engines regorus,opa] [--budget-s 240]
    .venv/bin/python bench/bench_rego.py --smoke     # small plans, few policies, one run: seconds
    .venv/bin/python bench/bench_rego.py --cpu       # the worker's part only, in CPU time (see below)

For 1, 10 and 50 policies on plans of 10, 1,000 and 10,000 resource changes, with both engines:
the median wall time of evaluate_policies() after one warm-up call (worker started, policies compiled).
The input is serialised once per plan size, as the platform does.

Each figure is also given as a ratio to the floor of its engine and plan, measured in the same run: the
same path with one policy that decides at once (``allow contains "floor" if input``), i.e. the input
handed to the worker and read into the engine once, nothing of substance evaluated. Targets (issue 17):
10 policies x 10,000 resources at most 1.5x the floor, 50 policies at most 3x.

The machine is shared: wall times move with everybody's load (a floor of 90 ms in one run, 185 ms in the
next). ``--cpu`` measures what the worker does (the engine adapter, in this process, policies prepared
once as the worker caches them) in CPU time of this process, which the others' load moves much less;
the floor is then the input read into the engine with the floor policy, nothing else.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies_app.rego import ENGINES, PolicyModule, PolicySource, evaluate_policies  # noqa: E402

# Ten env0-style policies of the kinds the platform runs; several walk every resource change.
TEMPLATES = [
    'pending contains "needs two approvers" if { count(input.approvers) < 2 }\n'
    'allow contains "two approvers" if { count(input.approvers) >= 2 }',
    'security if { some a in input.approvers; some t in a.teams; t.name == "security team" }\n'
    'pending contains "security must approve" if { not security }',
    'deny contains "too expensive" if { input.costEstimation.monthlyCostDiff > data.limit }',
    "deny contains msg if {\n  some rc in input.plan.resource_changes\n"
    '  "delete" in rc.change.actions\n  rc.type in {"aws_db_instance", "aws_s3_bucket"}\n'
    '  msg := sprintf("%s would be destroyed", [rc.address])\n}',
    'deny contains "main only" if { input.deploymentRequest.revision != "main" }',
    "warn contains msg if {\n  some rc in input.plan.resource_changes\n"
    '  rc.change.after.instance_type == "m5.24xlarge"\n  msg := sprintf("large instance %s", [rc.address])\n}',
    "warn contains msg if {\n  some rc in input.plan.resource_changes\n"
    '  "create" in rc.change.actions\n  not rc.change.after.tags.owner\n'
    '  msg := sprintf("%s has no owner tag", [rc.address])\n}',
    'deny contains "destroy needs a ticket" if {\n  input.deploymentRequest.type == "destroy"\n'
    "  not input.variables.env0.TICKET\n}",
    'changes := count([rc | some rc in input.plan.resource_changes; rc.change.actions != ["no-op"]])\n'
    'pending contains "big change" if { changes > data.limit }',
    'import data.lib.tfplan\nallow contains "plan reviewed" if { count(input.plan.resource_changes) >= 0 }',
]


# The floor: a policy that decides at once, so what is measured is handing the input over and reading it
# into the engine once. It names the input as a whole, so that an engine given only the parts of the input
# a policy reads (OPA, engines.py) is still given all of it.
FLOOR = PolicySource(
    "floor@1",
    "floor",
    "v1",
    (PolicyModule("policy.rego", 'package env0\n\nallow contains "floor" if input\n'),),
    None,
)


def make_policies(count: int) -> list[PolicySource]:
    policies = []
    for number in range(count):
        body = TEMPLATES[number % len(TEMPLATES)]
        source = f"package env0\n\n{body}\n"
        policies.append(
            PolicySource(
                f"bench{number}@1",
                f"bench {number}",
                "v1",
                (PolicyModule("policy.rego", source),),
                {"limit": 500},
            )
        )
    return policies


def make_input(resources: int) -> str:
    changes = [
        {
            "address": f"aws_instance.web[{index}]",
            "mode": "managed",
            "type": "aws_instance",
            "name": "web",
            "index": index,
            "provider_name": "registry.terraform.io/hashicorp/aws",
            "change": {
                "actions": ["create"] if index % 3 else ["update"],
                "before": None,
                "after": {
                    "ami": "ami-0123456789abcdef0",
                    "instance_type": "t3.micro",
                    "tags": {"Name": f"web-{index}", "owner": "platform"},
                    "subnet_id": "subnet-0123456789",
                },
            },
        }
        for index in range(resources)
    ]
    document = {
        "deploymentRequest": {"type": "deploy", "triggerName": "user", "revision": "main"},
        "template": {"id": "t", "name": "bench", "type": "terraform"},
        "costEstimation": {"totalMonthlyCost": 1000, "monthlyCostDiff": 10},
        "plan": {"format_version": "1.2", "terraform_version": "1.11.4", "resource_changes": changes},
        "deployerUser": {"name": "Alice", "email": "alice@example.com", "teams": []},
        "approvers": [
            {"name": "Bob", "email": "bob@example.com", "teams": [{"id": "s", "name": "security team"}]},
            {"name": "Carol", "email": "carol@example.com", "teams": []},
        ],
        "variables": {"environment": {}, "terraform": {}, "env0": {}},
    }
    return json.dumps(document)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--sizes", default="10,1000,10000", help="resource changes per plan")
    parser.add_argument("--counts", default="1,10,50", help="policies per evaluation")
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop repeating runs beyond this total")
    parser.add_argument("--smoke", action="store_true", help="small plans, 1 and 10 policies, one run")
    parser.add_argument("--cpu", action="store_true", help="the worker's part, in this process, in CPU time")
    args = parser.parse_args()
    sizes = tuple(int(size) for size in args.sizes.split(","))
    counts = tuple(int(count) for count in args.counts.split(","))
    if args.smoke:
        sizes, counts, args.runs = (10, 1_000), (1, 10), 1
    started = time.monotonic()
    inputs = {size: make_input(size) for size in sizes}
    print(
        ("CPU time of the worker's part, in this process\n" if args.cpu else "")
        + f"{'engine':8} {'policies':>8} {'resources':>9} {'input MB':>8} {'median ms':>10} {'min ms':>8} "
        f"{'runs':>4} {'x floor':>8}"
    )
    failed = False

    prepared: dict[tuple[str, str], Any] = {}

    def in_process(policies: list[PolicySource], input_json: str, engine: str) -> float | None:
        from policies_app.rego.engines import OpaAdapter, RegorusAdapter
        from policies_app.rego.prepare import policy_payload, prepare_policy

        if engine not in adapters:
            adapters[engine] = RegorusAdapter() if engine == "regorus" else OpaAdapter()
        payloads = [policy_payload(policy) for policy in policies]
        ready = [prepared.setdefault((p["key"], p["hash"]), prepare_policy(p)) for p in payloads]
        errors: list[Any] = []

        def report(index: int, kind: str, **fields: Any) -> None:
            if fields.get("error"):
                errors.append(fields["error"])

        began = time.process_time()
        if engine == "regorus":
            adapters[engine].evaluate(ready, input_json, report)
        else:
            keys = [(p["key"], p["hash"]) for p in payloads]
            adapters[engine].evaluate(ready, keys, input_json, report)
        spent = (time.process_time() - began) * 1000.0
        if errors:
            print(f"{engine:8} {len(policies):8} {len(input_json):9}  error: {errors[0]}")
            return None
        return spent

    adapters: dict[str, Any] = {}

    def once(policies: list[PolicySource], input_json: str, engine: str) -> float | None:
        if args.cpu:
            return in_process(policies, input_json, engine)
        result = evaluate_policies(policies, input_json, engine, timeout_s=300)
        if result.decision == "error":
            print(f"{engine:8} {len(policies):8} {len(input_json):9}  error: {result.error}")
            return None
        return result.duration_ms

    for engine in args.engines.split(","):
        for resources, input_json in inputs.items():
            # The floor and every policy count are measured in turn within each run (interleaved), so a
            # burst of load on the shared machine falls on all of them alike; the medians are compared.
            cases = [("floor", [FLOOR])] + [(str(count), make_policies(count)) for count in counts]
            times: dict[str, list[float]] = {label: [] for label, _ in cases}
            for label, policies in cases:  # warm-up: worker started, policies compiled
                if once(policies, input_json, engine) is None:
                    failed = True
                    cases = [case for case in cases if case[0] != label]
            for _ in range(args.runs):
                for label, policies in cases:
                    duration = once(policies, input_json, engine)
                    if duration is not None:
                        times[label].append(duration)
                spent = sum(sum(found) for found in times.values())
                if time.monotonic() - started > args.budget_s or spent > 60_000:
                    break
            if not times["floor"]:
                failed = True
                continue
            floor = statistics.median(times["floor"])
            for label, _ in cases:
                found = times[label]
                print(
                    f"{engine:8} {label:>8} {resources:9} {len(input_json) / 1e6:8.2f} "
                    f"{statistics.median(found):10.1f} {min(found):8.1f} {len(found):4} "
                    f"{statistics.median(found) / floor:7.2f}x",
                    flush=True,
                )
    print(f"total {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
