"""The server-rendered UI: what each persona may see (404 otherwise) and do (403 otherwise).

Personas (tests/builders.py): Alice approves, Bob deploys, Vera views, Charlie is an outsider; all roles
are held on the root project Platform. Deployments are put in the state under test directly, so these
tests exercise the pages and the permission checks, not the engine (tests/deployments/test_approval_flow.py does)."""

import json

import pytest
from django.urls import reverse

from policies_app.models import (
    Approval,
    ApprovalPolicy,
    Deployment,
    DeploymentEvent,
    Environment,
    Evaluation,
    PolicyModule,
    PolicyRevision,
    Project,
    Template,
)
from tests.builders import make_policy

pytestmark = pytest.mark.django_db


PENDING_MESSAGES = {
    "deny": [],
    "pending": ["Needs two approvals, has 0"],
    "warn": ["Big change"],
    "allow": [],
}


def stored_policy(
    name: str, source: str = 'package env0\n\npending contains "wait" if true\n'
) -> ApprovalPolicy:
    """A policy stored without the engine: the pages only display it."""
    policy = ApprovalPolicy.objects.create(name=name, description=f"{name} description")
    revision = PolicyRevision.objects.create(policy=policy, number=1, rego_version="v1")
    PolicyModule.objects.create(revision=revision, filename="main.rego", source=source)
    return policy


def make_deployment(world, status="pending_approval", deployer=None, environment=None) -> Deployment:
    deployment = Deployment.objects.create(
        environment=environment or world.environment,
        deployer=deployer or world.bob,
        status=status,
        decision={"pending_approval": "pending", "approved": "allow", "denied": "deny"}.get(status, ""),
        messages=PENDING_MESSAGES,
        revision="main",
    )
    DeploymentEvent.objects.create(
        deployment=deployment, kind="triggered", actor=deployment.deployer, detail="by cd"
    )
    return deployment


def evaluate(deployment: Deployment, policy: ApprovalPolicy) -> Evaluation:
    evaluation = Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"deploymentRequest": {"type": "deploy", "revision": "main"}}),
        decision="pending",
        messages=PENDING_MESSAGES,
        outcomes=[
            {
                "policy_id": policy.pk,
                "policy": policy.name,
                "revision": 1,
                "decision": "pending",
                "deny": [],
                "pending": ["Needs two approvals, has 0"],
                "warn": [],
                "allow": [],
                "error": None,
            }
        ],
        engine="regorus",
    )
    evaluation.policy_revisions.set([policy.latest_revision])
    return evaluation


def client_for(client, user):
    client.force_login(user)
    return client


def decide(client, deployment, decision, comment=""):
    url = reverse("web:deployment-decide", args=[deployment.pk])
    return client.post(url, {"decision": decision, "comment": comment})


# --- login ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["/", "/deployments/1/", "/projects/", "/environments/1/", "/policies/", "/policies/1/"],
)
def test_it_sends_anonymous_visitors_to_the_login_page(client, world, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_logging_in_with_a_password_lands_on_the_deployment_queue(client, world):
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "alice", "password": "pw"})
    assert response.status_code == 302
    assert response["Location"] == reverse("web:deployment-queue")


def test_a_wrong_password_is_refused_on_the_login_page(client, world):
    response = client.post(reverse("login"), {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


# --- the queue -----------------------------------------------------------------------------------------


def test_the_queue_shows_only_pending_deployments_by_default(client, world):
    pending = make_deployment(world)
    approved = make_deployment(world, status="approved")
    response = client_for(client, world.alice).get(reverse("web:deployment-queue"))
    assert response.status_code == 200
    shown = [d.pk for d in response.context["page"].object_list]
    assert shown == [pending.pk]
    assert approved.pk not in shown


def test_the_queue_filters_by_status_and_environment(client, world):
    other_environment = Environment.objects.create(
        name="staging", project=world.payments, template=world.template
    )
    approved_prod = make_deployment(world, status="approved")
    approved_staging = make_deployment(world, status="approved", environment=other_environment)
    make_deployment(world)
    alice = client_for(client, world.alice)

    by_status = alice.get(reverse("web:deployment-queue"), {"view": "all", "status": "approved"})
    assert {d.pk for d in by_status.context["page"].object_list} == {approved_prod.pk, approved_staging.pk}

    by_both = alice.get(
        reverse("web:deployment-queue"),
        {"view": "all", "status": "approved", "environment": other_environment.pk},
    )
    assert [d.pk for d in by_both.context["page"].object_list] == [approved_staging.pk]

    every_status = alice.get(reverse("web:deployment-queue"), {"view": "all", "status": ""})
    assert len(every_status.context["page"].object_list) == 3


def test_the_queue_refuses_an_unknown_status_filter_instead_of_ignoring_it(client, world):
    make_deployment(world)
    response = client_for(client, world.alice).get(reverse("web:deployment-queue"), {"status": "bogus"})
    assert response.status_code == 200
    assert list(response.context["page"].object_list) == []


def test_an_outsider_sees_an_empty_queue(client, world):
    make_deployment(world)
    response = client_for(client, world.charlie).get(reverse("web:deployment-queue"), {"status": ""})
    assert response.status_code == 200
    assert list(response.context["page"].object_list) == []


def test_the_queue_narrowed_to_an_environment_the_user_cannot_see_shows_and_names_nothing(client, world):
    hidden_project = Project.objects.create(name="Secret")
    hidden = Environment.objects.create(name="hidden-env", project=hidden_project, template=world.template)
    Deployment.objects.create(environment=hidden, deployer=world.admin, status="pending_approval")
    response = client_for(client, world.alice).get(
        reverse("web:deployment-queue"), {"view": "all", "environment": hidden.pk}
    )
    assert list(response.context["page"].object_list) == []
    assert [name for _, name, _ in response.context["narrowed_to"]] == [f"#{hidden.pk}"]
    assert "hidden-env" not in response.content.decode()


# --- the deployment page -------------------------------------------------------------------------------


def test_an_approver_sees_the_deployment_with_its_reasons_evaluations_events_and_buttons(client, world):
    policy = stored_policy("two approvers")
    deployment = make_deployment(world)
    evaluation = evaluate(deployment, policy)
    Approval.objects.create(
        deployment=deployment, user=world.sam, decision="approve", comment="fine by security"
    )

    response = client_for(client, world.alice).get(reverse("web:deployment-detail", args=[deployment.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Needs two approvals, has 0" in html
    assert "Big change" in html
    assert "two approvers" in html  # the per-policy outcome
    assert reverse("web:evaluation-input", args=[deployment.pk, evaluation.pk]) in html
    assert "fine by security" in html
    assert "Triggered" in html and "by cd" in html
    assert response.context["actions"].may_decide is True
    assert 'value="approve"' in html and 'value="reject"' in html


@pytest.mark.parametrize("persona", ["bob", "vera"])
def test_a_deployer_or_viewer_sees_the_deployment_without_approve_buttons(client, world, persona):
    deployment = make_deployment(world)
    response = client_for(client, getattr(world, persona)).get(
        reverse("web:deployment-detail", args=[deployment.pk])
    )
    assert response.status_code == 200
    assert response.context["actions"].may_decide is False
    assert 'value="approve"' not in response.content.decode()


def test_an_approver_is_not_offered_buttons_once_the_deployment_is_decided(client, world):
    deployment = make_deployment(world, status="approved")
    response = client_for(client, world.alice).get(reverse("web:deployment-detail", args=[deployment.pk]))
    assert response.context["actions"].may_decide is False


def test_an_outsider_gets_not_found_for_a_deployment(client, world):
    deployment = make_deployment(world)
    response = client_for(client, world.charlie).get(reverse("web:deployment-detail", args=[deployment.pk]))
    assert response.status_code == 404


def test_an_unknown_deployment_is_not_found(client, world):
    response = client_for(client, world.admin).get(reverse("web:deployment-detail", args=[999999]))
    assert response.status_code == 404


# --- approve and reject --------------------------------------------------------------------------------


def test_an_approver_approves_a_pending_deployment_with_a_comment(client, world):
    deployment = make_deployment(world)
    response = decide(client_for(client, world.alice), deployment, "approve", "looks good")
    assert response.status_code == 302
    assert response["Location"] == reverse("web:deployment-detail", args=[deployment.pk])
    approval = Approval.objects.get(deployment=deployment)
    assert (approval.user, approval.decision, approval.comment) == (world.alice, "approve", "looks good")
    assert deployment.events.filter(kind="approved", actor=world.alice).exists()


def test_an_approver_rejects_a_pending_deployment(client, world):
    deployment = make_deployment(world)
    response = decide(client_for(client, world.alice), deployment, "reject", "too risky")
    assert response.status_code == 302
    deployment.refresh_from_db()
    assert deployment.status == "rejected"


@pytest.mark.parametrize("persona", ["bob", "vera"])
def test_a_deployer_or_viewer_may_not_approve(client, world, persona):
    deployment = make_deployment(world)
    response = decide(client_for(client, getattr(world, persona)), deployment, "approve")
    assert response.status_code == 403
    assert "Only approvers of this project" in response.content.decode()
    assert not Approval.objects.exists()


def test_an_outsider_cannot_approve_a_deployment_they_cannot_see(client, world):
    deployment = make_deployment(world)
    response = decide(client_for(client, world.charlie), deployment, "approve")
    assert response.status_code == 404
    assert not Approval.objects.exists()


def test_approving_with_a_get_request_is_not_allowed(client, world):
    deployment = make_deployment(world)
    response = client_for(client, world.alice).get(reverse("web:deployment-decide", args=[deployment.pk]))
    assert response.status_code == 405
    assert not Approval.objects.exists()


def test_an_unknown_decision_is_a_bad_request(client, world):
    deployment = make_deployment(world)
    response = decide(client_for(client, world.alice), deployment, "maybe")
    assert response.status_code == 400
    assert not Approval.objects.exists()


def test_approving_a_deployment_that_is_no_longer_pending_shows_why(client, world):
    deployment = make_deployment(world, status="approved")
    response = decide(client_for(client, world.alice), deployment, "approve")
    assert response.status_code == 409
    assert "not pending approval" in response.context["error"]
    assert "not pending approval" in response.content.decode()
    assert not Approval.objects.exists()


def test_approving_twice_shows_the_services_refusal(client, world):
    deployment = make_deployment(world)
    alice = client_for(client, world.alice)
    assert decide(alice, deployment, "approve").status_code == 302
    second = decide(alice, deployment, "approve")
    assert second.status_code == 409
    assert "already" in second.context["error"]
    assert Approval.objects.count() == 1


# --- cancel --------------------------------------------------------------------------------------------


def test_a_deployer_cancels_a_pending_deployment(client, world):
    deployment = make_deployment(world)
    response = client_for(client, world.bob).post(reverse("web:deployment-cancel", args=[deployment.pk]))
    assert response.status_code == 302
    deployment.refresh_from_db()
    assert deployment.status == "cancelled"


def test_a_viewer_may_not_cancel(client, world):
    deployment = make_deployment(world)
    response = client_for(client, world.vera).post(reverse("web:deployment-cancel", args=[deployment.pk]))
    assert response.status_code == 403
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval"


def test_an_outsider_cannot_cancel_a_deployment_they_cannot_see(client, world):
    deployment = make_deployment(world)
    response = client_for(client, world.charlie).post(reverse("web:deployment-cancel", args=[deployment.pk]))
    assert response.status_code == 404


# --- the evaluation input ------------------------------------------------------------------------------


def test_the_evaluation_input_is_served_as_stored(client, world):
    deployment = make_deployment(world)
    evaluation = evaluate(deployment, stored_policy("p"))
    response = client_for(client, world.vera).get(
        reverse("web:evaluation-input", args=[deployment.pk, evaluation.pk])
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.content.decode() == evaluation.input_json


def test_the_evaluation_input_is_not_found_for_an_outsider(client, world):
    deployment = make_deployment(world)
    evaluation = evaluate(deployment, stored_policy("p"))
    url = reverse("web:evaluation-input", args=[deployment.pk, evaluation.pk])
    assert client_for(client, world.charlie).get(url).status_code == 404


def test_an_evaluation_is_not_reachable_through_another_deployment(client, world):
    deployment = make_deployment(world)
    other = make_deployment(world)
    evaluation = evaluate(deployment, stored_policy("p"))
    url = reverse("web:evaluation-input", args=[other.pk, evaluation.pk])
    assert client_for(client, world.alice).get(url).status_code == 404


# --- projects and environments -------------------------------------------------------------------------


def test_the_project_tree_nests_projects_and_shows_own_and_inherited_policies(client, world):
    root_policy = stored_policy("root policy")
    eu_policy = stored_policy("eu policy")
    world.platform.approval_policies.add(root_policy)
    world.payments_eu.approval_policies.add(eu_policy)

    response = client_for(client, world.vera).get(reverse("web:project-tree"))
    assert response.status_code == 200
    [root] = response.context["roots"]
    assert root.project == world.platform
    [payments] = root.children
    [payments_eu] = payments.children
    assert payments_eu.project == world.payments_eu
    assert payments_eu.own_policies == [eu_policy]
    assert [(i.policy, i.source) for i in payments_eu.inherited_policies] == [(root_policy, world.platform)]
    assert payments_eu.environments == [world.environment]
    assert "(from Platform)" in response.content.decode()


def test_a_member_of_a_sub_project_sees_it_as_a_root_with_what_it_inherits(client, world):
    from policies_app.models import ProjectMembership

    world.platform.approval_policies.add(stored_policy("root policy"))
    ProjectMembership.objects.create(project=world.payments, user=world.charlie, role="viewer")
    response = client_for(client, world.charlie).get(reverse("web:project-tree"))
    [root] = response.context["roots"]
    assert root.project == world.payments
    assert [i.policy.name for i in root.inherited_policies] == ["root policy"]


def test_an_outsider_sees_no_projects(client, world):
    response = client_for(client, world.charlie).get(reverse("web:project-tree"))
    assert response.status_code == 200
    assert response.context["roots"] == []
    assert "Platform" not in response.content.decode()


def test_the_environment_page_shows_effective_policies_and_recent_deployments(client, world):
    world.template.approval_policies.add(stored_policy("template policy"))
    world.payments.approval_policies.add(stored_policy("payments policy"))
    deployment = make_deployment(world)
    response = client_for(client, world.vera).get(
        reverse("web:environment-detail", args=[world.environment.pk])
    )
    assert response.status_code == 200
    sources = {policy.name: source for policy, source in response.context["policies"]}
    assert sources == {
        "template policy": "template network",
        "payments policy": "project Platform / Payments",
    }
    assert list(response.context["deployments"]) == [deployment]


def test_the_environment_page_is_not_found_for_an_outsider(client, world):
    response = client_for(client, world.charlie).get(
        reverse("web:environment-detail", args=[world.environment.pk])
    )
    assert response.status_code == 404


# --- policies ------------------------------------------------------------------------------------------


def test_the_policy_list_shows_policies_that_apply_to_the_users_projects(client, world):
    inherited = stored_policy("on the root")
    on_template = stored_policy("on the template")
    elsewhere = stored_policy("elsewhere")
    world.platform.approval_policies.add(inherited)
    world.template.approval_policies.add(on_template)
    Template.objects.create(name="other", type="terraform").approval_policies.add(elsewhere)

    response = client_for(client, world.vera).get(reverse("web:policy-list"))
    assert response.status_code == 200
    assert {p.name for p in response.context["policies"]} == {"on the root", "on the template"}

    everything = client_for(client, world.admin).get(reverse("web:policy-list"))
    assert {p.name for p in everything.context["policies"]} == {"on the root", "on the template", "elsewhere"}


def test_an_outsider_sees_no_policies(client, world):
    world.platform.approval_policies.add(stored_policy("on the root"))
    response = client_for(client, world.charlie).get(reverse("web:policy-list"))
    assert response.status_code == 200
    assert list(response.context["policies"]) == []


def test_the_policy_page_shows_revisions_and_module_sources(client, world):
    policy = stored_policy("p", source='package env0\n\ndeny contains "no fridays" if false\n')
    world.payments.approval_policies.add(policy)
    response = client_for(client, world.vera).get(reverse("web:policy-detail", args=[policy.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "r1" in html and "main.rego" in html
    assert "deny contains &quot;no fridays&quot; if false" in html


def test_the_policy_page_is_not_found_for_an_outsider(client, world):
    policy = stored_policy("p")
    world.platform.approval_policies.add(policy)
    assert (
        client_for(client, world.charlie).get(reverse("web:policy-detail", args=[policy.pk])).status_code
        == 404
    )


def test_a_dry_run_shows_the_policys_decision_and_stores_nothing(client, world):
    policy = make_policy(
        "cost",
        'package env0\n\ndeny contains "too expensive" if input.costEstimation.monthlyCostDiff > 100\n'
        'allow contains "cheap" if input.costEstimation.monthlyCostDiff <= 100\n',
    )
    world.platform.approval_policies.add(policy)
    alice = client_for(client, world.alice)
    url = reverse("web:policy-detail", args=[policy.pk])

    denied = alice.post(
        url, {"revision": 1, "input_json": json.dumps({"costEstimation": {"monthlyCostDiff": 500}})}
    )
    assert denied.status_code == 200
    assert denied.context["result"]["decision"] == "deny"
    assert denied.context["result"]["deny"] == ["too expensive"]
    assert "too expensive" in denied.content.decode()

    allowed = alice.post(url, {"revision": 1, "input_json": '{"costEstimation": {"monthlyCostDiff": 5}}'})
    assert allowed.context["result"]["decision"] == "allow"
    assert not Evaluation.objects.exists()


def test_a_dry_run_with_invalid_json_names_the_problem(client, world):
    policy = stored_policy("p")
    world.platform.approval_policies.add(policy)
    response = client_for(client, world.alice).post(
        reverse("web:policy-detail", args=[policy.pk]), {"revision": 1, "input_json": "{not json"}
    )
    assert response.status_code == 400
    assert "Not valid JSON" in response.content.decode()
    assert response.context["result"] is None


def test_an_outsider_cannot_dry_run_a_policy_they_cannot_see(client, world):
    policy = stored_policy("p")
    world.platform.approval_policies.add(policy)
    response = client_for(client, world.charlie).post(
        reverse("web:policy-detail", args=[policy.pk]), {"revision": 1, "input_json": "{}"}
    )
    assert response.status_code == 404
