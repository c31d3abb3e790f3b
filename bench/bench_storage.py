"""Database growth over one deployment's life with a large plan, as a ratio to the plan's JSON size (not a
test; prints its figures).

    .venv/bin/python bench/bench_storage.py [--resources 10000] [--smoke]

Builds a throw-away database (SQLite in a temporary folder, measured as its file; with DATABASE_URL set to
PostgreSQL, that database, measured with pg_database_size: give it a database of its own), the tests'
world (tests/builders.py) and a policy that waits for two approvers. Then one deployment lives through
the platform's own use cases: triggered with a plan of ``--resources`` resource changes, evaluated
(pending), approved by two approvers (two more evaluations, the second releasing it), completed. The
growth of the database over that life is divided by the plan's JSON size. Target: at most 0.1x.

Only use cases every version of the platform has are called, so the same file measures an older
checkout (the "before" figure). ``--smoke`` runs it with 50 resources in seconds, to prove it still runs
(tests/ops/test_benches.py); its ratio is not a figure (fixed costs dominate a small plan).
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

TARGET_RATIO = 0.1
TWO_APPROVERS = """package env0

allow contains "two approvers approved" if count(input.approvers) >= 2
pending contains "waiting for two approvers" if count(input.approvers) < 2
"""


def make_plan(resources: int) -> dict:
    from bench.bench_replay import resource_change

    rng = random.Random(17)
    return {
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "resource_changes": [resource_change(index, rng) for index in range(resources)],
        "configuration": {"root_module": {}},
    }


def database_size() -> int:
    """Bytes the database takes: the SQLite file (its write-ahead log checkpointed into it first), or
    PostgreSQL's own figure for the database."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_database_size(current_database())")
            return int(cursor.fetchone()[0])
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    name = Path(connection.settings_dict["NAME"])
    return sum(path.stat().st_size for path in (name, Path(f"{name}-wal")) if path.exists())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true", help="50 resources, seconds: proves it runs")
    arguments = parser.parse_args()
    resources = 50 if arguments.smoke else arguments.resources

    workdir = tempfile.mkdtemp(prefix="bench-storage-")
    os.environ["PLATFORM_VAR_DIR"] = workdir
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir}/bench.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "policy_platform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.pop("CELERY_BROKER_URL", None)  # evaluations run in this process, as they are triggered
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from policies_app.deployments import approvals, lifecycle
    from policies_app.models import Deployment
    from tests.builders import World, make_policy

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # approval emails kept quiet
    call_command("migrate", verbosity=0)
    world = World.create()
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    plan = make_plan(resources)
    plan_bytes = len(json.dumps(plan, separators=(",", ":")))
    # A first deployment of another plan, so that the measured one finds the tables and indexes started.
    warm, _ = lifecycle.trigger_deployment(world.environment, world.bob, plan=make_plan(2))
    approvals.cancel_deployment(Deployment.objects.get(pk=warm.pk), world.bob)

    before = database_size()
    timings = {}
    began = time.perf_counter()
    deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob, plan=plan)
    timings["trigger + evaluation"] = time.perf_counter() - began
    statuses = [Deployment.objects.get(pk=deployment.pk).status]
    for approver in (world.alice, world.sam):
        began = time.perf_counter()
        approvals.record_approval(Deployment.objects.get(pk=deployment.pk), approver, "approve")
        timings[f"approval by {approver.username} + evaluation"] = time.perf_counter() - began
        statuses.append(Deployment.objects.get(pk=deployment.pk).status)
    lifecycle.complete_deployment(Deployment.objects.get(pk=deployment.pk), world.bob, "succeeded")
    statuses.append(Deployment.objects.get(pk=deployment.pk).status)
    grown = database_size() - before
    ratio = grown / plan_bytes

    expected = ["pending_approval", "pending_approval", "approved", "succeeded"]
    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    print(f"plan: {resources} resource changes, {plan_bytes / 1e6:.2f} MB of JSON")
    print(f"life: {' -> '.join(statuses)} ({deployment.evaluations.count()} evaluations)")
    print("; ".join(f"{step}: {seconds * 1000:.0f} ms" for step, seconds in timings.items()))
    print(
        f"database growth: {grown / 1e6:.3f} MB = {ratio:.3f}x the plan"
        + (
            ""
            if arguments.smoke
            else f" (target at most {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'})"
        )
    )
    stored = stored_plan_bytes(deployment.pk)
    if stored is not None:
        print(f"the plan as stored: {stored / 1e3:.0f} kB compressed = {stored / plan_bytes:.3f}x its JSON")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0 if statuses == expected else 1


def stored_plan_bytes(deployment_id: int) -> int | None:
    """The compressed size of the deployment's stored plan (None on a checkout that stores plans inline)."""
    from policies_app import models

    if not hasattr(models, "StoredDocument"):
        return None
    key = models.Deployment.objects.filter(pk=deployment_id).values_list("plan_document_id", flat=True)[0]
    return len(models.StoredDocument.objects.get(key=key).body)


if __name__ == "__main__":
    sys.exit(main())
