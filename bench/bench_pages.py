"""How long the product's pages take to render with 10,000 deployments in the database (target: under
300 ms each). Not a test: prints a table.

    .venv/bin/python bench/bench_pages.py [--deployments 10000] [--runs 20]

Builds a database of its own (a temporary SQLite file, or the PostgreSQL of DATABASE_URL: a database
named there is created afresh as <name>_bench_pages and dropped after) with a project tree, 200
environments and --deployments deployments in every status (a fifth pending, each with an evaluation,
some with approvals), audit entries and webhook deliveries; then renders each page through Django's
test client as an approver and as an organisation admin, and prints the median and the 95th percentile
of --runs renders (after one warm-up render), with the number of queries each makes. The target is
judged on the median; the p95 is printed with the machine's load average, since on a shared machine
it mostly measures the neighbours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import seeded

TARGET_MS = 300


def build(deployment_count: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import override_settings
    from django.utils import timezone

    from policies_app.deployments.stored_inputs import store_plan
    from policies_app.models import (
        Approval,
        AuditEntry,
        Deployment,
        Evaluation,
        ProjectMembership,
        WebhookDelivery,
    )
    from policies_app.notifications import webhooks

    User = get_user_model()
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    alice = User.objects.create_user("alice", "alice@example.com", "pw")
    deployers = [User.objects.create_user(f"deployer{i}", f"d{i}@example.com", "pw") for i in range(20)]
    root, projects, template = seeded.project_tree()
    ProjectMembership.objects.create(project=root, user=alice, role="approver")
    for user in deployers:
        ProjectMembership.objects.create(project=root, user=user, role="deployer")
    environments = seeded.environments(projects, template, 200)
    statuses = ["pending_approval", "approved", "succeeded", "denied", "rejected", "superseded", "expired"]
    plan = seeded.updated_instances()
    plan_document = store_plan(plan)  # one stored plan, as identical plans share
    now = timezone.now()
    batch = [
        Deployment(
            environment=environments[n % len(environments)],
            deployer=deployers[n % len(deployers)],
            status="pending_approval" if n % 5 == 0 else statuses[n % len(statuses)],
            decision="pending",
            revision=f"rev-{n}",
            plan_document_id=plan_document,
            messages={"deny": [], "pending": ["needs two approvals"], "warn": [], "allow": []},
            pending_since=now,
        )
        for n in range(deployment_count)
    ]
    Deployment.objects.bulk_create(batch, batch_size=1000)
    deployments = list(Deployment.objects.order_by("pk").values_list("pk", flat=True))
    Evaluation.objects.bulk_create(
        [
            Evaluation(
                deployment_id=pk, request_type="deploy", input_json="{}", decision="pending", engine="regorus"
            )
            for pk in deployments
        ],
        batch_size=1000,
    )
    Approval.objects.bulk_create(
        [Approval(deployment_id=pk, user=admin, decision="approve", comment="ok") for pk in deployments[::7]],
        batch_size=1000,
    )
    # The bench sends nothing; the egress guard is told the one loopback address it names is allowed.
    with override_settings(EGRESS_ALLOWED_NETWORKS=["127.0.0.1/32"]):
        hook = webhooks.create_webhook(admin, root, name="chat", url="http://127.0.0.1:9/")
    WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(webhook=hook, deployment_id=pk, event="deployment.status_changed", body="{}")
            for pk in deployments[:5000]
        ],
        batch_size=1000,
    )
    AuditEntry.objects.bulk_append(
        [
            AuditEntry(
                actor=admin,
                action="project.changed",
                target_type="project",
                target_id=str(root.pk),
                target_repr="Platform",
                project=root,
                before={"n": i},
                after={"n": i + 1},
            )
            for i in range(10_000)
        ],
        batch_size=1000,
    )
    busy = Deployment.objects.filter(status="pending_approval").order_by("-pk").first()
    return {
        "admin": admin,
        "alice": alice,
        "deployment": busy.pk,
        "project": root.pk,
        "environment": environments[0].pk,
        "webhook": hook.pk,
    }


def measure(client, path: str, runs: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(path)  # warm-up
    assert response.status_code == 200, (path, response.status_code)
    timings = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(path)
            if hasattr(response, "streaming_content"):
                b"".join(response.streaming_content)
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p95 = timings[min(len(timings) - 1, int(len(timings) * 0.95))]
    return statistics.median(timings), p95, len(queries)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deployments", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--smoke", action="store_true", help="100 deployments, 1 render a page: proves it runs"
    )
    args = parser.parse_args()
    if args.smoke:
        args.deployments, args.runs = 100, 1
    # Debug off, as in production, needs a key for the webhooks' secrets (a throw-away database: any key).
    postgres_name = seeded.start("bench_pages", secret_keys="YmVuY2gtcGFnZXMtc2VjcmV0cy1hdC1yZXN0LWtleSE=")
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["testserver"]
    started = time.perf_counter()
    ids = build(args.deployments)
    print(
        f"{connection.vendor}: built {args.deployments} deployments in {time.perf_counter() - started:.1f} s"
    )
    pages = [
        ("alice", "queue: waiting for me", "/"),
        ("alice", "queue: all", "/?view=all"),
        ("alice", "queue: all, last page", f"/?view=all&page={args.deployments // 50}"),
        ("alice", "queue: searched and sorted", "/?view=all&q=rev-99&sort=environment"),
        ("alice", "queue: project and status", f"/?view=all&project={ids['project']}&status=approved"),
        ("alice", "deployment", f"/deployments/{ids['deployment']}/"),
        ("alice", "deployment (live part)", f"/deployments/{ids['deployment']}/live/"),
        ("alice", "environment", f"/environments/{ids['environment']}/"),
        ("alice", "projects", "/projects/"),
        ("admin", "project", f"/projects/{ids['project']}/"),
        ("admin", "webhook", f"/webhooks/{ids['webhook']}/"),
        ("admin", "audit log", "/audit/"),
        ("admin", "audit log filtered", "/audit/?action=project.&text=Plat"),
        ("alice", "API: waiting for me", "/api/v1/deployments/?view=waiting&limit=50"),
        ("alice", "API: deployments", "/api/v1/deployments/?limit=50"),
    ]
    clients = {}
    for username in ("alice", "admin"):
        clients[username] = Client()
        clients[username].force_login(ids[username])
    print(f"{'page':<32} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    worst = worst_p95 = 0.0
    for who, name, path in pages:
        median, p95, queries = measure(clients[who], path, args.runs)
        worst, worst_p95 = max(worst, median), max(worst_p95, p95)
        print(f"{name:<32} {median:>10.1f} {p95:>8.1f} {queries:>8}")
    verdict = "within" if worst < TARGET_MS else "OVER"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"slowest median {worst:.1f} ms: {verdict} the {TARGET_MS} ms target (slowest p95 {worst_p95:.1f} ms;"
    )
    print(f"load average {load} on {os.cpu_count()} cores)")
    seeded.finish(postgres_name)
    return 0 if worst < TARGET_MS or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
