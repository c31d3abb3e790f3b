"""A deployment's life through the API and what it costs each process: trigger (evaluated: two
approvals needed), the first approval, the second (approve -> released: from the request to the decision
stored), completion. Not a test: prints a table. Target (issue 17): approve -> released p50 under 100 ms.

    .venv/bin/python bench/bench_approve.py                 # 20,000 deployments, 30 lives
    .venv/bin/python bench/bench_approve.py --smoke         # a tiny database and 2 lives, in seconds

Builds a database of its own (bench/seeded.py: a temporary SQLite file, or ``<name>_bench_approve``
beside the PostgreSQL of DATABASE_URL) with --deployments finished deployments behind the ones measured.
Each request is handed to Django's WSGI application as gunicorn hands it (production settings). Without a
broker the evaluation task runs in this process at commit (CELERY_TASK_ALWAYS_EAGER), so its CPU is
measured between Celery's task signals and counted as the worker's; the rest of this process's CPU is
the web's; with PostgreSQL the CPU of the server process serving the connection is read from /proc as
the database's (the server on this machine). With SQLite the database's work is inside the web's and
the worker's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import seeded
from bench_polling import call, database_cpu, environ

TARGET_MS = 100
TWO_APPROVERS = """package env0

pending contains "needs two approvals" if count(input.approvers) < 2
allow contains "approved" if count(input.approvers) >= 2
"""


def build(deployment_count: int) -> dict:
    from django.contrib.auth import get_user_model

    from policies_app.accounts import tokens
    from policies_app.deployments.stored_inputs import store_plan
    from policies_app.models import ProjectMembership
    from policies_app.policies.authoring import create_policy

    User = get_user_model()
    root, projects, template = seeded.project_tree()
    environments = seeded.environments(projects, template, 40)
    policy = create_policy(
        name="two approvers", modules=[{"filename": "main.rego", "source": TWO_APPROVERS}], user=None
    )
    root.approval_policies.add(policy)
    keys = {}
    for name, role in (("pipeline", "deployer"), ("alice", "approver"), ("carol", "approver")):
        user = User.objects.create_user(name, f"{name}@example.com", "pw")
        ProjectMembership.objects.create(project=root, user=user, role=role)
        keys[name] = tokens.create_token(user, "bench")[1]
    plan_key = store_plan(seeded.updated_instances())
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    seeded.finished_deployments(
        environments,
        admin,
        plan_key,
        deployment_count,
        {"deny": [], "pending": [], "warn": [], "allow": ["approved"]},
    )
    return {"keys": keys, "environments": [environment.pk for environment in environments]}


def post(path: str, key: str, body: dict) -> dict:
    import io

    raw = json.dumps(body).encode()
    env = environ(path, key)
    env.update(
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(raw)),
        **{"wsgi.input": io.BytesIO(raw)},
    )
    return env


class Clock:
    """CPU of the web (this process less the tasks), the worker (the tasks, run here at commit) and the
    database (PostgreSQL's backend), and wall time."""

    def __init__(self) -> None:
        from celery.signals import task_postrun, task_prerun

        self.worker = 0.0
        self._started = 0.0
        task_prerun.connect(self._task_started, weak=False)
        task_postrun.connect(self._task_ended, weak=False)

    def _task_started(self, **_) -> None:
        self._started = time.process_time()

    def _task_ended(self, **_) -> None:
        self.worker += time.process_time() - self._started

    def read(self) -> tuple[float, float, float, float]:
        return time.perf_counter(), time.process_time(), self.worker, database_cpu()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deployments", type=int, default=20_000)
    parser.add_argument("--lives", type=int, default=30, help="deployments taken through their life")
    parser.add_argument("--smoke", action="store_true", help="a tiny database and 2 lives, in seconds")
    args = parser.parse_args()
    if args.smoke:
        args.deployments, args.lives = 50, 2
    postgres_name = seeded.start("bench_approve")
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    from policies_app.choices import RELEASED_STATUSES
    from policies_app.models import Deployment

    started = time.perf_counter()
    world = build(args.deployments)
    print(
        f"{connection.vendor}: {args.deployments} deployments, built in {time.perf_counter() - started:.1f} s"
    )
    application = WSGIHandler()
    clock = Clock()
    keys = world["keys"]
    steps = ("trigger", "first approval", "second approval (approve -> released)", "completion")
    spent: dict[str, list[tuple[float, float, float, float]]] = {step: [] for step in steps}
    plan = seeded.updated_instances()
    for life in range(args.lives + 1):  # the first life warms up: imports, connections, compiled queries
        environment = world["environments"][life % len(world["environments"])]
        requests = [
            (
                "trigger",
                post(
                    f"/api/v1/environments/{environment}/deployments/",
                    keys["pipeline"],
                    {"type": "deploy", "trigger_name": "cd", "plan": plan},
                ),
            ),
        ]
        before = clock.read()
        status, _, body = call(application, requests[0][1])
        assert status == 201, body
        deployment_id = json.loads(body)["id"]
        after = clock.read()
        marks = [("trigger", before, after)]
        assert Deployment.objects.get(pk=deployment_id).status == "pending_approval"
        for step, who, path, payload in (
            ("first approval", "alice", "approve", {"comment": "ok"}),
            ("second approval (approve -> released)", "carol", "approve", {"comment": "ok"}),
            ("completion", "pipeline", "complete", {"status": "succeeded", "state": None}),
        ):
            before = clock.read()
            status, _, body = call(
                application, post(f"/api/v1/deployments/{deployment_id}/{path}/", keys[who], payload)
            )
            assert status == 200, (step, status, body)
            after = clock.read()
            marks.append((step, before, after))
            if path == "approve" and who == "carol":
                # The decision stored: read from the database, as the pipeline's next poll would.
                assert Deployment.objects.get(pk=deployment_id).status in RELEASED_STATUSES
        if life:
            for step, before, after in marks:
                wall, cpu, worker, database = (a - b for a, b in zip(after, before, strict=True))
                spent[step].append((wall, cpu - worker, worker, database))
    print(
        f"{'step (median of ' + str(args.lives) + ')':<40} {'wall ms':>8} {'web ms':>7} {'worker ms':>9} {'db ms':>6}"
    )
    totals = [0.0, 0.0, 0.0, 0.0]
    for step in steps:
        medians = [statistics.median(sample[i] for sample in spent[step]) * 1000 for i in range(4)]
        totals = [t + m for t, m in zip(totals, medians, strict=True)]
        print(f"{step:<40} {medians[0]:>8.1f} {medians[1]:>7.1f} {medians[2]:>9.1f} {medians[3]:>6.1f}")
    print(
        f"{'one deployment life':<40} {totals[0]:>8.1f} {totals[1]:>7.1f} {totals[2]:>9.1f} {totals[3]:>6.1f}"
    )
    released = statistics.median(sample[0] for sample in spent[steps[2]]) * 1000
    verdict = "within" if released < TARGET_MS else "OVER"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"approve -> released p50 {released:.1f} ms: {verdict} the {TARGET_MS} ms target")
    print(f"(load average {load} on {os.cpu_count()} cores)")
    seeded.finish(postgres_name)
    return 0 if args.smoke or released < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
