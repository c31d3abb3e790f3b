"""The platform's own to-do list: an evaluation that is due but whose task was lost is sent again."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from policies_app.deployments import approvals, lifecycle, sweeps, verdicts
from policies_app.models import Deployment
from tests.builders import make_policy

pytestmark = pytest.mark.django_db

TWO_APPROVERS = 'package env0\n\nallow contains "two approvers" if count(input.approvers) >= 2\n'


def lost(world, status="queued", minutes_ago=5, started=None, **fields) -> Deployment:
    """A deployment whose evaluation task never reached a worker."""
    long_ago = timezone.now() - timedelta(minutes=minutes_ago)
    return Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status=status,
        evaluation_due_at=long_ago,
        evaluation_enqueued_at=long_ago,
        evaluation_started_at=started,
        **fields,
    )


def test_a_queued_deployment_whose_task_was_lost_is_evaluated_by_the_sweeper(
    world, django_capture_on_commit_callbacks
):
    deployment = lost(world)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweeps.resend_lost_evaluations() == [deployment.pk]
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval"
    assert deployment.evaluation_due_at is None
    assert deployment.pending_since is not None


def test_a_recently_sent_or_running_evaluation_is_left_alone(world):
    lost(world, minutes_ago=0)
    lost(world, status="evaluating", started=timezone.now())
    assert sweeps.resend_lost_evaluations() == []


def test_only_waiting_deployments_with_an_evaluation_due_are_sent_again_and_each_once(world):
    lost(world, status="approved")
    lost(world, status="cancelled")
    waiting_for_a_person = lost(world, status="pending_approval")
    Deployment.objects.filter(pk=waiting_for_a_person.pk).update(evaluation_due_at=None)
    due = lost(world, status="pending_approval")
    assert sweeps.resend_lost_evaluations() == [due.pk]
    # Sent again just now: the next sweep leaves it to the worker.
    assert sweeps.resend_lost_evaluations() == []


@override_settings(EVALUATION_LEASE_SECONDS=60)
def test_an_evaluation_held_past_its_lease_is_sent_again(world):
    stuck = lost(world, status="evaluating", minutes_ago=10, started=timezone.now() - timedelta(minutes=9))
    assert sweeps.resend_lost_evaluations() == [stuck.pk]


def test_an_approval_whose_reevaluation_was_lost_releases_the_deployment_without_approving_again(
    world, django_capture_on_commit_callbacks
):
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)
    # Two approvals whose re-evaluations never reach a worker (their on-commit sends are dropped).
    with django_capture_on_commit_callbacks(execute=False):
        approvals.record_approval(deployment, world.alice, "approve")
        approvals.record_approval(deployment, world.sam, "approve")
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval" and deployment.evaluation_due_at is not None
    Deployment.objects.filter(pk=deployment.pk).update(
        evaluation_enqueued_at=timezone.now() - timedelta(minutes=5)
    )
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_periodic", "--once")
    deployment.refresh_from_db()
    assert deployment.status == "approved"


def test_a_duplicate_task_for_work_already_done_changes_nothing(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)
    verdicts.evaluate_deployment(deployment.pk, resume=True)
    verdicts.evaluate_deployment(deployment.pk)
    assert deployment.evaluations.count() == 1


def test_cancel_works_while_a_deployment_is_evaluating(world, api):
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="evaluating"
    )
    response = api(world.bob).post(f"/api/v1/deployments/{deployment.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"


def test_the_periodic_command_runs_every_scheduled_task_in_a_fresh_process(tmp_path):
    """As bin/run-platform starts it: a process of its own, where no task was imported before."""
    import subprocess
    import sys

    from tests.processes import ROOT

    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PLATFORM_VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    for command in (["migrate", "-v0"], ["run_periodic", "--once"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    assert "failed" not in done.stderr and "NotRegistered" not in done.stderr, done.stderr[-2000:]
