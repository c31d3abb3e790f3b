"""A project admin cannot route a deployment around the policies set above them (issue 6, findings 1-4):
every change that drops a control needs authority over that control.

Pat administers Payments (under Platform) and a root project Sandbox; Adam administers Platform."""

import pytest

from policies_app.models import Deployment, Project, ProjectMembership, Template
from policies_app.projects import projects
from tests.builders import make_policy, make_user, plan_with

pytestmark = pytest.mark.django_db

COST_LIMIT = """package env0

deny contains "monthly cost over budget" if input.costEstimation.monthlyCostDiff > 1000

allow contains "within budget" if input.costEstimation.monthlyCostDiff <= 1000
"""
NO_DELETES_OFF_MAIN = """package env0

deny contains "deletes a database off main" if {
	input.deploymentRequest.revision != "main"
	some change in input.plan.resource_changes
	"delete" in change.change.actions
}
"""
SECRET_DATA = 'package env0\n\npending contains "ask" if data.settings.apikey == "s3cr3t"\n'


@pytest.fixture
def org(world):
    pat = make_user("pat")
    adam = make_user("adam")
    sandbox = Project.objects.create(name="Sandbox")
    ProjectMembership.objects.create(project=world.payments, user=pat, role="admin")
    ProjectMembership.objects.create(project=sandbox, user=pat, role="admin")
    ProjectMembership.objects.create(project=world.platform, user=adam, role="admin")
    ProjectMembership.objects.create(project=sandbox, user=adam, role="admin")
    cost = make_policy("cost limit", COST_LIMIT)
    world.platform.approval_policies.add(cost)
    world.template.approval_policies.add(make_policy("no deletes off main", NO_DELETES_OFF_MAIN))
    bare = Template.objects.create(name="bare", type="terraform")
    world.pat, world.adam, world.sandbox, world.cost, world.bare = pat, adam, sandbox, cost, bare
    return world


@pytest.fixture
def trigger(api, django_capture_on_commit_callbacks):
    """Trigger as Bob and return the deployment once its evaluation (run on commit) is recorded."""

    def trigger(org, **body):
        with django_capture_on_commit_callbacks(execute=True):
            response = api(org.bob).post(
                f"/api/v1/environments/{org.environment.pk}/deployments/", body, format="json"
            )
        assert response.status_code in (200, 201), response.json()
        return api(org.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()

    return trigger


def test_a_project_admin_cannot_move_a_sub_project_out_from_under_the_policies_set_above_them(org, api):
    # Pat administers both the old parent (Payments) and the new one (Sandbox), not Platform.
    response = api(org.pat).patch(
        f"/api/v1/projects/{org.payments_eu.pk}/", {"parent": org.sandbox.pk}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "drops_controls"
    assert "Platform" in response.json()["detail"]
    org.payments_eu.refresh_from_db()
    assert org.payments_eu.parent_id == org.payments.pk
    inherited = api(org.pat).get(f"/api/v1/projects/{org.payments_eu.pk}/").json()["inherited_policies"]
    assert inherited == [org.cost.pk]


def test_a_project_admin_cannot_move_their_own_project_without_admin_on_its_parent(org, api):
    response = api(org.pat).patch(
        f"/api/v1/projects/{org.payments.pk}/", {"parent": org.sandbox.pk}, format="json"
    )
    assert response.status_code == 403


def test_an_admin_of_the_parent_may_move_a_project_and_the_subtree_follows(org, api):
    response = api(org.adam).patch(
        f"/api/v1/projects/{org.payments.pk}/", {"parent": org.sandbox.pk}, format="json"
    )
    assert response.status_code == 200, response.json()
    org.payments_eu.refresh_from_db()
    assert org.payments_eu.ancestor_ids == [org.payments.pk, org.sandbox.pk]
    assert api(org.adam).get(f"/api/v1/projects/{org.payments_eu.pk}/").json()["inherited_policies"] == []


def test_the_reproduction_of_finding_1_ends_in_a_denial_not_an_approval(org, api, trigger):
    # The escape: move the environment out of Platform, onto a template without policies, approving
    # automatically; then a +10,000/month deployment.
    response = api(org.pat).patch(
        f"/api/v1/environments/{org.environment.pk}/",
        {"project": org.sandbox.pk, "template": org.bare.pk, "approve_plans_automatically": True},
        format="json",
    )
    assert response.status_code == 403
    deployment = trigger(org, revision="main", cost_estimation={"monthly_cost_diff": 10_000})
    assert deployment["status"] == "denied"


def test_moving_an_environment_between_projects_of_the_same_chain_keeps_every_policy_and_is_allowed(org, api):
    response = api(org.pat).patch(
        f"/api/v1/environments/{org.environment.pk}/", {"project": org.payments.pk}, format="json"
    )
    assert response.status_code == 200, response.json()


def test_swapping_an_environments_template_needs_an_organisation_admin_when_it_drops_the_templates_policies(
    org, api, trigger
):
    feature_branch_delete = {"revision": "feature", "plan": plan_with(("aws_db_instance.main", ["delete"]))}
    assert trigger(org, **feature_branch_delete)["status"] == "denied"

    response = api(org.pat).patch(
        f"/api/v1/environments/{org.environment.pk}/", {"template": org.bare.pk}, format="json"
    )
    assert response.status_code == 403
    assert trigger(org, **feature_branch_delete)["status"] == "denied"

    response = api(org.admin).patch(
        f"/api/v1/environments/{org.environment.pk}/", {"template": org.bare.pk}, format="json"
    )
    assert response.status_code == 200


def test_turning_on_automatic_approval_needs_admin_of_the_whole_chain(org, api):
    url = f"/api/v1/environments/{org.environment.pk}/"
    assert api(org.pat).patch(url, {"approve_plans_automatically": True}, format="json").status_code == 403
    assert api(org.adam).patch(url, {"approve_plans_automatically": True}, format="json").status_code == 200


def test_a_policy_the_admin_cannot_see_cannot_be_attached_and_stays_unreadable(org, api):
    hidden = make_policy("hidden", SECRET_DATA, data={"settings": {"apikey": "s3cr3t"}})
    assert api(org.pat).get(f"/api/v1/policies/{hidden.pk}/").status_code == 404

    response = api(org.pat).patch(
        f"/api/v1/projects/{org.payments.pk}/", {"approval_policies": [hidden.pk]}, format="json"
    )
    assert response.status_code == 400
    assert "approval_policies" in response.json()
    assert api(org.pat).get(f"/api/v1/policies/{hidden.pk}/").status_code == 404
    assert api(org.vera).get(f"/api/v1/policies/{hidden.pk}/").status_code == 404
    assert "s3cr3t" not in str(api(org.vera).get("/api/v1/policies/").json())


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


def test_a_policy_attached_from_above_can_be_detached_only_from_above(org, api):
    extra = make_policy("payments review", 'package env0\n\npending contains "review" if true\n')
    org.environment.template.approval_policies.add(extra)  # so that Adam sees it
    url = f"/api/v1/projects/{org.payments.pk}/"
    assert api(org.adam).patch(url, {"approval_policies": [extra.pk]}, format="json").status_code == 200

    response = api(org.pat).patch(url, {"approval_policies": []}, format="json")
    assert response.status_code == 403
    assert Deployment.objects.count() == 0
    assert list(org.payments.approval_policies.all()) == [extra]

    assert api(org.adam).patch(url, {"approval_policies": []}, format="json").status_code == 200
    assert list(org.payments.approval_policies.all()) == []


def test_a_policy_a_project_admin_attached_they_may_detach_again(org, api):
    own = make_policy("own review", 'package env0\n\npending contains "review" if true\n')
    org.environment.template.approval_policies.add(own)  # visible to Pat through the template
    url = f"/api/v1/projects/{org.payments.pk}/"
    assert api(org.pat).patch(url, {"approval_policies": [own.pk]}, format="json").status_code == 200
    assert api(org.pat).patch(url, {"approval_policies": []}, format="json").status_code == 200


def test_the_use_case_refuses_the_move_without_going_through_http(org):
    from policies_app.errors import Forbidden

    with pytest.raises(Forbidden) as refusal:
        projects.update_project(org.pat, org.payments_eu, parent=org.sandbox)
    assert refusal.value.code == "drops_controls"
    projects.update_project(org.adam, org.payments, parent=org.sandbox)
    assert Project.objects.get(pk=org.payments_eu.pk).lineage == f"/{org.sandbox.pk}/{org.payments.pk}/"
