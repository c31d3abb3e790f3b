"""A project admin cannot route a deployment around the policies set above them (issue 6, findings 1-4):
every change that drops a control needs authority over that control.

Pat administers Payments (under Platform) and a root project Sandbox; Adam administers Platform."""

import pytest

from policies_app.models import Deployment, Environment, Project
from policies_app.projects import projects
from tests.builders import make_policy, plan_with

pytestmark = pytest.mark.django_db

SECRET_DATA = 'package env0\n\npending contains "ask" if data.settings.apikey == "s3cr3t"\n'


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


def test_the_use_case_refuses_attaching_a_policy_the_admin_cannot_see_by_its_field(org):
    from policies_app.errors import Invalid

    hidden = make_policy("hidden", SECRET_DATA, data={"settings": {"apikey": "s3cr3t"}})
    with pytest.raises(Invalid) as refusal:
        projects.update_project(org.pat, org.payments, approval_policies=[hidden])
    assert refusal.value.errors == {
        "approval_policies": [f'Invalid pk "{hidden.pk}" - object does not exist.']
    }
    with pytest.raises(Invalid):
        projects.create_project(org.pat, name="New", parent=org.payments, approval_policies=[hidden])
    assert list(org.payments.approval_policies.all()) == []
    assert not Project.objects.filter(name="New").exists()


def test_a_move_that_keeps_one_policy_from_above_and_drops_another_is_refused(org):
    from policies_app.errors import Forbidden

    second = make_policy("platform review", 'package env0\n\npending contains "review" if true\n')
    org.platform.approval_policies.add(second)
    # Sandbox has the cost limit too: the move keeps it and drops only the review (attached after it).
    org.sandbox.approval_policies.add(org.cost)
    with pytest.raises(Forbidden) as refusal:
        projects.update_project(org.pat, org.payments_eu, parent=org.sandbox)
    assert refusal.value.code == "drops_controls"
    assert refusal.value.message == (
        "This change drops a policy attached to project Platform; only admins of that project may do that."
    )
    assert Project.objects.get(pk=org.payments_eu.pk).parent_id == org.payments.pk


def test_moving_an_environment_under_a_project_that_allows_self_approval_needs_admin_of_every_project(org):
    from policies_app.errors import Forbidden
    from policies_app.projects import environments

    lenient = Project.objects.create(name="Lenient", parent=org.payments, allow_self_approval=True)
    with pytest.raises(Forbidden) as refusal:
        environments.update_environment(org.pat, org.environment, project=lenient)
    assert refusal.value.code == "drops_controls"
    assert "approve their own deployments" in refusal.value.message
    environments.update_environment(org.adam, org.environment, project=lenient)
    assert Environment.objects.get(pk=org.environment.pk).project_id == lenient.pk


def test_a_project_admin_may_change_an_environment_that_already_approves_automatically(org):
    from policies_app.projects import environments

    Environment.objects.filter(pk=org.environment.pk).update(approve_plans_automatically=True)
    org.environment.refresh_from_db()
    environments.update_environment(org.pat, org.environment, name="production")
    changed = Environment.objects.get(pk=org.environment.pk)
    assert (changed.name, changed.approve_plans_automatically) == ("production", True)


def test_the_use_case_names_the_template_policies_a_template_swap_would_drop(org):
    from policies_app.errors import Forbidden
    from policies_app.projects import environments

    with pytest.raises(Forbidden) as refusal:
        environments.update_environment(org.pat, org.environment, template=org.bare)
    assert refusal.value.code == "drops_controls"
    assert refusal.value.message == (
        "This change drops policies of the environment's template; only organisation admins may do that."
    )


def test_the_refusal_of_automatic_approval_names_the_root_whose_admins_may_allow_it(org):
    from policies_app.errors import Forbidden
    from policies_app.projects import environments

    with pytest.raises(Forbidden) as refusal:
        environments.update_environment(org.pat, org.environment, approve_plans_automatically=True)
    assert refusal.value.code == "drops_controls"
    assert refusal.value.message == (
        "This change approves plans automatically; only admins of every project above it "
        "(admins of Platform) or organisation admins may do that."
    )
