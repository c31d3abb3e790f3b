"""One environment, one line: newer deployments supersede older waiting ones, a newer one waits queued
behind a released one that has not completed, waiting deployments expire, and only the deployer or a
project admin cancels. Through the use cases, with the evaluations run on commit as in production."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from policies_app.deployments import approvals, lifecycle, sweeps, verdicts
from policies_app.errors import Conflict, Forbidden, Invalid
from policies_app.models import AuditEntry, Deployment
from policies_app.projects import projects

pytestmark = pytest.mark.django_db


def trigger(run, world, **fields):
    deployment, _ = run(lifecycle.trigger_deployment, world.environment, world.bob, **fields)
    deployment.refresh_from_db()
    return deployment


def test_a_newer_deployment_supersedes_the_older_waiting_one_and_links_to_it(gated, run):
    older = trigger(run, gated, revision="a")
    assert older.status == "pending_approval"
    newer = trigger(run, gated, revision="b")
    older.refresh_from_db()
    assert (older.status, older.superseded_by_id) == ("superseded", newer.pk)
    assert older.events.filter(kind="superseded", detail__contains=f"#{newer.pk}").exists()
    assert newer.status == "pending_approval"


def test_a_superseded_deployment_can_no_longer_be_approved(gated, run):
    older = trigger(run, gated)
    trigger(run, gated)
    with pytest.raises(Conflict):
        approvals.record_approval(older, gated.alice, "approve")


def test_repeating_a_request_with_its_idempotency_key_supersedes_nothing(gated, run):
    first = trigger(run, gated, idempotency_key="k")
    again = trigger(run, gated, idempotency_key="k")
    first.refresh_from_db()
    assert again.pk == first.pk and first.status == "pending_approval"


def test_deployments_of_other_environments_are_not_superseded(gated, run):
    from policies_app.models import Environment

    other = Environment.objects.create(name="staging", project=gated.payments_eu, template=gated.template)
    waiting = trigger(run, gated)
    run(lifecycle.trigger_deployment, other, gated.bob)
    waiting.refresh_from_db()
    assert waiting.status == "pending_approval"


def test_a_newer_deployment_waits_queued_behind_an_unfinished_release_and_says_why(gated, run):
    released = trigger(run, gated)
    run(approvals.record_approval, released, gated.alice, "approve")
    released.refresh_from_db()
    assert released.status == "approved"

    newer = trigger(run, gated)
    assert newer.status == "queued"
    assert newer.queued_behind_id == released.pk
    assert newer.evaluation_due_at is None and not newer.evaluations.exists()
    assert newer.events.filter(kind="queued_behind", detail__contains=f"#{released.pk}").exists()
    released.refresh_from_db()
    assert released.status == "approved", "a released deployment is never superseded"
    # Nothing resends an evaluation for it meanwhile.
    assert newer.pk not in sweeps.resend_lost_evaluations()


@pytest.mark.parametrize("how", ["succeeded", "failed", "cancelled"])
def test_the_queued_deployment_is_evaluated_once_the_release_completes_fails_or_is_cancelled(gated, run, how):
    released = trigger(run, gated)
    run(approvals.record_approval, released, gated.alice, "approve")
    newer = trigger(run, gated)
    if how == "cancelled":
        run(approvals.cancel_deployment, released, gated.bob)
    else:
        run(lifecycle.complete_deployment, released, gated.bob, how)
    newer.refresh_from_db()
    assert newer.status == "pending_approval"
    assert newer.queued_behind_id is None
    assert newer.events.filter(kind="started").exists()


def test_a_newer_deployment_supersedes_an_older_one_queued_behind_a_release(world, run):
    # Automatic approval: whatever is evaluated is released at once, so a queued deployment left in line
    # would be released beside the newer one, with its outdated plan.
    world.environment.approve_plans_automatically = True
    world.environment.save()
    released = trigger(run, world, revision="a")
    assert released.status == "approved"
    older = trigger(run, world, revision="b")
    assert older.status == "queued"
    newer = trigger(run, world, revision="c")
    older.refresh_from_db()
    assert (older.status, older.superseded_by_id) == ("superseded", newer.pk)
    assert (newer.status, newer.queued_behind_id) == ("queued", released.pk)

    run(lifecycle.complete_deployment, released, world.bob, "succeeded")
    statuses = dict(
        Deployment.objects.filter(environment=world.environment).values_list("revision", "status")
    )
    assert statuses == {"a": "succeeded", "b": "superseded", "c": "approved"}


def test_the_sweep_starts_a_held_deployment_whose_release_ended_without_starting_it(gated, run):
    released = trigger(run, gated)
    run(approvals.record_approval, released, gated.alice, "approve")
    newer = trigger(run, gated)
    # The release ends by a path that did not start the next (e.g. a status written by hand).
    Deployment.objects.filter(pk=released.pk).update(status="succeeded")
    result = run(sweeps.sweep_waiting_deployments)
    assert result["started"] == [newer.pk]
    newer.refresh_from_db()
    assert newer.status == "pending_approval"


def test_a_held_deployment_is_not_evaluated_by_a_stray_task(gated, run):
    released = trigger(run, gated)
    run(approvals.record_approval, released, gated.alice, "approve")
    newer = trigger(run, gated)
    verdicts.evaluate_deployment(newer.pk)
    newer.refresh_from_db()
    assert newer.status == "queued"


def test_a_resume_that_fails_is_recorded_as_a_failed_resume_and_releases_nothing(gated, run, monkeypatch):
    waiting = trigger(run, gated)

    def broken_judge(*args, **kwargs):
        raise RuntimeError("the template could not be read")

    monkeypatch.setattr(verdicts, "judge", broken_judge)
    run(approvals.record_approval, waiting, gated.alice, "approve")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision, waiting.released_at) == ("error", "error", None)
    assert waiting.error == "The evaluation failed: RuntimeError: the template could not be read"
    failed = waiting.evaluations.order_by("-id").first()
    assert (failed.request_type, failed.decision, failed.engine) == ("deployResume", "error", "none")
    assert waiting.events.filter(kind="error", detail=waiting.error).exists()


@override_settings(DEPLOYMENT_PENDING_EXPIRY_HOURS=5)
def test_a_waiting_deployment_expires_after_the_default_time(gated, run):
    waiting = trigger(run, gated)
    assert waiting.expires_at == waiting.pending_since + timedelta(hours=5)
    assert run(sweeps.sweep_waiting_deployments, timezone.now() + timedelta(hours=4))["expired"] == []
    swept = run(sweeps.sweep_waiting_deployments, timezone.now() + timedelta(hours=6))
    assert swept["expired"] == [waiting.pk]
    waiting.refresh_from_db()
    assert waiting.status == "expired"
    assert waiting.events.filter(kind="expired").exists()
    with pytest.raises(Conflict):
        approvals.record_approval(waiting, gated.alice, "approve")


def test_the_expiry_is_inherited_from_the_nearest_project_that_sets_one(gated, run):
    projects.update_project(gated.admin, gated.platform, pending_expiry_hours=48)
    projects.update_project(gated.admin, gated.payments, pending_expiry_hours=2)
    waiting = trigger(run, gated)
    assert waiting.expires_at == waiting.pending_since + timedelta(hours=2)
    assert AuditEntry.objects.filter(action="project.changed", after__pending_expiry_hours=2).exists()


def test_an_expiry_must_be_a_positive_whole_number_of_hours(gated):
    with pytest.raises(Invalid) as refused:
        projects.update_project(gated.admin, gated.payments, pending_expiry_hours=0)
    assert "pending_expiry_hours" in refused.value.errors


def test_an_approver_may_not_cancel_someone_elses_deployment(gated, run):
    waiting = trigger(run, gated)
    with pytest.raises(Forbidden) as refused:
        approvals.cancel_deployment(waiting, gated.alice)
    assert refused.value.code == "not_own_deployment"
    waiting.refresh_from_db()
    assert waiting.status == "pending_approval"


def test_the_deployer_and_a_project_admin_may_cancel(gated, run):
    from policies_app.models import ProjectMembership
    from tests.builders import make_user

    first = trigger(run, gated)
    run(approvals.cancel_deployment, first, gated.bob)
    assert Deployment.objects.get(pk=first.pk).status == "cancelled"
    assert AuditEntry.objects.filter(action="deployment.cancelled", actor=gated.bob).exists()

    pat = make_user("pat")
    ProjectMembership.objects.create(project=gated.payments, user=pat, role="admin")
    second = trigger(run, gated)
    run(approvals.cancel_deployment, second, pat)
    assert Deployment.objects.get(pk=second.pk).status == "cancelled"


def test_a_completed_deployment_cannot_be_cancelled(gated, run):
    released = trigger(run, gated)
    run(approvals.record_approval, released, gated.alice, "approve")
    run(lifecycle.complete_deployment, released, gated.bob, "succeeded")
    with pytest.raises(Conflict):
        approvals.cancel_deployment(released, gated.bob)


def test_a_cancel_says_who_and_from_what_clears_due_work_and_a_second_one_is_a_conflict(gated, run):
    waiting = trigger(run, gated)
    run(approvals.cancel_deployment, waiting, gated.bob)
    assert waiting.events.get(kind="cancelled").actor == gated.bob
    assert AuditEntry.objects.get(action="deployment.cancelled").before == {"status": "pending_approval"}
    with pytest.raises(Conflict) as refused:
        approvals.cancel_deployment(waiting, gated.bob)
    assert refused.value.code == "not_pending"
    assert refused.value.message.startswith("The deployment is cancelled; only ")
    queued = Deployment.objects.create(
        environment=gated.environment, deployer=gated.bob, status="queued", evaluation_due_at=timezone.now()
    )
    run(approvals.cancel_deployment, queued, gated.bob)
    queued.refresh_from_db()
    assert (queued.status, queued.evaluation_due_at) == ("cancelled", None)


@override_settings(DEPLOYMENT_PENDING_EXPIRY_HOURS=5)
def test_an_expired_deployment_says_how_long_it_waited_and_owes_no_evaluation(gated, run):
    waiting = trigger(run, gated)
    # An approval's re-evaluation is still due when the deployment expires.
    Deployment.objects.filter(pk=waiting.pk).update(evaluation_due_at=timezone.now())
    run(sweeps.sweep_waiting_deployments, waiting.pending_since + timedelta(hours=6))
    waiting.refresh_from_db()
    assert (waiting.status, waiting.evaluation_due_at) == ("expired", None)
    assert waiting.events.get(kind="expired").detail == "Nobody approved or rejected it within 6.0 hours."


def test_the_sweep_starts_the_held_deployments_of_every_environment(gated, run):
    from policies_app.models import Environment

    other = Environment.objects.create(name="staging", project=gated.payments_eu, template=gated.template)
    held = []
    for environment in (gated.environment, other):
        released, _ = run(lifecycle.trigger_deployment, environment, gated.bob)
        run(approvals.record_approval, released, gated.alice, "approve")
        newer, _ = run(lifecycle.trigger_deployment, environment, gated.bob)
        held.append(newer.pk)
        # The release ends by a path that did not start the next.
        Deployment.objects.filter(pk=released.pk).update(status="succeeded")
    assert sorted(run(sweeps.sweep_waiting_deployments)["started"]) == sorted(held)
