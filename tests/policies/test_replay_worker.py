"""A replay taken from Redis by a real Celery worker (the production shape): it records its progress and
its result with the draft. Needs PostgreSQL and Redis (.ci/run provides both); skips elsewhere."""

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from policies_app.models import PolicyReplay
from policies_app.policies.authoring import revise_policy
from tests.builders import make_policy
from tests.policies.test_replay import ACTIVE, DRAFT, recorded
from tests.processes import ROOT, celery_worker, platform_environment

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_celery_worker_runs_a_replay_taken_from_redis_and_keeps_its_result(world, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://... (.ci/run does)")
    broker = os.environ.get("TEST_REDIS_URL")
    if not broker:
        pytest.skip("needs a Redis server: set TEST_REDIS_URL=redis://... (.ci/run does)")
    policy = make_policy("cost", ACTIVE)
    world.platform.approval_policies.add(policy)
    recorded(policy, world.environment, world.bob, list(range(120)))
    draft = revise_policy(policy, modules=[{"filename": "main.rego", "source": DRAFT}], draft=True)
    with celery_worker(tmp_path, broker):
        start = (
            "from policies_app.policies.replay import start_replay; from policies_app.models import ApprovalPolicy; "
            f"print(start_replay(ApprovalPolicy.objects.get(pk={policy.pk}), user=None, "
            f"revision_number={draft.number}, limit=100).pk)"
        )
        published = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", start],
            cwd=ROOT,
            env=platform_environment(tmp_path, CELERY_BROKER_URL=broker),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert published.returncode == 0, published.stderr
        replay = PolicyReplay.objects.get(pk=int(published.stdout.split()[-1]))
        deadline = time.monotonic() + 60
        while replay.status in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.2)
            replay.refresh_from_db()
    log = (tmp_path / "worker.log").read_text()
    assert replay.status == "done", log[-3000:]
    assert "replay_task" in log
    assert (replay.replayed, replay.total, replay.result["replayed"]) == (100, 100, 100)
    # The 100 most recent are diffs 20..119: the draft makes 101..119 pending (19), the rest stay allowed.
    assert replay.result["changed_count"] == 19
    assert replay.revision_id == draft.pk
