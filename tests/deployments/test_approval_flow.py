"""The approval gate end to end through the REST API: trigger, evaluate, approve, release."""

import pytest
from django.test import override_settings
from django.utils import timezone

from policies_app.models import Deployment, DeploymentEvent, Environment, Evaluation
from tests.builders import make_policy, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

TWO_APPROVERS = """
package env0

allow contains "two approvers approved" if count(input.approvers) >= 2
pending contains "waiting for two approvers" if count(input.approvers) < 2
"""

SECURITY_APPROVER_FOR_DELETES = """
package env0

deletes if {
    some change in input.plan.resource_changes
    "delete" in change.change.actions
}

security_approved if {
    some approver in input.approvers
    some team in approver.teams
    team.name == "security team"
}

pending contains "a deletion needs an approver from the security team" if {
    deletes
    not security_approved
}

allow contains "approved by security" if security_approved
allow contains "nothing is deleted" if not deletes
"""

COST_LIMIT = """
package env0

deny contains msg if {
    input.costEstimation.monthlyCostDiff > data.limits.monthly
    msg := sprintf("monthly cost grows by %v, over the limit of %v", [input.costEstimation.monthlyCostDiff, data.limits.monthly])
}
allow contains "within budget" if input.costEstimation.monthlyCostDiff <= data.limits.monthly
"""

PROTECTED_DESTROY_V0 = """
package env0

deny[msg] {
    input.deploymentRequest.type == "destroy"
    change := input.plan.resource_changes[_]
    change.change.actions[_] == "delete"
    startswith(change.address, "aws_db_instance.")
    msg := sprintf("%s is protected and cannot be destroyed", [change.address])
}

allow["not a protected destroy"] {
    not deny_any
}

deny_any {
    deny[_]
}
"""

MAIN_ONLY = """
package env0

deny contains sprintf("revision %s is not main", [input.deploymentRequest.revision]) if {
    input.deploymentRequest.revision != "main"
}
warn contains "deploying main" if input.deploymentRequest.revision == "main"
"""

NOTHING_FIRES = """
package env0

deny contains "never" if input.deploymentRequest.type == "no-such-type"
"""


def trigger(client, environment, **body):
    body.setdefault("plan", plan_with(("aws_s3_bucket.logs", ["create"])))
    return client.post(f"/api/v1/environments/{environment.pk}/deployments/", body, format="json")


def attach(project_or_template, *policies):
    project_or_template.approval_policies.add(*policies)


def test_it_inherits_policies_through_three_levels_of_projects(world, api):
    attach(world.platform, make_policy("root requires two approvers", TWO_APPROVERS))
    attach(world.payments, make_policy("middle cost limit", COST_LIMIT, data={"limits": {"monthly": 100}}))
    attach(world.payments_eu, make_policy("leaf main only", MAIN_ONLY))
    attach(world.template, make_policy("template security", SECURITY_APPROVER_FOR_DELETES))
    sibling = world.payments.__class__.objects.create(name="Data", parent=world.platform)
    attach(sibling, make_policy("not on this branch", NOTHING_FIRES))

    response = api(world.admin).get(f"/api/v1/environments/{world.environment.pk}/effective-policies/")
    assert sorted(p["name"] for p in response.json()) == [
        "leaf main only",
        "middle cost limit",
        "root requires two approvers",
        "template security",
    ]

    deployment = trigger(
        api(world.bob), world.environment, revision="main", cost_estimation={"monthly_cost_diff": 5}
    ).json()
    assert deployment["status"] == "pending_approval"
    assert deployment["messages"]["pending"] == ["waiting for two approvers"]
    assert deployment["messages"]["warn"] == ["deploying main"]
    assert sorted(deployment["messages"]["allow"]) == ["nothing is deleted", "within budget"]


def test_each_policy_is_counted_once_when_attached_at_several_levels(world, api):
    policy = make_policy("main only", MAIN_ONLY)
    attach(world.platform, policy)
    attach(world.payments, policy)
    attach(world.template, policy)
    response = api(world.admin).get(f"/api/v1/environments/{world.environment.pk}/effective-policies/")
    assert len(response.json()) == 1


def test_two_approvers_release_the_deployment(world, api):
    attach(world.payments, make_policy("two approvers", TWO_APPROVERS))
    deployment_id = trigger(api(world.bob), world.environment).json()["id"]

    first = api(world.alice).post(
        f"/api/v1/deployments/{deployment_id}/approve/", {"comment": "ok"}, format="json"
    )
    assert first.status_code == 200
    assert first.json()["status"] == "pending_approval"

    second = api(world.sam).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json")
    body = second.json()
    assert body["status"] == "approved"
    assert body["decision"] == "allow"
    assert [e["request_type"] for e in body["evaluations"]] == ["deploy", "deployResume", "deployResume"]
    assert [a["user"] for a in body["approvals"]] == ["alice", "sam"]


def test_a_deletion_waits_for_an_approver_from_the_security_team(world, api):
    attach(world.template, make_policy("security for deletes", SECURITY_APPROVER_FOR_DELETES))
    plan = plan_with(("aws_s3_bucket.logs", ["delete"]))
    deployment_id = trigger(api(world.bob), world.environment, plan=plan).json()["id"]

    after_alice = (
        api(world.alice).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json").json()
    )
    assert after_alice["status"] == "pending_approval"
    after_sam = api(world.sam).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json").json()
    assert after_sam["status"] == "approved"
    assert after_sam["messages"]["allow"] == ["approved by security"]


def test_a_creation_is_allowed_without_the_security_team(world, api):
    attach(world.template, make_policy("security for deletes", SECURITY_APPROVER_FOR_DELETES))
    body = trigger(api(world.bob), world.environment).json()
    assert body["status"] == "approved"


@pytest.mark.parametrize(("diff", "status"), [(250.0, "denied"), (20.0, "approved")])
def test_the_cost_limit_comes_from_the_policy_data(world, api, diff, status):
    attach(world.platform, make_policy("cost limit", COST_LIMIT, data={"limits": {"monthly": 100}}))
    body = trigger(
        api(world.bob),
        world.environment,
        cost_estimation={"total_monthly_cost": 900, "monthly_cost_diff": diff},
    ).json()
    assert body["status"] == status
    if status == "denied":
        assert body["messages"]["deny"] == ["monthly cost grows by 250, over the limit of 100"]


def test_a_v0_policy_denies_destroying_a_protected_resource(world, api):
    attach(world.platform, make_policy("protected", PROTECTED_DESTROY_V0, rego_version="v0"))
    plan = plan_with(("aws_db_instance.main", ["delete"]), ("aws_s3_bucket.logs", ["delete"]))
    body = trigger(api(world.bob), world.environment, type="destroy", plan=plan).json()
    assert body["status"] == "denied"
    assert body["messages"]["deny"] == ["aws_db_instance.main is protected and cannot be destroyed"]

    safe = trigger(
        api(world.bob), world.environment, type="destroy", plan=plan_with(("aws_s3_bucket.logs", ["delete"]))
    )
    assert safe.json()["status"] == "approved"


def test_revisions_other_than_main_are_denied_and_main_warns(world, api):
    attach(world.platform, make_policy("main only", MAIN_ONLY))
    denied = trigger(api(world.bob), world.environment, revision="feature/x").json()
    assert denied["status"] == "denied"
    assert denied["messages"]["deny"] == ["revision feature/x is not main"]
    warned = trigger(api(world.bob), world.environment, revision="main").json()
    assert warned["status"] == "approved"
    assert warned["decision"] == "warn"
    assert warned["messages"]["warn"] == ["deploying main"]


def test_deny_in_one_policy_beats_allow_in_another(world, api):
    attach(world.platform, make_policy("main only", MAIN_ONLY))
    attach(world.template, make_policy("cost limit", COST_LIMIT, data={"limits": {"monthly": 100}}))
    body = trigger(
        api(world.bob), world.environment, revision="dev", cost_estimation={"monthly_cost_diff": 1}
    ).json()
    assert body["decision"] == "deny"
    assert body["messages"]["allow"] == ["within budget"]


def test_pending_in_one_policy_beats_warn_in_another(world, api):
    attach(world.platform, make_policy("main only", MAIN_ONLY))
    attach(world.template, make_policy("two approvers", TWO_APPROVERS))
    body = trigger(api(world.bob), world.environment, revision="main").json()
    assert body["status"] == "pending_approval"
    assert body["decision"] == "pending"


def test_no_rule_firing_leaves_the_deployment_pending(world, api):
    attach(world.platform, make_policy("silent", NOTHING_FIRES))
    body = trigger(api(world.bob), world.environment).json()
    assert body["status"] == "pending_approval"
    assert body["decision"] == "pending"


def test_without_policies_an_environment_that_approves_automatically_is_released(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    assert trigger(api(world.bob), world.environment).json()["status"] == "approved"


def test_without_policies_one_approval_by_an_approver_releases(world, api):
    body = trigger(api(world.bob), world.environment).json()
    assert body["status"] == "pending_approval"
    approved = api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    assert approved["status"] == "approved"


def test_without_policies_the_decision_says_why_in_each_case(world, api):
    body = trigger(api(world.bob), world.environment).json()
    assert body["messages"]["pending"] == [
        "No approval policy applies; waiting for one approval by an approver."
    ]
    approved = api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    assert approved["messages"]["allow"] == ["No approval policy applies; approved by an approver."]
    api(world.bob).post(f"/api/v1/deployments/{body['id']}/complete/", {"status": "succeeded"}, format="json")
    world.environment.approve_plans_automatically = True
    world.environment.save()
    automatic = trigger(api(world.bob), world.environment).json()
    assert automatic["messages"]["allow"] == [
        "No approval policy applies and the environment approves plans automatically."
    ]
    assert set(Evaluation.objects.values_list("engine", flat=True)) == {"none"}


def test_each_policy_s_outcome_is_recorded_with_the_revision_that_decided(world, api):
    policy = make_policy("two approvers", TWO_APPROVERS)
    attach(world.platform, policy)
    body = trigger(api(world.bob), world.environment).json()
    [evaluation] = Evaluation.objects.filter(deployment_id=body["id"])
    assert evaluation.outcomes == [
        {
            "policy_id": policy.pk,
            "policy": "two approvers",
            "revision": 1,
            "decision": "pending",
            "deny": [],
            "pending": ["waiting for two approvers"],
            "warn": [],
            "allow": [],
            "error": None,
            "requirements": [],  # it declares none (tests/deployments/test_requirements.py)
            # Which rule said it and what it read (tests/deployments/test_explanations.py).
            "explanation": [
                {
                    "message": "waiting for two approvers",
                    "rule": "pending",
                    "file": "main.rego",
                    "line": 5,
                    "reads": [{"path": "input.approvers", "value": []}],
                }
            ],
        }
    ]


def test_a_policy_turns_automatic_approval_off_and_the_api_says_so(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    client = api(world.admin)
    assert (
        client.get(f"/api/v1/environments/{world.environment.pk}/").json()["approve_plans_automatically"]
        is True
    )
    attach(world.payments, make_policy("silent", NOTHING_FIRES))
    shown = client.get(f"/api/v1/environments/{world.environment.pk}/").json()
    assert shown["approve_plans_automatically"] is False
    assert shown["approval_policies_apply"] is True
    assert trigger(api(world.bob), world.environment).json()["status"] == "pending_approval"


def test_a_reject_by_an_approver_rejects_the_deployment(world, api):
    attach(world.platform, make_policy("two approvers", TWO_APPROVERS))
    body = trigger(api(world.bob), world.environment).json()
    rejected = api(world.alice).post(
        f"/api/v1/deployments/{body['id']}/reject/", {"comment": "no"}, format="json"
    )
    assert rejected.json()["status"] == "rejected"
    late = api(world.sam).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    assert late.status_code == 409


def test_a_resume_uses_the_policy_revisions_the_deployment_started_with(world, api):
    policy = make_policy("two approvers", TWO_APPROVERS)
    attach(world.platform, policy)
    body = trigger(api(world.bob), world.environment).json()
    # The policy is made stricter while the deployment waits: the deployment keeps revision 1.
    api(world.admin).patch(
        f"/api/v1/policies/{policy.pk}/",
        {
            "modules": [
                {"filename": "main.rego", "source": 'package env0\n\ndeny contains "closed" if true\n'}
            ]
        },
        format="json",
    )
    assert policy.revisions.count() == 2
    api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    final = api(world.sam).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    assert final["status"] == "approved"
    assert {r["revision"] for e in final["evaluations"] for r in e["policy_revisions"]} == {1}
    api(world.bob).post(f"/api/v1/deployments/{body['id']}/complete/", {"status": "succeeded"}, format="json")
    # A new deployment is judged by revision 2.
    assert trigger(api(world.bob), world.environment).json()["status"] == "denied"


def test_an_evaluation_error_fails_closed_naming_the_policy(world, api):
    conflicting = """
package env0

limit := 1 if input.deploymentRequest.type == "deploy"
limit := 2 if input.template.type == "terraform"

allow contains "fine" if limit > 0
"""
    attach(world.platform, make_policy("conflicting", conflicting))
    body = trigger(api(world.bob), world.environment).json()
    assert body["status"] == "error"
    assert body["decision"] == "error"
    assert "conflicting" in body["error"]
    assert body["released_at"] is None


def test_the_input_of_the_latest_evaluation_is_served_in_env0_shape(world, api):
    attach(world.platform, make_policy("two approvers", TWO_APPROVERS))
    body = trigger(
        api(world.bob),
        world.environment,
        revision="main",
        trigger_name="cd",
        policy_data={"ticket": "OPS-1"},
        variables={"terraform": {"instance_type": "t3.micro"}},
        cost_estimation={"total_monthly_cost": 12.5, "monthly_cost_diff": 2},
    ).json()
    api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    document = api(world.vera).get(f"/api/v1/deployments/{body['id']}/input/").json()
    assert document["deploymentRequest"] == {"type": "deployResume", "triggerName": "cd", "revision": "main"}
    assert document["template"]["type"] == "terraform"
    assert document["costEstimation"] == {"totalMonthlyCost": 12.5, "monthlyCostDiff": 2.0}
    assert document["deployerUser"] == {"name": "bob", "email": "bob@example.com", "teams": []}
    assert document["approvers"][0]["teams"][0]["name"] == "approvers team"
    assert document["variables"]["terraform"] == {"instance_type": "t3.micro"}
    assert document["variables"]["env0"]["ENV0_ENVIRONMENT_NAME"] == "prod"
    assert document["policyData"] == {"ticket": "OPS-1"}
    assert document["plan"]["resource_changes"][0]["address"] == "aws_s3_bucket.logs"


DESTROY_NEEDS_ONE_APPROVAL = """
package env0

pending contains "a destroy waits for an approver" if input.deploymentRequest.type == "destroy"
allow contains "destroy approved" if input.deploymentRequest.type == "destroyResume"
"""


def test_approving_a_destroy_resumes_it_as_a_destroy(world, api):
    attach(world.platform, make_policy("destroys wait", DESTROY_NEEDS_ONE_APPROVAL))
    plan = plan_with(("aws_s3_bucket.logs", ["delete"]))
    body = trigger(api(world.bob), world.environment, type="destroy", plan=plan).json()
    assert body["status"] == "pending_approval"
    approved = api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    assert approved["status"] == "approved"
    assert approved["messages"]["allow"] == ["destroy approved"]
    assert [e["request_type"] for e in approved["evaluations"]] == ["destroy", "destroyResume"]
    document = api(world.vera).get(f"/api/v1/deployments/{body['id']}/input/").json()
    assert document["deploymentRequest"]["type"] == "destroyResume"


def test_a_repeated_idempotency_key_returns_the_first_deployment(world, api):
    client = api(world.bob)
    first = trigger(client, world.environment, idempotency_key="pipeline-42")
    again = trigger(client, world.environment, idempotency_key="pipeline-42")
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert Deployment.objects.count() == 1


def test_one_idempotency_key_for_staging_then_prod_gives_prod_its_own_evaluated_deployment(world, api):
    # The README's pipeline passes $CI_PIPELINE_ID as the key to every environment it deploys.
    # Staging (in Payments) approves plans automatically; prod (in Payments EU) waits for two approvers.
    staging = Environment.objects.create(
        name="staging", project=world.payments, template=world.template, approve_plans_automatically=True
    )
    attach(world.payments_eu, make_policy("prod needs two approvers", TWO_APPROVERS))
    client = api(world.bob)
    first = trigger(client, staging, revision="main", idempotency_key="pipeline-42")
    assert (first.status_code, first.json()["status"]) == (201, "approved")
    prod = trigger(client, world.environment, revision="main", idempotency_key="pipeline-42")
    assert prod.status_code == 201
    body = prod.json()
    assert body["id"] != first.json()["id"]
    assert body["environment"] == world.environment.pk
    assert body["status"] == "pending_approval"
    assert body["messages"]["pending"] == ["waiting for two approvers"]
    assert [e["request_type"] for e in body["evaluations"]] == ["deploy"]
    # The same key again, per environment, still answers with each environment's own deployment.
    assert (
        trigger(client, staging, revision="main", idempotency_key="pipeline-42").json()["id"]
        == first.json()["id"]
    )
    assert (
        trigger(client, world.environment, revision="main", idempotency_key="pipeline-42").json()["id"]
        == body["id"]
    )


def test_the_pipeline_completes_a_released_deployment_with_its_state(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    body = trigger(api(world.bob), world.environment).json()
    state = {
        "version": 4,
        "terraform_version": "1.11.4",
        "serial": 3,
        "lineage": "abc",
        "outputs": {},
        "resources": [],
    }
    done = api(world.bob).post(
        f"/api/v1/deployments/{body['id']}/complete/", {"status": "succeeded", "state": state}, format="json"
    )
    assert done.json()["status"] == "succeeded"
    assert world.environment.current_state.serial == 3
    again = api(world.bob).post(
        f"/api/v1/deployments/{body['id']}/complete/", {"status": "failed"}, format="json"
    )
    assert again.status_code == 409


def test_a_cancelled_deployment_cannot_be_approved(world, api):
    body = trigger(api(world.bob), world.environment).json()
    assert api(world.bob).post(f"/api/v1/deployments/{body['id']}/cancel/").json()["status"] == "cancelled"
    assert (
        api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").status_code
        == 409
    )


def test_every_step_is_recorded_as_an_event(world, api):
    body = trigger(api(world.bob), world.environment).json()
    api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {"comment": "lgtm"}, format="json")
    kinds = list(DeploymentEvent.objects.filter(deployment_id=body["id"]).values_list("kind", flat=True))
    assert kinds == ["triggered", "evaluated", "approved", "evaluated", "released"]


@override_settings(REQUEST_SIZE_LIMIT_BYTES=2000)
def test_a_plan_over_the_size_limit_is_refused_with_413(world, api):
    big_plan = plan_with(*[(f"aws_s3_bucket.b{i}", ["create"]) for i in range(40)])
    response = trigger(api(world.bob), world.environment, plan=big_plan)
    assert response.status_code == 413
    assert "size limit" in response.json()["detail"]
    assert Deployment.objects.count() == 0


def test_the_queue_lists_pending_deployments_of_an_environment(world, api):
    attach(world.platform, make_policy("two approvers", TWO_APPROVERS))
    pending = trigger(api(world.bob), world.environment).json()
    listed = (
        api(world.alice)
        .get("/api/v1/deployments/", {"status": "pending_approval", "environment": world.environment.pk})
        .json()
    )
    assert [d["id"] for d in listed["results"]] == [pending["id"]]
    assert listed["count"] == 1


def test_a_deployment_left_evaluating_by_a_dead_worker_is_evaluated_when_the_task_comes_again(world, api):
    from policies_app.deployments.verdicts import evaluate_deployment

    body = trigger(api(world.bob), world.environment).json()
    # As a worker that died mid-evaluation leaves it: evaluating, the evaluation still due.
    Deployment.objects.filter(pk=body["id"]).update(status="evaluating", evaluation_due_at=timezone.now())
    evaluate_deployment(body["id"])
    deployment = Deployment.objects.get(pk=body["id"])
    assert deployment.status == "pending_approval"
    assert deployment.evaluations.count() == 2
    # Delivered once more: nothing changes, since the deployment is no longer queued or evaluating.
    evaluate_deployment(body["id"])
    assert Deployment.objects.get(pk=body["id"]).evaluations.count() == 2


def test_the_template_revision_stands_in_when_the_deployment_names_none(world, api):
    attach(world.platform, make_policy("main only", MAIN_ONLY))
    world.template.revision = "release-1"
    world.template.save()
    body = trigger(api(world.bob), world.environment).json()
    assert body["messages"]["deny"] == ["revision release-1 is not main"]
