"""Behaviour that only real services can show: row locks on PostgreSQL, a Celery worker fed through Redis.

.ci/run starts PostgreSQL and Redis and points DATABASE_URL and TEST_REDIS_URL at them; elsewhere these
tests skip and say why."""

import os
import subprocess
import sys
import threading

import pytest
from django.db import connection, connections

from policies_app.deployments import approvals, lifecycle
from policies_app.errors import DomainError
from policies_app.models import Deployment, DeploymentEvent
from tests.builders import make_policy, make_user
from tests.processes import ROOT, celery_worker, platform_environment, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TWO_APPROVERS = 'package env0\n\nallow contains "two approvers" if count(input.approvers) >= 2\n'


def needs_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://... (.ci/run does)")


def approve_all_at_once(deployment: Deployment, approvers: list) -> tuple[list[str], list[BaseException]]:
    """Each approver approves from its own thread and database connection, all released together."""
    barrier = threading.Barrier(len(approvers))
    refusals: list[str] = []
    failures: list[BaseException] = []

    def approve(user):
        try:
            barrier.wait()
            approvals.record_approval(Deployment.objects.get(pk=deployment.pk), user, "approve")
        except DomainError as refusal:
            refusals.append(refusal.code)
        except BaseException as problem:  # noqa: BLE001
            failures.append(problem)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=approve, args=(user,)) for user in approvers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return refusals, failures


def test_two_approvals_at_the_same_moment_are_both_recorded_and_release_once(world):
    needs_postgresql()
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    for _ in range(5):  # the race is real: several rounds make an unlucky interleaving likely
        deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob, plan=None)
        refusals, failures = approve_all_at_once(deployment, [world.alice, world.sam])
        assert (refusals, failures) == ([], [])
        deployment.refresh_from_db()
        assert deployment.status == "approved"
        assert deployment.approvals.count() == 2
        assert DeploymentEvent.objects.filter(deployment=deployment, kind="released").count() == 1
        # Completed, so that the next round's deployment of the environment is evaluated at once.
        lifecycle.complete_deployment(deployment, world.bob, "succeeded")


def test_more_concurrent_approvals_than_needed_release_once_and_late_ones_are_refused(world):
    needs_postgresql()
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    extra = [make_user(f"approver{i}") for i in range(3)]
    for user in extra:
        world.platform.memberships.create(user=user, role="approver")
    deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob, plan=None)

    refusals, failures = approve_all_at_once(deployment, [world.alice, world.sam, *extra])

    assert failures == []
    # An approval that arrives after the release is refused as "not pending"; nothing else may refuse one.
    assert set(refusals) <= {"not_pending"}
    deployment.refresh_from_db()
    assert deployment.status == "approved"
    assert deployment.approvals.count() == 5 - len(refusals) >= 2
    assert DeploymentEvent.objects.filter(deployment=deployment, kind="released").count() == 1


@pytest.fixture
def redis_url():
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("needs a Redis server: set TEST_REDIS_URL=redis://... (.ci/run does)")
    return url


def test_a_real_celery_worker_evaluates_a_deployment_taken_from_redis(world, redis_url, tmp_path):
    needs_postgresql()
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    with celery_worker(tmp_path, redis_url):
        # The trigger runs in its own process configured like production: the broker comes from the
        # environment, so the task is published to Redis instead of running in-process.
        trigger = (
            "from policies_app.deployments import lifecycle; from policies_app.models import Environment; "
            "from django.contrib.auth.models import User; "
            f"d, _ = lifecycle.trigger_deployment(Environment.objects.get(pk={world.environment.pk}), "
            "User.objects.get(username='bob')); print(d.pk)"
        )
        published = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", trigger],
            cwd=ROOT,
            env=platform_environment(tmp_path, CELERY_BROKER_URL=redis_url),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert published.returncode == 0, published.stderr
        deployment = Deployment.objects.get(pk=int(published.stdout.split()[-1]))
        wait_until(
            lambda: Deployment.objects.get(pk=deployment.pk).status not in ("queued", "evaluating"),
            60,
            interval=0.2,
            what="the worker's verdict",
        )
        deployment.refresh_from_db()
        assert deployment.status == "pending_approval", (tmp_path / "worker.log").read_text()[-3000:]
        assert deployment.evaluations.get().engine == "regorus"
        assert "evaluate_deployment_task" in (tmp_path / "worker.log").read_text()
