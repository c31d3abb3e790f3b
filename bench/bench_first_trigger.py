"""The first trigger after a template change against a trigger with the configuration view kept (not a
test: prints one table from one run).

    .venv/bin/python bench/bench_first_trigger.py [--resources 200] [--runs 5] [--smoke]

Each round uploads a new archive of the template (another comment, so other bytes and another view),
through the service a manager's upload calls; without a broker the worker's task runs in this process
once the upload commits, so "upload + views" is the upload with the precomputation a worker does. Then:
- first: the first trigger after that upload (the view the worker computed is read);
- cached: the next trigger (the view kept, as for every later deployment);
- on path: a trigger that finds the view missing (the upload's view deleted first) and computes it on
  its own path, as every first trigger did before views were computed ahead: the "before" figure.
Each trigger is a whole evaluation (one policy that reads the configuration), then the deployment is
completed. Medians of --runs rounds; the target is first / cached <= 2.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tarfile
import time
from pathlib import Path

import seeded

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET_RATIO = 2.0

READS_THE_CONFIGURATION = """package env0

allow contains sprintf("%d resources", [count(input.configuration.resources)]) if true
"""


def configuration(resources: int, round_number: int) -> str:
    blocks = [f"# round {round_number}\n", 'variable "tier" {\n  type = string\n}\n']
    for r in range(resources):
        blocks.append(
            f'resource "terraform_data" "r{r}" {{\n'
            f'  input = {{ name = "r{r}-${{var.tier}}", ports = [80, 443], index = {r} }}\n}}\n'
        )
    return "\n".join(blocks)


def archive(text: str) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        member = tarfile.TarInfo("web/main.tf")
        member.size = len(text.encode())
        tar.addfile(member, io.BytesIO(text.encode()))
    buffer.seek(0)
    return buffer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="5 resources, one round: proves it runs")
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.resources, arguments.runs = 5, 1

    os.environ.pop("CELERY_BROKER_URL", None)  # the worker's tasks run in this process, on commit
    postgres_name = seeded.start("bench_first_trigger")
    from django.conf import settings
    from django.core.files.uploadedfile import SimpleUploadedFile

    from policies_app.deployments import approvals, lifecycle
    from policies_app.models import ConfigurationView, Deployment
    from policies_app.projects import iac_templates
    from tests.builders import World, make_policy, plan_with

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # approval emails kept quiet
    world = World.create()
    world.template.path = "web"
    world.template.save()
    world.environment.terraform_variables = {"tier": "gold"}
    world.environment.save()
    world.platform.approval_policies.add(make_policy("reads the configuration", READS_THE_CONFIGURATION))

    def trigger() -> tuple[float, str]:
        began = time.perf_counter()
        deployment, _ = lifecycle.trigger_deployment(
            world.environment, world.bob, plan=plan_with(("terraform_data.r0", ["create"]))
        )
        seconds = time.perf_counter() - began
        deployment = Deployment.objects.get(pk=deployment.pk)
        if deployment.status == "approved":
            lifecycle.complete_deployment(deployment, world.bob, "succeeded")
        else:  # the world's own policies may wait for an approval: free the environment
            approvals.cancel_deployment(deployment, world.bob)
        return seconds, deployment.status

    def upload(round_number: int) -> float:
        body = archive(configuration(arguments.resources, round_number)).getvalue()
        began = time.perf_counter()
        iac_templates.upload_archive(
            world.admin, world.template, SimpleUploadedFile(f"web-{round_number}.tar.gz", body)
        )
        return time.perf_counter() - began

    trigger()  # the tables, the engine and the evaluator's imports started before anything is timed
    figures: dict[str, list[float]] = {"upload + views": [], "first": [], "cached": [], "on path": []}
    statuses = set()
    for round_number in range(arguments.runs):
        views = ConfigurationView.objects.count()
        figures["upload + views"].append(upload(2 * round_number))
        computed_ahead = ConfigurationView.objects.count() - views
        for name in ("first", "cached"):
            seconds, status = trigger()
            figures[name].append(seconds)
            statuses.add(status)
        if ConfigurationView.objects.count() - views != computed_ahead or computed_ahead != 1:
            print(f"round {round_number}: the triggers computed a view: not computed ahead", file=sys.stderr)
            return 1
        upload(2 * round_number + 1)
        ConfigurationView.objects.order_by("-pk").first().delete()  # as if nothing had computed it ahead
        seconds, status = trigger()
        figures["on path"].append(seconds)
        statuses.add(status)

    medians = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{arguments.resources} resources, {arguments.runs} rounds (medians, ms)")
    for name, seconds in medians.items():
        print(f"  {name:<15}{seconds * 1000:8.1f}")
    ratio = medians["first"] / medians["cached"]
    print(
        f"first trigger after a change / trigger with the view kept: {ratio:.2f}x"
        + (
            ""
            if arguments.smoke
            else f" (target at most {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'})"
        )
    )
    print(f"a view computed on the trigger's path (before): {medians['on path'] / medians['cached']:.2f}x")
    seeded.finish(postgres_name)
    return 0 if len(statuses) == 1 else 1  # every trigger decided alike


if __name__ == "__main__":
    sys.exit(main())
