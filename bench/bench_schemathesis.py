"""Schemathesis against the production shape: every operation of /api/schema/, signed in as the demo's
organisation admin, requests that fit the schema and requests that do not, sent over HTTP to gunicorn
(debug off) on PostgreSQL. Prints the requests sent by status class and every server error (the target
is none: issue 6, "Proof").

    DATABASE_URL=postgres://postgres@127.0.0.1:55433/fuzz_bench .venv/bin/python bench/bench_schemathesis.py \
        [--examples 100] [--seed N] [--operations REGEX]

The database is created if missing, migrated and given the demo (manage.py load_demo); what the run
writes stays there (drop the database to start afresh). The bench tests/http_api/test_schemathesis.py bounds in
the suite is the same run with a few examples per operation.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--examples", type=int, default=100, help="requests per operation")
    parser.add_argument("--seed", type=int, default=None, help="repeat a run (default: new requests)")
    parser.add_argument("--operations", default="", help="only operations matching this regular expression")
    parser.add_argument(
        "--smoke", action="store_true", help="one example of each deployment operation: proves it runs"
    )
    args = parser.parse_args()
    if args.smoke:
        args.examples, args.operations = 1, args.operations or "deployments"
    if not args.database_url.startswith("postgres"):
        raise SystemExit("Set DATABASE_URL (or --database-url) to a PostgreSQL database of the bench's own.")

    import psycopg

    name = args.database_url.rsplit("/", 1)[1]
    with psycopg.connect(args.database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')
    work = ROOT / "bench" / "out" / "schemathesis"
    work.mkdir(parents=True, exist_ok=True)
    os.environ |= {
        "DATABASE_URL": args.database_url,
        "DJANGO_SETTINGS_MODULE": "policy_platform.settings",
        "PLATFORM_VAR_DIR": str(work),
        "DJANGO_SECRET_KEY": "bench-schemathesis-secret",
        # Debug off, as in production, needs a key for the secrets it stores (the bench's own database).
        "SECRET_ENCRYPTION_KEYS": os.environ.get(
            "SECRET_ENCRYPTION_KEYS", "YmVuY2gtZnV6ei1zZWNyZXRzLWF0LXJlc3Qta2V5ISE="
        ),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        # The run is one user sending thousands of requests: production's per-user rate would answer
        # most of them 429 and leave the operations untested.
        "API_THROTTLE_USER": "1000000/minute",
        "API_THROTTLE_DRY_RUN": "1000000/minute",
    }
    import django

    django.setup()
    import schemathesis
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from policies_app.models import ApprovalPolicy, Deployment, Environment, Project, Team, Template
    from tests.builders import api_key_for
    from tests.http_api.api_fuzzing import fuzz
    from tests.processes import free_port, wait_until

    call_command("migrate", "--noinput", verbosity=0)
    call_command("load_demo", stdout=open(os.devnull, "w"))
    token = api_key_for(User.objects.get(username="admin"))
    known_ids = {
        "projects": list(Project.objects.values_list("pk", flat=True)[:3]),
        "templates": list(Template.objects.values_list("pk", flat=True)[:2]),
        "environments": list(Environment.objects.values_list("pk", flat=True)[:2]),
        "policies": list(ApprovalPolicy.objects.values_list("pk", flat=True)[:2]),
        "teams": list(Team.objects.values_list("pk", flat=True)[:2]),
        "deployments": list(Deployment.objects.values_list("pk", flat=True)[:3]),
    }

    port = free_port()
    log = open(work / "gunicorn.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "platform/gunicorn.conf.py", "policy_platform.wsgi"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_DEBUG": "false", "HOST": "127.0.0.1", "PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Token {token}"}
    try:
        import urllib.request

        def up() -> bool:
            try:
                return urllib.request.urlopen(f"{base}/healthz", timeout=1).status == 200
            except OSError:
                return False

        wait_until(up, 60, what="gunicorn answering")
        schema = schemathesis.openapi.from_url(f"{base}/api/schema/?format=json", headers=headers)
        started = time.perf_counter()
        report = fuzz(
            schema,
            lambda case: case.call(base_url=base, headers=headers, timeout=60),
            examples=args.examples,
            known_ids=known_ids,
            seed=args.seed,
            operations=lambda label: re.search(args.operations, label) is not None,
        )
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    operations = sum(
        1 for result in schema.get_all_operations() if re.search(args.operations, result.ok().label)
    )
    print(f"schemathesis {schemathesis.__version__ if hasattr(schemathesis, '__version__') else ''}".strip())
    print(f"{operations} operations, {args.examples} examples each: {report.summary()} in {elapsed:.0f} s")
    print(f"statuses: {dict(sorted(report.statuses.items()))}")
    print(f"server errors: {len(report.server_errors)} (target 0)")
    for error in report.server_errors:
        print(f"  {error.operation}: {error.status} {error.body[:300]!r}\n    {error.reproduce}")
    if report.server_errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
