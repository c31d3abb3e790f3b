"""What a waiting pipeline's poll costs the web process, as a ratio to ``/healthz`` in one run.
Not a test: prints a table. Target (issue 17): the gate's poll at most 3x the CPU of ``/healthz``.

    .venv/bin/python bench/bench_polling.py              # 5,000 deployments, 2,000 polls per path
    .venv/bin/python bench/bench_polling.py --smoke      # a tiny database and a few polls, in seconds

Builds a database of its own (a temporary SQLite file, or the PostgreSQL of DATABASE_URL: a database
named there is created afresh as <name>_bench_polling and dropped after) holding --deployments
deployments, of which --pipelines are pending approval, each with the evaluations, approvals and pinned
policy revisions a waiting deployment has, and triggered by its own pipeline user with its own named API
token. Each request is then handed to Django's WSGI application exactly as gunicorn hands it (production
settings: DEBUG off, the real middleware, authentication and throttles), the pipelines taking turns, and
the process's CPU time per request is printed for (each path measured in turn, --rounds times, the
median kept: on a shared machine the neighbours' load then weighs on every path alike):

- ``GET /healthz`` (no database, the floor),
- the full ``GET /api/v1/deployments/{id}/`` (what the gate polled before), and the same with the
  ``If-None-Match`` of its previous answer (304 while nothing changed),
- the slim ``GET /api/v1/deployments/{id}/status/`` (what the gate polls now), and the same with
  ``If-None-Match`` (the poll of a pipeline whose deployment has not changed: the steady state).

With SQLite the database's own work is in this process and counted; with PostgreSQL the CPU of the
server process serving the connection is read from /proc and added (the server must run on this
machine, as in the production shape). The backend's CPU is counted in clock ticks (10 ms), so use
enough --polls per round with PostgreSQL.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time

import seeded

TARGET_RATIO = 3.0


def build(deployment_count: int, pipelines: int) -> list[tuple[int, str]]:
    """The world; returns (deployment id, API key) of each waiting pipeline."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from policies_app.accounts import tokens
    from policies_app.deployments import stored_inputs
    from policies_app.models import Approval, Deployment, Evaluation, ProjectMembership
    from policies_app.policies.authoring import create_policy

    User = get_user_model()
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    approvers = [User.objects.create_user(f"approver{i}", f"a{i}@example.com", "pw") for i in range(3)]
    root, projects, template = seeded.project_tree()
    for approver in approvers:
        ProjectMembership.objects.create(project=root, user=approver, role="approver")
    environments = seeded.environments(projects, template, max(pipelines, 20))
    policies = [
        create_policy(
            name=f"policy-{i}",
            modules=[
                {
                    "filename": "main.rego",
                    "source": f'package env0\n\npending contains "review {i}" if true\n',
                }
            ],
            user=admin,
        )
        for i in range(3)
    ]
    revisions = [policy.active_revision for policy in policies]
    plan = seeded.updated_instances()
    messages = {"deny": [], "pending": ["needs two approvals"], "warn": [], "allow": []}
    now = timezone.now()
    # The pipelines: each its own user (a deployer of its environment's project) and named token.
    plan_key = stored_inputs.store_plan(plan)
    waiting = []
    for n in range(pipelines):
        environment = environments[n]
        user = User.objects.create_user(f"pipeline{n}", f"p{n}@example.com", "pw")
        ProjectMembership.objects.create(project=environment.project, user=user, role="deployer")
        _, key = tokens.create_token(user, "pipeline")
        deployment = Deployment.objects.create(
            environment=environment,
            deployer=user,
            status="pending_approval",
            decision="pending",
            plan_document_id=plan_key,
            messages=messages,
            pending_since=now,
            expires_at=now,
            policies_pinned=True,
        )
        deployment.policy_revisions.set(revisions)
        for request_type in ("deploy", "deployResume"):
            evaluation = Evaluation.objects.create(
                deployment=deployment,
                request_type=request_type,
                input_json="{}",
                decision="pending",
                messages=messages,
                engine="regorus",
            )
            evaluation.policy_revisions.set(revisions)
        Approval.objects.create(deployment=deployment, user=approvers[0], decision="approve", comment="ok")
        waiting.append((deployment.pk, key))
    others = max(0, deployment_count - pipelines)
    seeded.finished_deployments(environments, admin, plan_key, others, messages)
    return waiting


def environ(path: str, key: str = "", etag: str = "") -> dict:
    query = ""
    if "?" in path:
        path, query = path.split("?", 1)
    env = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "localhost",
        "HTTP_ACCEPT": "application/json",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if key:
        env["HTTP_AUTHORIZATION"] = f"Token {key}"
    if etag:
        env["HTTP_IF_NONE_MATCH"] = etag
    return env


def call(application, env: dict) -> tuple[int, dict, bytes]:
    """One request through the WSGI application, as a server makes it."""
    answer: dict = {}

    def start_response(status: str, headers: list, exc_info=None) -> None:
        answer["status"] = int(status.split()[0])
        answer["headers"] = {name.lower(): value for name, value in headers}

    result = application(env, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close:
            close()
    return answer["status"], answer["headers"], body


def database_cpu() -> float:
    """CPU seconds the PostgreSQL backend serving this process's connection has used (0 with SQLite,
    whose work runs in this process and is counted there). The server runs on this machine, as in the
    production shape the issue measured, so its work is part of what a poll costs."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(application, requests: list[dict], expected: int) -> float:
    """CPU seconds per request: this process (Python, and SQLite's work when it is the database) and
    the PostgreSQL backend it talks to."""
    for env in requests:
        env["wsgi.input"].seek(0)
    started, database_started = time.process_time(), database_cpu()
    for env in requests:
        status, _, _ = call(application, env)
        if status != expected:
            raise SystemExit(f"{env['PATH_INFO']} answered {status}, not {expected}")
    used = time.process_time() - started + database_cpu() - database_started
    return used / len(requests)


def measure_all(application, rows: list[tuple[str, list[dict], int]], rounds: int) -> dict[str, float | None]:
    """Each path's CPU per request: the median over ``rounds`` rounds, each of which measures every path
    in turn on a slice of its requests, so that a neighbour's load on a shared machine weighs on all
    paths alike and the ratios hold."""
    present = {}
    for name, requests, expected in rows:  # warm-up: imports, connections, caches, prepared queries
        present[name] = all(call(application, env)[0] == expected for env in requests[:20])
    samples: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for round_number in range(rounds):
        for name, requests, expected in rows:
            if present[name]:
                share = requests[round_number::rounds]
                samples[name].append(measure(application, share, expected))
    return {name: statistics.median(samples[name]) if present[name] else None for name, _, _ in rows}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deployments", type=int, default=5_000)
    parser.add_argument("--pipelines", type=int, default=50, help="pending deployments polled in turn")
    parser.add_argument("--polls", type=int, default=2_000, help="requests measured per path")
    parser.add_argument("--rounds", type=int, default=10, help="each path measured in turn, this many times")
    parser.add_argument("--smoke", action="store_true", help="a tiny database and a few polls, in seconds")
    args = parser.parse_args()
    if args.smoke:
        args.deployments, args.pipelines, args.polls, args.rounds = 30, 5, 100, 4
    postgres_name = seeded.start("bench_polling")
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    started = time.perf_counter()
    waiting = build(args.deployments, args.pipelines)
    print(
        f"{connection.vendor}: {args.deployments} deployments, {args.pipelines} pipelines waiting, built in "
        f"{time.perf_counter() - started:.1f} s; {args.polls} requests per path"
    )
    application = WSGIHandler()

    def turns(path_of, etag_of=None) -> list[dict]:
        return [
            environ(
                path_of(deployment_id),
                key,
                etag_of(deployment_id, key) if etag_of else "",
            )
            for n in range(args.polls)
            for deployment_id, key in [waiting[n % len(waiting)]]
        ]

    def etag_of(path_of):
        def current(deployment_id: int, key: str) -> str:
            _, headers, _ = call(application, environ(path_of(deployment_id), key))
            return headers.get("etag", "")

        return current

    def full(pk: int) -> str:
        return f"/api/v1/deployments/{pk}/"

    def slim(pk: int) -> str:
        return f"/api/v1/deployments/{pk}/status/"

    rows = [
        ("GET /healthz", [environ("/healthz") for _ in range(args.polls)], 200),
        ("full GET (the gate's old poll)", turns(full), 200),
        ("full GET, If-None-Match", turns(full, etag_of(full)), 304),
        ("slim status", turns(slim), 200),
        ("slim status, If-None-Match (gate)", turns(slim, etag_of(slim)), 304),
    ]
    figures = measure_all(application, rows, args.rounds)
    floor = figures["GET /healthz"]
    print(f"{'request':<36} {'CPU us':>9} {'x healthz':>10}")
    for name, _, _ in rows:
        if figures[name] is None:
            print(f"{name:<36} {'absent':>9}")
            continue
        print(f"{name:<36} {figures[name] * 1e6:>9.0f} {figures[name] / floor:>9.1f}x")
    poll = figures["slim status, If-None-Match (gate)"]
    seeded.finish(postgres_name)
    if poll is None:
        print("the gate's poll (slim status with If-None-Match) is absent")
        return 1
    ratio = poll / figures["GET /healthz"]
    verdict = "within" if ratio <= TARGET_RATIO else "OVER"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"the gate's poll: {ratio:.1f}x /healthz, {verdict} the {TARGET_RATIO:g}x target")
    print(f"(load average {load} on {os.cpu_count()} cores)")
    return 0 if args.smoke or ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
