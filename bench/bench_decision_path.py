"""Trigger to decision with policies that warn (not a test: prints one table from one run).

    .venv/bin/python bench/bench_decision_path.py [--resources 10000] [--policies 1] [--runs 5] [--smoke]

Each round triggers a deployment whose plan has --resources bucket changes, three of them public, under
--policies policies that warn about public buckets (so each has an explanation to give: which rule fired and
what it read). Without a broker the worker's tasks run in this process once their transaction commits,
so one trigger call does everything; the figures are taken from the rows:
- decision: from the trigger to the evaluation recorded (its ``created_at``), what the pipeline waits for;
- explained: from the trigger until its explanations are stored too (the end of the call).
Run it on a checkout before the explanations left the decision path to compare (the "before" figure:
decision and explained are then the same moment). Medians of --runs rounds, in one run.

With --api the trigger is the pipeline's request through the whole Django stack (POST
/api/v1/environments/{id}/deployments/ with a token, on the embedded default: SQLite, the tasks run in the
request's process once it commits), and its decision is printed against a bare authenticated GET (GET
/api/v1/me/, same token) in the same run: issue 17's target is at most 4x, with 10 policies and 200
resources (``--api --policies 10 --resources 200``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import seeded

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PUBLIC_BUCKETS = """package env0

warn contains msg if {
    some change in input.plan.resource_changes
    change.change.after.acl == "public-read"
    msg := sprintf("%s is public", [change.address])
}
"""


def plan(resources: int) -> dict:
    changes = [
        {
            "address": f"aws_s3_bucket.b{index}",
            "type": "aws_s3_bucket",
            "name": f"b{index}",
            "provider_name": "registry.terraform.io/hashicorp/aws",
            "change": {
                "actions": ["create"],
                "before": None,
                "after": {"acl": "public-read" if index % (resources // 3 or 1) == 1 else "private"},
            },
        }
        for index in range(resources)
    ]
    return {"format_version": "1.2", "terraform_version": "1.11.4", "resource_changes": changes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--policies", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="30 resources, one round: proves it runs")
    parser.add_argument("--api", action="store_true", help="trigger through the API, against GET /api/v1/me/")
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.resources, arguments.runs = 30, 1

    os.environ.pop("CELERY_BROKER_URL", None)  # the worker's tasks run in this process, on commit
    postgres_name = seeded.start("bench_decision_path")
    from django.conf import settings

    from policies_app.deployments import lifecycle
    from policies_app.models import Deployment
    from tests.builders import World, api_client_for, make_policy

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    world = World.create()
    world.platform.approval_policies.set([])
    for number in range(arguments.policies):
        world.platform.approval_policies.add(make_policy(f"public buckets {number}", PUBLIC_BUCKETS))
    the_plan = plan(arguments.resources)
    client = api_client_for(world.bob)

    def trigger() -> tuple[float, float, str]:
        began = time.time()
        if arguments.api:
            response = client.post(
                f"/api/v1/environments/{world.environment.pk}/deployments/", {"plan": the_plan}, format="json"
            )
            assert response.status_code in (200, 201), response.content
            deployment = Deployment(pk=response.json()["id"])
        else:
            deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob, plan=the_plan)
        ended = time.time()
        deployment = Deployment.objects.get(pk=deployment.pk)
        evaluation = deployment.evaluations.last()
        explained = all(
            outcome.get("explanation") for outcome in evaluation.outcomes if outcome.get("decision") == "warn"
        )  # False when an explanation came back empty (its own time limit, on a loaded machine)
        status = deployment.status
        if status == "approved":
            lifecycle.complete_deployment(deployment, world.bob, "succeeded")
        decided = evaluation.created_at.timestamp() - began
        return decided, ended - began, f"{status}, explained: {explained}"

    trigger()  # the tables, the engine and the evaluator's imports started before anything is timed
    decided, explained, statuses = [], [], set()
    for _ in range(arguments.runs):
        decision_s, explained_s, status = trigger()
        decided.append(decision_s)
        explained.append(explained_s)
        statuses.add(status)
    print(
        f"{arguments.resources} resources, {arguments.policies} warning policies, {arguments.runs} rounds "
        f"(medians, ms): {statuses}"
    )
    print(f"  trigger -> decision   {statistics.median(decided) * 1000:8.1f}")
    print(f"  trigger -> explained  {statistics.median(explained) * 1000:8.1f}")
    if arguments.api:
        bare = []
        for _ in range(max(arguments.runs * 10, 20)):
            began = time.time()
            assert client.get("/api/v1/me/").status_code == 200
            bare.append(time.time() - began)
        floor = statistics.median(bare)
        ratio = statistics.median(decided) / floor
        print(f"  GET /api/v1/me/       {floor * 1000:8.1f}")
        print(f"trigger to decision through the API: {ratio:.1f}x a bare authenticated GET (target <= 4x)")
    seeded.finish(postgres_name)
    return 0 if len(statuses) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
