"""Who may do what through the API, and how bad input is answered: allowed, forbidden, not found, refused."""

import pytest
from rest_framework.test import APIClient

from policies_app.models import ApprovalPolicy, Deployment, Evaluation, PolicyRevision, Project
from tests.builders import make_policy, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

VALID = 'package env0\n\npending contains "always" if true\n'


def deployments_url(environment) -> str:
    return f"/api/v1/environments/{environment.pk}/deployments/"


def test_it_requires_authentication(world):
    assert APIClient().get("/api/v1/projects/").status_code == 401


def test_a_bad_token_is_refused(world):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/v1/projects/").status_code == 401


def test_an_unknown_deployment_type_names_the_field(world, api):
    response = api(world.bob).post(deployments_url(world.environment), {"type": "explode"}, format="json")
    assert response.status_code == 400
    assert "type" in response.json()


def test_an_unknown_trigger_name_names_the_field(world, api):
    response = api(world.bob).post(
        deployments_url(world.environment), {"trigger_name": "cron"}, format="json"
    )
    assert response.status_code == 400
    assert "trigger_name" in response.json()


@pytest.mark.parametrize("plan", [[1, 2], "a plan", 42])
def test_a_plan_that_is_neither_an_object_nor_null_is_refused(world, api, plan):
    response = api(world.bob).post(deployments_url(world.environment), {"plan": plan}, format="json")
    assert response.status_code == 400
    assert response.json()["plan"] == ["The plan must be a JSON object or null."]
    assert Deployment.objects.count() == 0


def test_a_plan_that_does_not_fit_the_template_type_is_refused(world, api):
    response = api(world.bob).post(
        deployments_url(world.environment),
        {"plan": {"format_version": "1.2", "resource_changes": "nope"}},
        format="json",
    )
    assert response.status_code == 400
    assert "resource_changes" in response.json()["plan"][0]


def test_a_null_plan_is_accepted(world, api):
    response = api(world.bob).post(deployments_url(world.environment), {"plan": None}, format="json")
    assert response.status_code == 201


def test_a_viewer_may_not_trigger_deployments(world, api):
    response = api(world.vera).post(deployments_url(world.environment), {}, format="json")
    assert response.status_code == 403


def test_an_outsider_cannot_see_the_environment(world, api):
    assert api(world.charlie).post(deployments_url(world.environment), {}, format="json").status_code == 404
    assert api(world.charlie).get(f"/api/v1/environments/{world.environment.pk}/").status_code == 404


def test_an_outsider_cannot_see_a_deployment(world, api):
    deployment_id = api(world.bob).post(deployments_url(world.environment), {}, format="json").json()["id"]
    assert api(world.charlie).get(f"/api/v1/deployments/{deployment_id}/").status_code == 404
    assert api(world.charlie).post(f"/api/v1/deployments/{deployment_id}/approve/").status_code == 404
    assert api(world.vera).get(f"/api/v1/deployments/{deployment_id}/").status_code == 200


def test_a_deployer_may_not_approve(world, api):
    deployment_id = api(world.bob).post(deployments_url(world.environment), {}, format="json").json()["id"]
    other_deployer = world.vera
    world.platform.memberships.filter(user=other_deployer).update(role="deployer")
    response = api(other_deployer).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json")
    assert response.status_code == 403
    assert Deployment.objects.get(pk=deployment_id).approvals.count() == 0


def test_an_approval_of_a_deployment_that_is_not_pending_is_a_conflict(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    deployment_id = api(world.bob).post(deployments_url(world.environment), {}, format="json").json()["id"]
    response = api(world.alice).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json")
    assert response.status_code == 409


def test_an_approver_cannot_approve_twice(world, api):
    world.platform.approval_policies.add(make_policy("wait", VALID))
    deployment_id = api(world.bob).post(deployments_url(world.environment), {}, format="json").json()["id"]
    assert api(world.alice).post(f"/api/v1/deployments/{deployment_id}/approve/").status_code == 200
    assert api(world.alice).post(f"/api/v1/deployments/{deployment_id}/approve/").status_code == 409
    assert Deployment.objects.get(pk=deployment_id).approvals.count() == 1


def test_a_policy_syntax_error_gives_file_line_and_column_and_creates_nothing(world, api):
    broken = "package env0\n\ndeny contains msg if {\n    msg := \n}\n"
    response = api(world.admin).post(
        "/api/v1/policies/",
        {"name": "broken", "modules": [{"filename": "main.rego", "source": broken}]},
        format="json",
    )
    assert response.status_code == 400
    message = response.json()["modules"][0]
    assert message.startswith("main.rego:4:9: ")
    assert not ApprovalPolicy.objects.exists()


def test_a_policy_using_the_network_is_refused_when_saved(world, api):
    source = 'package env0\n\ndeny contains "x" if {\n    http.send({"method": "get", "url": "http://example.com"}).status_code != 200\n}\n'
    response = api(world.admin).post(
        "/api/v1/policies/",
        {"name": "net", "modules": [{"filename": "net.rego", "source": source}]},
        format="json",
    )
    assert response.status_code == 400
    assert "http.send" in response.json()["modules"][0]


def test_editing_a_policy_creates_a_new_revision_and_a_broken_edit_creates_nothing(world, api):
    client = api(world.admin)
    created = client.post(
        "/api/v1/policies/",
        {"name": "p", "modules": [{"filename": "main.rego", "source": VALID}]},
        format="json",
    ).json()
    described = client.patch(
        f"/api/v1/policies/{created['id']}/",
        {"name": "renamed", "description": "now described"},
        format="json",
    ).json()
    assert (described["name"], described["latest_revision"]["number"]) == ("renamed", 1)
    changed = 'package env0\n\ndeny contains "closed" if true\n'
    edited = client.patch(
        f"/api/v1/policies/{created['id']}/",
        {"modules": [{"filename": "main.rego", "source": changed}]},
        format="json",
    )
    assert edited.json()["latest_revision"]["number"] == 2
    broken = client.patch(
        f"/api/v1/policies/{created['id']}/",
        {"modules": [{"filename": "main.rego", "source": "package env0\nallow {"}]},
        format="json",
    )
    assert broken.status_code == 400
    assert PolicyRevision.objects.filter(policy_id=created["id"]).count() == 2
    revisions = client.get(f"/api/v1/policies/{created['id']}/revisions/").json()
    assert [r["modules"][0]["source"] for r in revisions] == [changed, VALID]


def test_the_policy_list_shows_each_policy_s_newest_revision_and_count_in_queries_that_do_not_grow(
    world, api
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api(world.admin)

    def create(name: str) -> int:
        body = {"name": name, "modules": [{"filename": "main.rego", "source": VALID}]}
        return client.post("/api/v1/policies/", body, format="json").json()["id"]

    def revise(policy_id: int, times: int, draft: bool = False) -> None:
        for number in range(times):
            source = f'package env0\n\nwarn contains "edit {number} {draft}" if true\n'
            body = {"modules": [{"filename": "main.rego", "source": source}], "draft": draft}
            assert client.patch(f"/api/v1/policies/{policy_id}/", body, format="json").status_code == 200

    def listed() -> tuple[dict[str, dict], int]:
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/api/v1/policies/").json()
        return {p["name"]: p for p in body["results"] if p["name"] in ("often", "once")}, len(queries)

    often = create("often")
    create("once")
    revise(often, 2)
    before, queries_before = listed()
    revise(often, 3)
    revise(often, 1, draft=True)  # the newest revision, not the active one
    after, queries_after = listed()

    assert queries_after == queries_before
    assert (after["once"]["revision_count"], after["once"]["active_revision"]) == (1, 1)
    assert after["once"]["latest_revision"]["number"] == 1
    assert (after["often"]["revision_count"], after["often"]["active_revision"]) == (7, 6)
    newest = after["often"]["latest_revision"]
    assert (newest["number"], newest["draft"], newest["active"]) == (7, True, False)
    assert "edit 0 True" in newest["modules"][0]["source"]
    assert before["often"]["revision_count"] == 3


def test_writing_policies_needs_the_model_permission(world, api):
    world.alice.is_staff = True
    world.alice.save()
    response = api(world.alice).post(
        "/api/v1/policies/",
        {"name": "p", "modules": [{"filename": "main.rego", "source": VALID}]},
        format="json",
    )
    assert response.status_code == 403


def test_a_dry_run_returns_the_decision_and_stores_nothing(world, api):
    policy = make_policy("two", 'package env0\n\nallow contains "two" if count(input.approvers) >= 2\n')
    world.payments.approval_policies.add(policy)
    client = api(world.alice)
    allowed = client.post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"input": {"approvers": [{}, {}]}}, format="json"
    )
    assert allowed.json() == {
        "decision": "allow",
        "deny": [],
        "pending": [],
        "warn": [],
        "allow": ["two"],
        "error": None,
    }
    pending = client.post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"input": {"approvers": []}}, format="json"
    )
    assert pending.json()["decision"] == "pending"
    assert (Evaluation.objects.count(), PolicyRevision.objects.count()) == (0, 1)
    not_an_object = client.post(f"/api/v1/policies/{policy.pk}/evaluate/", {"input": [1, 2]}, format="json")
    assert not_an_object.status_code == 400
    assert "input" in not_an_object.json()


def test_members_can_be_added_by_project_admins_only(world, api):
    url = f"/api/v1/projects/{world.payments.pk}/members/"
    assert (
        api(world.alice).post(url, {"username": "charlie", "role": "viewer"}, format="json").status_code
        == 403
    )
    created = api(world.admin).post(url, {"username": "charlie", "role": "approver"}, format="json")
    assert created.status_code == 201
    bad = api(world.admin).post(url, {"username": "nobody", "role": "viewer"}, format="json")
    assert bad.status_code == 400
    assert "username" in bad.json()
    bad_role = api(world.admin).post(url, {"username": "charlie", "role": "king"}, format="json")
    assert "role" in bad_role.json()


def test_memberships_hold_in_sub_projects(world, api):
    api(world.admin).post(
        f"/api/v1/projects/{world.payments.pk}/members/",
        {"username": "charlie", "role": "deployer"},
        format="json",
    )
    response = api(world.charlie).post(deployments_url(world.environment), {}, format="json")
    assert response.status_code == 201
    assert api(world.charlie).get(f"/api/v1/projects/{world.platform.pk}/").status_code == 404


def test_a_project_cannot_become_its_own_ancestor(world, api):
    response = api(world.admin).patch(
        f"/api/v1/projects/{world.platform.pk}/", {"parent": world.payments_eu.pk}, format="json"
    )
    assert response.status_code == 400
    assert "parent" in response.json()


def test_sibling_projects_have_unique_names(world, api):
    response = api(world.admin).post(
        "/api/v1/projects/", {"name": "Payments", "parent": world.platform.pk}, format="json"
    )
    assert response.status_code == 400
    assert "name" in response.json()
    assert Project.objects.filter(name="Payments").count() == 1


def test_projects_and_templates_take_policy_ids(world, api):
    policy = make_policy("p", VALID)
    client = api(world.admin)
    project = client.post(
        "/api/v1/projects/", {"name": "New", "approval_policies": [policy.pk]}, format="json"
    ).json()
    assert project["approval_policies"] == [policy.pk]
    template = client.post(
        "/api/v1/templates/", {"name": "t", "type": "helm", "approval_policies": [policy.pk]}, format="json"
    ).json()
    assert template["approval_policies"] == [policy.pk]
    bad = client.post("/api/v1/templates/", {"name": "u", "type": "ansible"}, format="json")
    assert "type" in bad.json()


def test_the_openapi_schema_is_served(world, api):
    response = api(world.alice).get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/v1/environments/{id}/deployments/" in response.content


def test_state_upload_refuses_an_older_serial_unless_forced(world, api):
    url = f"/api/v1/environments/{world.environment.pk}/state/"
    state = {
        "version": 4,
        "terraform_version": "1.11.4",
        "serial": 5,
        "lineage": "L1",
        "outputs": {},
        "resources": [],
    }
    client = api(world.bob)
    assert client.put(url, state, format="json").status_code == 200
    older = {**state, "serial": 4}
    assert client.put(url, older, format="json").status_code == 409
    other_lineage = {**state, "serial": 9, "lineage": "L2"}
    assert client.put(url, other_lineage, format="json").status_code == 409
    assert client.put(url + "?force=true", older, format="json").status_code == 200
    assert world.environment.states.count() == 2
    current = client.get(url).json()
    assert (current["serial"], current["state"]) == (4, older)  # kept exactly as uploaded
    assert current["view"]["module_paths"] == [[]]
    assert api(world.vera).put(url, state, format="json").status_code == 403


def test_deployments_filter_by_status(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    api(world.bob).post(
        deployments_url(world.environment), {"plan": plan_with(("a.b", ["create"]))}, format="json"
    )
    assert api(world.alice).get("/api/v1/deployments/", {"status": "pending_approval"}).json()["count"] == 0
    assert api(world.alice).get("/api/v1/deployments/", {"status": "approved"}).json()["count"] == 1
    assert api(world.alice).get("/api/v1/deployments/", {"status": "bogus"}).status_code == 400


def test_policies_are_visible_where_they_apply(world, api):
    applied = make_policy("applied", VALID)
    make_policy("elsewhere", VALID)
    world.payments.approval_policies.add(applied)
    assert [p["name"] for p in api(world.alice).get("/api/v1/policies/").json()["results"]] == ["applied"]
    assert api(world.charlie).get(f"/api/v1/policies/{applied.pk}/").status_code == 404
    assert len(api(world.admin).get("/api/v1/policies/").json()["results"]) == 2


def test_a_sub_project_admin_cannot_move_the_project_out_from_under_its_parents_policies(world, api):
    api(world.admin).post(
        f"/api/v1/projects/{world.payments_eu.pk}/members/",
        {"username": "charlie", "role": "admin"},
        format="json",
    )
    to_root = api(world.charlie).patch(
        f"/api/v1/projects/{world.payments_eu.pk}/", {"parent": None}, format="json"
    )
    assert to_root.status_code == 403
    world.payments_eu.refresh_from_db()
    assert world.payments_eu.parent == world.payments
    renamed = api(world.charlie).patch(
        f"/api/v1/projects/{world.payments_eu.pk}/", {"description": "EU"}, format="json"
    )
    assert renamed.status_code == 200


def test_only_project_admins_create_environments(world, api):
    body = {
        "name": "auto",
        "project": world.payments.pk,
        "template": world.template.pk,
        "approve_plans_automatically": True,
    }
    assert api(world.bob).post("/api/v1/environments/", body, format="json").status_code == 403
    created = api(world.admin).post("/api/v1/environments/", body, format="json")
    assert created.status_code == 201


def test_a_policy_cannot_be_deleted_under_its_revisions(world):
    from django.db.models import ProtectedError

    policy = make_policy("kept", VALID)
    with pytest.raises(ProtectedError):
        policy.delete()


def test_an_idempotency_key_reused_for_another_request_is_a_conflict(world, api):
    world.environment.approve_plans_automatically = True
    world.environment.save()
    client = api(world.bob)
    first = client.post(deployments_url(world.environment), {"idempotency_key": "k1"}, format="json")
    assert first.json()["status"] == "approved"
    destroy = client.post(
        deployments_url(world.environment), {"type": "destroy", "idempotency_key": "k1"}, format="json"
    )
    assert destroy.status_code == 409
    assert "k1" in destroy.json()["detail"]
    assert Deployment.objects.count() == 1


def test_a_viewer_is_refused_before_the_request_is_even_read(world, api):
    response = api(world.vera).post(deployments_url(world.environment), {"type": "bad"}, format="json")
    assert response.status_code == 403
