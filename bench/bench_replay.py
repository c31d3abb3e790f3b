"""Replay of a draft over 500 recorded deployments with realistic plans (1,000 resource changes each),
with the default engine, through the platform's own replay (not a test; prints its figures).

    .venv/bin/python bench/bench_replay.py [--deployments 500] [--resources 1000] [--runs 1]

Builds a throw-away database (SQLite in a temporary folder; BENCH_DATABASE_URL for another), records
the deployments as evaluations would (each input is a full policy input with its plan), then times
``replay.replay_revision`` end to end: reading every recorded input from the database, evaluating the
draft on it in the supervised engine worker, comparing with the recorded decision. The draft is the
catalog's "no public exposure" policy with one port fewer allowed, so a known number of deployments
(those that open that port to the world) would change from allow to deny. Target: under 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TYPES = (
    "aws_instance",
    "aws_s3_bucket",
    "aws_security_group",
    "aws_db_instance",
    "aws_iam_role",
    "aws_lambda_function",
    "aws_route53_record",
    "aws_ebs_volume",
)
ACTIONS = (["create"], ["update"], ["no-op"], ["delete", "create"], ["delete"])


def resource_change(index: int, rng: random.Random) -> dict:
    """One resource change shaped as ``terraform show -json`` writes it."""
    rtype = TYPES[index % len(TYPES)]
    actions = ACTIONS[rng.randrange(len(ACTIONS))]
    tags = {"Name": f"{rtype}-{index}", "owner": rng.choice(["payments", "platform", "data"]), "env": "prod"}
    after: dict = {"tags": tags, "tags_all": {**tags, "managed-by": "terraform"}}
    if rtype == "aws_instance":
        after.update(
            ami="ami-0123456789abcdef0", instance_type=rng.choice(["t3.micro", "m5.large"]), monitoring=True
        )
    elif rtype == "aws_s3_bucket":
        after.update(bucket=f"bucket-{index}", acl="private", force_destroy=False)
    elif rtype == "aws_security_group":
        after.update(
            name=f"sg-{index}",
            ingress=[{"from_port": 22, "to_port": 22, "protocol": "tcp", "cidr_blocks": ["10.0.0.0/8"]}],
            egress=[{"from_port": 0, "to_port": 0, "protocol": "-1", "cidr_blocks": ["0.0.0.0/0"]}],
        )
    elif rtype == "aws_db_instance":
        after.update(
            engine="postgres", instance_class="db.t3.medium", allocated_storage=100, publicly_accessible=False
        )
    elif rtype == "aws_lambda_function":
        after.update(function_name=f"fn-{index}", runtime="python3.12", memory_size=256, timeout=30)
    else:
        after.update(name=f"{rtype}-{index}", description="managed by the platform team")
    before = None if actions == ["create"] else {**after, "tags": {**tags, "owner": "legacy"}}
    return {
        "address": f"module.app.{rtype}.r{index}",
        "module_address": "module.app",
        "mode": "managed",
        "type": rtype,
        "name": f"r{index}",
        "provider_name": "registry.terraform.io/hashicorp/aws",
        "change": {
            "actions": actions,
            "before": before,
            "after": None if actions == ["delete"] else after,
            "after_unknown": {"id": True, "arn": True} if "create" in actions else {},
            "before_sensitive": {},
            "after_sensitive": {"tags": {}},
        },
    }


OPEN_443 = {
    "address": "aws_security_group.public_https",
    "mode": "managed",
    "type": "aws_security_group",
    "name": "public_https",
    "provider_name": "registry.terraform.io/hashicorp/aws",
    "change": {
        "actions": ["create"],
        "before": None,
        "after": {
            "name": "public-https",
            "ingress": [{"from_port": 443, "to_port": 443, "protocol": "tcp", "cidr_blocks": ["0.0.0.0/0"]}],
        },
        "after_unknown": {"id": True},
    },
}


def policy_input(number: int, resources_json: list[str]) -> tuple[str, bool]:
    """The recorded input of deployment ``number``; every seventh opens port 443 to the world."""
    opens_443 = number % 7 == 0
    changes = list(resources_json)
    if opens_443:
        changes[number % len(changes)] = json.dumps(OPEN_443, separators=(",", ":"))
    plan = (
        '{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":['
        + ",".join(changes)
        + '],"configuration":{"root_module":{}}}'
    )
    head = {
        "deploymentRequest": {"type": "deploy", "triggerName": "cd", "revision": "main"},
        "template": {"id": "1", "name": "app", "type": "terraform", "repository": "", "path": "app"},
        "costEstimation": {"totalMonthlyCost": 1200.5, "monthlyCostDiff": number % 90},
        "deployerUser": {"name": "bob", "email": "bob@example.com", "teams": [{"id": "1", "name": "dev"}]},
        "approvers": [],
        "variables": {"environment": {}, "terraform": {"region": "eu-west-1"}, "env0": {}},
        "state": None,
        "configuration": None,
    }
    text = json.dumps(head, separators=(",", ":"))
    return text[:-1] + ',"plan":' + plan + "}", opens_443


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=500)
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1, help="timed replays (the figure is their median)")
    parser.add_argument("--smoke", action="store_true", help="10 deployments of 20 resources: proves it runs")
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.deployments, arguments.resources = 10, 20

    workdir = tempfile.mkdtemp(prefix="bench-replay-")
    os.environ["PLATFORM_VAR_DIR"] = workdir
    os.environ.setdefault(
        "DATABASE_URL", os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{workdir}/bench.sqlite3"
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "policy_platform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from policies_app.models import Deployment, Environment, Evaluation, Project, Template
    from policies_app.policies import authoring, catalog, replay

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    user = get_user_model().objects.create_user("bob", "bob@example.com", "pw")
    project = Project.objects.create(name="Platform")
    template = Template.objects.create(name="app", type="terraform", path="app")
    environment = Environment.objects.create(name="prod", project=project, template=template)
    policy = catalog.install("no-public-exposure", name="exposure", parameters={"allowed_ports": [443]})
    project.approval_policies.add(policy)
    draft = authoring.revise_policy(
        policy,
        data={"policyData": {**policy.active_revision.data["policyData"], "allowed_ports": []}},
        draft=True,
    )

    rng = random.Random(10)
    resources_json = [
        json.dumps(resource_change(i, rng), separators=(",", ":")) for i in range(arguments.resources)
    ]
    expected_changes = 0
    input_bytes = 0
    for start in range(0, arguments.deployments, 25):
        numbers = range(start, min(start + 25, arguments.deployments))
        deployments = Deployment.objects.bulk_create(
            Deployment(environment=environment, deployer=user, status="approved", decision="allow")
            for _ in numbers
        )
        evaluations = []
        for number, deployment in zip(numbers, deployments, strict=True):
            text, opens_443 = policy_input(number, resources_json)
            expected_changes += opens_443
            input_bytes += len(text)
            outcome = {"policy_id": policy.pk, "policy": policy.name, "revision": 1, "decision": "allow"}
            evaluations.append(
                Evaluation(
                    deployment=deployment,
                    request_type="deploy",
                    input_json=text,
                    decision="allow",
                    outcomes=[outcome],
                    engine=settings.POLICY_ENGINE,
                )
            )
        Evaluation.objects.bulk_create(evaluations)
    setup_s = time.perf_counter() - started

    # One evaluation first, so that the figure does not include starting the engine worker.
    replay.replay_revision(draft, 1)
    timings = []
    for _ in range(arguments.runs):
        began = time.perf_counter()
        result = replay.replay_revision(draft, arguments.deployments)
        timings.append(time.perf_counter() - began)
    timings.sort()
    elapsed = timings[len(timings) // 2]
    correct = result["changed_count"] == expected_changes and result["replayed"] == arguments.deployments
    print(
        f"engine: {settings.POLICY_ENGINE}; database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
    )
    print(
        f"recorded: {arguments.deployments} deployments x {arguments.resources} resource changes "
        f"({input_bytes / arguments.deployments / 1e6:.2f} MB of input each, {input_bytes / 1e6:.0f} MB in all; "
        f"set up in {setup_s:.1f} s)"
    )
    print(
        f"replay: {elapsed:.2f} s for {result['replayed']} deployments "
        f"({1000 * elapsed / max(result['replayed'], 1):.1f} ms each; target under 30 s: "
        f"{'met' if elapsed < 30 else 'MISSED'})"
        + (f"; all runs: {', '.join(f'{t:.2f}' for t in timings)} s" if len(timings) > 1 else "")
    )
    print(
        f"changed decisions: {result['changed_count']} (expected {expected_changes}: "
        f"{'correct' if correct else 'WRONG'}); after: {result['counts']['after']}"
    )
    shutil.rmtree(workdir, ignore_errors=True)
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
