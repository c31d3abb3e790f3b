"""What the benches that build a database of their own share (bench_polling.py, bench_pages.py,
bench_approve.py, bench_decision_path.py, bench_first_trigger.py): a database of the bench's own (a temporary SQLite file, or ``<name>_<bench>`` beside
the PostgreSQL of DATABASE_URL, created afresh and dropped after), Django started with production
settings, and the usual seeds: a project tree with environments, and a plan of updated instances.

Not a bench itself (its name does not start with ``bench_``): tests/ops/test_benches.py runs the benches.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(bench: str, *, secret_keys: str = "") -> str | None:
    """Point Django at a database of ``bench``'s own, set up Django (debug off, as in production),
    create that database afresh and migrate it. Returns the PostgreSQL database's name (to drop after
    with ``finish``), None with SQLite."""
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    scratch = Path(tempfile.mkdtemp(prefix=f"{bench}-"))
    os.environ["PLATFORM_VAR_DIR"] = str(scratch)
    url = os.environ.get("DATABASE_URL", "")
    postgres_name = None
    if url.startswith("postgres"):
        base, _, name = url.rpartition("/")
        postgres_name = f"{name or 'platform'}_{bench}"
        os.environ["DATABASE_URL"] = f"{base}/{postgres_name}"
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "policy_platform.settings")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench")
    os.environ.setdefault("SECRET_ENCRYPTION_KEYS", secret_keys)
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    import logging

    logging.getLogger("django.request").setLevel(logging.ERROR)
    from django.core.management import call_command

    if postgres_name:
        _run_outside(f'DROP DATABASE IF EXISTS "{postgres_name}"', f'CREATE DATABASE "{postgres_name}"')
    call_command("migrate", verbosity=0)
    return postgres_name


def finish(postgres_name: str | None) -> None:
    """Drop the bench's PostgreSQL database (if any) and remove its scratch directory."""
    from django.db import connection

    connection.close()
    if postgres_name:
        _run_outside(f'DROP DATABASE IF EXISTS "{postgres_name}"')
    shutil.rmtree(os.environ["PLATFORM_VAR_DIR"], ignore_errors=True)


def _run_outside(*statements: str) -> None:
    from django.db import connections

    with connections["default"]._nodb_cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def project_tree(teams: int = 10):
    """A root project ("Platform") with ``teams`` projects under it, each with a child: returns the
    root, the 2 x ``teams`` projects under it and a template."""
    from policies_app.models import Project, Template

    root = Project.objects.create(name="Platform")
    template = Template.objects.create(name="network", type="terraform", revision="main")
    projects = []
    for p in range(teams):
        parent = Project.objects.create(name=f"team-{p}", parent=root)
        projects += [parent, Project.objects.create(name=f"team-{p}-eu", parent=parent)]
    return root, projects, template


def environments(projects: list, template, count: int) -> list:
    from policies_app.models import Environment

    return [
        Environment.objects.create(name=f"env-{e}", project=projects[e % len(projects)], template=template)
        for e in range(count)
    ]


def updated_instances(count: int = 30) -> dict:
    """A plan updating ``count`` instances (one size to another)."""
    return {
        "format_version": "1.2",
        "resource_changes": [
            {
                "address": f"aws_instance.web[{i}]",
                "mode": "managed",
                "type": "aws_instance",
                "name": "web",
                "change": {
                    "actions": ["update"],
                    "before": {"size": "s", "i": i},
                    "after": {"size": "m", "i": i},
                },
            }
            for i in range(count)
        ],
    }


def finished_deployments(environments: list, deployer, plan_key: str, count: int, messages: dict) -> None:
    """``count`` succeeded deployments spread over ``environments``, all of one stored plan: the history
    an organisation's tables hold beside what a bench measures."""
    from policies_app.models import Deployment

    Deployment.objects.bulk_create(
        [
            Deployment(
                environment=environments[n % len(environments)],
                deployer=deployer,
                status="succeeded",
                decision="allow",
                plan_document_id=plan_key,
                messages=messages,
            )
            for n in range(count)
        ],
        batch_size=1000,
    )
