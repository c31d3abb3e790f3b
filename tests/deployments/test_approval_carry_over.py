"""Approvals that survive an unchanged re-plan: with a window set on the project (off by default), a new
deployment of an environment whose plan has the same resource changes, whose policies are at the same
revisions and whose policy data is the same as its latest release's gets that release's approvals,
recorded as carried over, and the policies judge it with them; any difference starts afresh. Through the
REST API, with the evaluations run on commit as in production."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from policies_app.deployments import stored_inputs
from policies_app.models import Approval, AuditEntry, Deployment, ProjectMembership
from policies_app.policies import authoring
from tests.builders import make_policy, make_user, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

PLAN = plan_with(("aws_s3_bucket.logs", ["create"]), ("aws_iam_role.ci", ["update"]))
TWO_APPROVERS = """package env0

pending contains "waiting for two approvers" if count(input.approvers) < 2
allow contains "two approvers approved" if count(input.approvers) >= 2
"""


def trigger(api, world, plan=PLAN, **body):
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {"plan": plan, **body}, format="json"
    )
    assert response.status_code == 201, response.json()
    return api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()


def approved_and_applied(api, world, plan=PLAN, **body):
    """A deployment Alice approved and the pipeline applied: the environment's latest release."""
    deployment = trigger(api, world, plan, **body)
    approved = api(world.alice).post(
        f"/api/v1/deployments/{deployment['id']}/approve/", {"comment": "read the plan"}, format="json"
    )
    assert approved.json()["status"] == "approved", approved.json()
    done = api(world.bob).post(
        f"/api/v1/deployments/{deployment['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    assert done.json()["status"] == "succeeded"
    return deployment


@pytest.fixture
def carrying(gated, api):
    """The gated world (one approver needed) where the root project carries approvals over for 24 hours."""
    answer = api(gated.admin).patch(
        f"/api/v1/projects/{gated.platform.pk}/", {"approval_carry_over_hours": 24}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["effective_approval_carry_over_hours"] == 24
    return gated


def test_an_identical_re_plan_carries_the_approvals_over_and_is_released_without_new_ones(carrying, api):
    first = approved_and_applied(api, carrying)
    # The same resource changes, listed in another order and with the keys of the plan in another order.
    replan = {**PLAN, "resource_changes": list(reversed(PLAN["resource_changes"]))}
    again = trigger(api, carrying, plan=json.loads(json.dumps(replan, sort_keys=True)))

    assert again["status"] == "approved"
    assert again["messages"]["allow"] == ["approved"]
    [approval] = again["approvals"]
    original = Approval.objects.get(deployment_id=first["id"])
    assert (approval["user"], approval["comment"], approval["carried_over_from"]) == (
        "alice",
        "read the plan",
        first["id"],
    )
    assert Approval.objects.get(pk=approval["id"]).created_at == original.created_at
    # The policies judged it with the approvals in their input, as after an approval.
    [evaluation] = again["evaluations"]
    assert evaluation["request_type"] == "deployResume"
    document = json.loads(stored_inputs.input_of(Deployment.objects.get(pk=again["id"]).evaluations.get()))
    assert [approver["email"] for approver in document["approvers"]] == ["alice@example.com"]
    event = Deployment.objects.get(pk=again["id"]).events.get(kind="carried_over")
    assert event.detail.startswith(f"Approvals of alice carried over from deployment #{first['id']}")
    entry = AuditEntry.objects.get(action="deployment.approvals_carried_over")
    assert (entry.target_id, entry.after["from_deployment"], entry.after["approvers"]) == (
        str(again["id"]),
        first["id"],
        ["alice"],
    )


def test_the_page_and_the_gate_say_who_approved_originally_and_where_from(carrying, api, client):
    from django.urls import reverse

    from policy_gate import gate

    first = approved_and_applied(api, carrying)
    again = trigger(api, carrying)
    client.force_login(carrying.vera)
    page = client.get(reverse("web:deployment-detail", args=[again["id"]])).content.decode()
    assert f'carried over from <a href="/deployments/{first["id"]}/">deployment #{first["id"]}</a>' in page
    [approval] = again["approvals"]
    assert gate.approval_line(approval) == (
        f"  approved by alice (carried over from deployment {first['id']}: same plan): read the plan"
    )


def test_a_changed_plan_starts_afresh(carrying, api):
    approved_and_applied(api, carrying)
    changed = trigger(api, carrying, plan=plan_with(("aws_s3_bucket.logs", ["create"])))
    assert (changed["status"], changed["approvals"]) == ("pending_approval", [])
    assert not Deployment.objects.get(pk=changed["id"]).events.filter(kind="carried_over").exists()


def test_a_changed_policy_revision_starts_afresh(carrying, api):
    approved_and_applied(api, carrying)
    policy = carrying.platform.approval_policies.get()
    assert authoring.revise_policy(policy, data={"reviewed": True}, user=carrying.admin) is not None
    after_edit = trigger(api, carrying)
    assert (after_edit["status"], after_edit["approvals"]) == ("pending_approval", [])


def test_changed_policy_data_or_another_kind_of_deployment_starts_afresh(carrying, api):
    approved_and_applied(api, carrying, policy_data={"ticket": "OPS-1"})
    other_data = trigger(api, carrying, policy_data={"ticket": "OPS-2"})
    assert (other_data["status"], other_data["approvals"]) == ("pending_approval", [])
    api(carrying.bob).post(f"/api/v1/deployments/{other_data['id']}/cancel/", {}, format="json")
    destroy = trigger(api, carrying, type="destroy", policy_data={"ticket": "OPS-1"})
    assert (destroy["status"], destroy["approvals"]) == ("pending_approval", [])


def test_approvals_given_before_the_window_do_not_carry_over(carrying, api):
    first = approved_and_applied(api, carrying)
    Approval.objects.filter(deployment_id=first["id"]).update(created_at=timezone.now() - timedelta(hours=25))
    late = trigger(api, carrying)
    assert (late["status"], late["approvals"]) == ("pending_approval", [])


def test_without_a_window_nothing_carries_over(gated, api):
    assert (
        api(gated.admin)
        .get(f"/api/v1/projects/{gated.payments_eu.pk}/")
        .json()["effective_approval_carry_over_hours"]
        == 0
    )
    approved_and_applied(api, gated)
    again = trigger(api, gated)
    assert (again["status"], again["approvals"]) == ("pending_approval", [])


def test_a_policy_asking_for_two_approvers_still_waits_for_the_second(carrying, api):
    carrying.payments.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    first = trigger(api, carrying)
    for approver in (carrying.alice, carrying.sam):
        api(approver).post(f"/api/v1/deployments/{first['id']}/approve/", {}, format="json")
    api(carrying.bob).post(
        f"/api/v1/deployments/{first['id']}/complete/", {"status": "failed"}, format="json"
    )
    # The apply failed; the same plan again: both approvals carry over, the policies are satisfied.
    retried = trigger(api, carrying)
    assert retried["status"] == "approved"
    assert sorted(a["user"] for a in retried["approvals"]) == ["alice", "sam"]

    # Sam lost the approver role meanwhile: only Alice's approval carries over, one is still missing.
    ProjectMembership.objects.filter(user=carrying.sam).delete()
    api(carrying.bob).post(
        f"/api/v1/deployments/{retried['id']}/complete/", {"status": "failed"}, format="json"
    )
    third = trigger(api, carrying)
    assert third["status"] == "pending_approval"
    assert [a["user"] for a in third["approvals"]] == ["alice"]
    assert third["messages"]["pending"] == ["waiting for two approvers"]


def test_only_admins_of_every_project_above_may_lengthen_the_window(gated, api):
    pat = make_user("pat")
    ProjectMembership.objects.create(project=gated.payments, user=pat, role="admin")
    refused = api(pat).patch(
        f"/api/v1/projects/{gated.payments.pk}/", {"approval_carry_over_hours": 48}, format="json"
    )
    assert refused.status_code == 403 and refused.json()["code"] == "drops_controls"
    allowed = api(gated.admin).patch(
        f"/api/v1/projects/{gated.platform.pk}/", {"approval_carry_over_hours": 48}, format="json"
    )
    assert allowed.status_code == 200
    # Shortening it, or turning it off below, weakens nothing.
    shorter = api(pat).patch(
        f"/api/v1/projects/{gated.payments.pk}/", {"approval_carry_over_hours": 0}, format="json"
    )
    assert shorter.status_code == 200 and shorter.json()["effective_approval_carry_over_hours"] == 0
