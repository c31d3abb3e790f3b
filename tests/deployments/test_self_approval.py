"""A deployer may not approve or reject their own deployment, unless a project of its chain allows it; only
admins of the whole chain may allow it; the API, the pages and the "waiting for me" queue all say so."""

import pytest

from policies_app.models import Approval, Deployment, Project, ProjectMembership
from tests.builders import make_policy
from tests.deployments.test_approval_flow import trigger as trigger_over_api
from tests.deployments.test_inbox import make, waiting_ids
from tests.web.test_pages import client_for, decide, make_deployment

pytestmark = pytest.mark.django_db


# --- the API -------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("commits_run_on_commit_callbacks")
def test_it_refuses_self_approval(world, api):
    world.platform.memberships.filter(user=world.bob).update(role="approver")
    body = trigger_over_api(api(world.bob), world.environment).json()
    response = api(world.bob).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    assert response.status_code == 403
    assert "own deployment" in response.json()["detail"]
    assert Deployment.objects.get(pk=body["id"]).approvals.count() == 0


@pytest.mark.usefixtures("commits_run_on_commit_callbacks")
def test_a_project_may_allow_self_approval(world, api):
    world.platform.memberships.filter(user=world.bob).update(role="approver")
    world.payments.allow_self_approval = True
    world.payments.save()
    body = trigger_over_api(api(world.bob), world.environment).json()
    response = api(world.bob).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    assert response.json()["status"] == "approved"


def test_a_deployer_who_is_a_project_admin_still_cannot_approve_their_own_deployment(org, api, trigger):
    ProjectMembership.objects.create(project=org.payments, user=org.bob, role="admin")
    refused = api(org.bob).patch(
        f"/api/v1/projects/{org.payments.pk}/", {"allow_self_approval": True}, format="json"
    )
    assert refused.status_code == 403
    deployment = trigger(org, revision="main", cost_estimation={"monthly_cost_diff": 10})
    assert deployment["status"] == "approved"  # within budget: the cost policy allows
    # Completed, so that the next deployment of the environment is evaluated at once.
    api(org.bob).post(
        f"/api/v1/deployments/{deployment['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    pending = make_policy("always pending", 'package env0\n\npending contains "wait" if true\n')
    org.platform.approval_policies.add(pending)
    waiting = trigger(org, revision="main", idempotency_key="2")
    assert waiting["status"] == "pending_approval"
    response = api(org.bob).post(f"/api/v1/deployments/{waiting['id']}/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "self_approval"


# --- who may allow it ---------------------------------------------------------------------------------


def test_a_project_admin_cannot_allow_self_approval_for_their_own_project(org, api):
    response = api(org.pat).patch(
        f"/api/v1/projects/{org.payments.pk}/", {"allow_self_approval": True}, format="json"
    )
    assert response.status_code == 403
    org.payments.refresh_from_db()
    assert org.payments.allow_self_approval is False
    # From above it may be allowed, and from below it may be switched off again (tightening).
    assert (
        api(org.adam)
        .patch(f"/api/v1/projects/{org.payments.pk}/", {"allow_self_approval": True}, format="json")
        .status_code
        == 200
    )
    assert (
        api(org.pat)
        .patch(f"/api/v1/projects/{org.payments.pk}/", {"allow_self_approval": False}, format="json")
        .status_code
        == 200
    )


def test_the_admin_of_a_root_project_may_allow_self_approval_on_it(org):
    from policies_app.projects import projects

    projects.update_project(org.pat, org.sandbox, allow_self_approval=True)
    assert Project.objects.get(pk=org.sandbox.pk).allow_self_approval is True


# --- the pages and the queue --------------------------------------------------------------------------


def test_approving_ones_own_deployment_is_forbidden_with_the_reason(client, world):
    deployment = make_deployment(world, deployer=world.alice)
    response = decide(client_for(client, world.alice), deployment, "approve")
    assert response.status_code == 403
    assert "own deployment" in response.context["error"]
    assert not Approval.objects.exists()


def test_own_deployments_wait_for_me_where_the_project_lets_deployers_approve_them(world):
    own = make(world, deployer=world.alice)
    Project.objects.filter(pk=world.payments.pk).update(allow_self_approval=True)
    assert own.pk in waiting_ids(world.alice)


def test_an_approver_is_told_why_they_may_not_decide_on_their_own_deployment(world):
    from policies_app.deployments.approvals import Actions, available_actions
    from policies_app.projects.tree import tree_for

    tree = tree_for(world.payments_eu, with_policies=False)
    own = make(world, deployer=world.alice)
    assert available_actions(world.alice, own, tree, set()) == Actions(
        may_decide=False, may_cancel=True, why_not_decide="You may not approve or reject your own deployment."
    )
    # A deployer who holds no approver role is given no reason; another approver may decide.
    assert available_actions(world.bob, own, tree, set()) == Actions(False, False, "")
    assert available_actions(world.sam, own, tree, set()) == Actions(True, False, "")
    released = make(world, status="approved", deployer=world.alice)
    assert available_actions(world.alice, released, tree, set()) == Actions(False, True, "")
