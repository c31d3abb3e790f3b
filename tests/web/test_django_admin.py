"""The Django admin: every page renders for an administrator, search finds things, a policy is edited only
through the policy service (so every save is checked and becomes revision N+1), and the deployment trail
is read-only."""

import json

import pytest
from django.contrib import admin
from django.urls import reverse

from policies_app.deployments.stored_inputs import store_plan
from policies_app.models import (
    Approval,
    ApprovalPolicy,
    AuditCheckpoint,
    AuditEntry,
    AuditStreamCursor,
    Deployment,
    DeploymentEvent,
    EnvironmentState,
    Evaluation,
    OrganisationMembership,
    PolicyRevision,
    Project,
)
from tests.builders import make_policy

pytestmark = pytest.mark.django_db

V1_PENDING = 'package env0\n\npending contains "wait for a human" if true\n'
V1_ALLOW = 'package env0\n\nallow contains "fine" if true\n'


@pytest.fixture
def admin_client(client, world):
    """A browser logged in as the world's superuser (pytest-django's own admin_client would clash with it)."""
    client.force_login(world.admin)
    return client


@pytest.fixture
def full_world(world):
    """One row of every model, so that every admin page has something to show."""
    policy = make_policy("two approvers", V1_PENDING)
    world.platform.approval_policies.add(policy)
    world.template.approval_policies.add(policy)
    deployment = Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        decision="pending",
        plan_document_id=store_plan({"resource_changes": []}),
        messages={"deny": [], "pending": ["wait for a human"], "warn": [], "allow": []},
    )
    evaluation = Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"deploymentRequest": {"type": "deploy"}}),
        decision="pending",
        outcomes=[{"policy": "two approvers", "decision": "pending"}],
        engine="regorus",
    )
    evaluation.policy_revisions.set([policy.latest_revision])
    Approval.objects.create(deployment=deployment, user=world.alice, decision="approve", comment="ok")
    DeploymentEvent.objects.create(deployment=deployment, kind="triggered", actor=world.bob)
    OrganisationMembership.objects.create(user=world.vera, role="auditor")
    AuditEntry.objects.create(
        actor=world.admin, action="policy.created", target_type="approvalpolicy", target_id="1"
    )
    AuditCheckpoint.objects.create(sequence=1, entry_hash="0" * 64, key_id="0" * 16, signature="00" * 64)
    AuditStreamCursor.objects.create(target="webhook", sequence=1)
    EnvironmentState.objects.create(
        environment=world.environment, document={"version": 4, "serial": 3, "resources": []}, serial=3
    )
    return world


def our_model_admins():
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "policies_app"
    ]


def admin_url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_model_of_the_app_is_registered():
    registered = {model.__name__ for model, _ in our_model_admins()}
    assert registered == {
        "Project",
        "Team",
        "ProjectMembership",
        "OrganisationMembership",
        "AuditEntry",
        "AuditCheckpoint",
        "AuditStreamCursor",
        "Template",
        "Environment",
        "EnvironmentState",
        "ApprovalPolicy",
        "PolicyRevision",
        "PolicyModule",
        "Deployment",
        "Evaluation",
        "Approval",
        "DeploymentEvent",
    }


def test_every_changelist_and_change_page_renders_for_a_superuser(admin_client, full_world):
    for model, model_admin in our_model_admins():
        changelist = admin_client.get(admin_url(model, "changelist"))
        assert changelist.status_code == 200, model.__name__
        assert model_admin.list_filter, f"{model.__name__} has no filters"
        assert model_admin.search_fields, f"{model.__name__} has no search"
        first = model.objects.first()
        assert first is not None, f"no {model.__name__} to show"
        change = admin_client.get(admin_url(model, "change", first.pk))
        assert change.status_code == 200, model.__name__
        if model_admin.has_add_permission(change.wsgi_request):
            assert admin_client.get(admin_url(model, "add")).status_code == 200, model.__name__


def test_every_changelist_search_runs(admin_client, full_world):
    for model, _ in our_model_admins():
        response = admin_client.get(admin_url(model, "changelist"), {"q": "pay"})
        assert response.status_code == 200, model.__name__


def test_search_finds_projects_by_name(admin_client, full_world):
    response = admin_client.get(admin_url(Project, "changelist"), {"q": "EU"})
    assert [p.name for p in response.context["cl"].result_list] == ["Payments EU"]


def test_search_finds_deployments_by_deployer(admin_client, full_world):
    response = admin_client.get(admin_url(Deployment, "changelist"), {"q": "bob"})
    assert response.context["cl"].result_count == 1
    nobody = admin_client.get(admin_url(Deployment, "changelist"), {"q": "charlie"})
    assert nobody.context["cl"].result_count == 0


def test_a_non_staff_user_is_sent_to_the_admin_login(client, world):
    client.force_login(world.alice)
    response = client.get(admin_url(Project, "changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_a_projects_page_shows_the_policies_it_inherits(admin_client, full_world):
    world = full_world
    world.payments.approval_policies.add(make_policy("payments only", V1_ALLOW))
    response = admin_client.get(admin_url(Project, "change", world.payments_eu.pk))
    html = response.content.decode()
    assert "two approvers (from Platform)" in html
    assert "payments only (from Platform / Payments)" in html


def test_the_deployment_trail_cannot_be_changed_or_deleted_in_the_admin(admin_client, full_world):
    deployment = Deployment.objects.get()
    trail = (Deployment, Evaluation, Approval, DeploymentEvent, PolicyRevision, EnvironmentState)
    for model in (*trail, AuditEntry, AuditCheckpoint):
        model_admin = admin.site._registry[model]
        request = admin_client.get(admin_url(model, "changelist")).wsgi_request
        assert not model_admin.has_add_permission(request), model.__name__
        assert not model_admin.has_change_permission(request), model.__name__
        assert not model_admin.has_delete_permission(request), model.__name__
    response = admin_client.post(admin_url(Deployment, "change", deployment.pk), {"status": "approved"})
    assert response.status_code == 403
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval"
    assert (
        admin_client.post(admin_url(Deployment, "delete", deployment.pk), {"post": "yes"}).status_code == 403
    )
    assert Deployment.objects.filter(pk=deployment.pk).exists()


def test_a_policys_page_shows_its_revisions_with_their_sources_read_only(admin_client, full_world):
    policy = ApprovalPolicy.objects.get(name="two approvers")
    response = admin_client.get(admin_url(ApprovalPolicy, "change", policy.pk))
    html = response.content.decode()
    assert "pending contains &quot;wait for a human&quot; if true" in html
    assert response.context["inline_admin_formsets"][0].has_add_permission is False
    assert response.context["inline_admin_formsets"][0].has_change_permission is False


def policy_form(name="cost", source=V1_ALLOW, rego_version="v1", description="", data=""):
    return {
        "name": name,
        "description": description,
        "rego_version": rego_version,
        "source": source,
        "data": data,
    }


def test_adding_a_policy_in_the_admin_creates_its_first_revision(admin_client, world):
    response = admin_client.post(admin_url(ApprovalPolicy, "add"), policy_form(data='{"limit": 100}'))
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    policy = ApprovalPolicy.objects.get(name="cost")
    revision = policy.latest_revision
    assert revision.number == 1
    assert revision.data == {"limit": 100}
    assert revision.created_by == world.admin
    assert [(m.filename, m.source) for m in revision.modules.all()] == [("main.rego", V1_ALLOW)]


def test_a_policy_with_a_syntax_error_shows_line_and_column_and_stores_nothing(admin_client, world):
    broken = 'package env0\n\nallow contains "x" if {\n  input.a ==\n'
    response = admin_client.post(admin_url(ApprovalPolicy, "add"), policy_form(source=broken))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["source"]
    assert any("main.rego:" in error and any(ch.isdigit() for ch in error) for error in errors), errors
    assert not ApprovalPolicy.objects.exists()


def test_editing_the_source_creates_the_next_revision_and_keeps_the_old_one(admin_client, world):
    policy = make_policy("cost", V1_ALLOW)
    response = admin_client.post(
        admin_url(ApprovalPolicy, "change", policy.pk),
        policy_form(source=V1_PENDING, description="now waits"),
    )
    assert response.status_code == 302
    numbers = list(policy.revisions.order_by("number").values_list("number", flat=True))
    assert numbers == [1, 2]
    assert policy.latest_revision.modules.get().source == V1_PENDING
    assert PolicyRevision.objects.get(policy=policy, number=1).modules.get().source == V1_ALLOW
    policy.refresh_from_db()
    assert policy.description == "now waits"


def test_saving_an_unchanged_policy_creates_no_revision(admin_client, world):
    policy = make_policy("cost", V1_ALLOW)
    response = admin_client.post(
        admin_url(ApprovalPolicy, "change", policy.pk),
        policy_form(source=V1_ALLOW, description="renamed only"),
    )
    assert response.status_code == 302
    assert policy.revisions.count() == 1
    policy.refresh_from_db()
    assert policy.description == "renamed only"


def test_a_broken_edit_creates_no_revision_and_says_where(admin_client, world):
    policy = make_policy("cost", V1_ALLOW)
    response = admin_client.post(
        admin_url(ApprovalPolicy, "change", policy.pk),
        policy_form(source="package env0\n\nallow contains if {\n"),
    )
    assert response.status_code == 200
    assert any("main.rego:" in error for error in response.context["adminform"].form.errors["source"])
    assert policy.revisions.count() == 1


def test_a_v0_policy_is_checked_as_v0(admin_client, world):
    v0 = 'package env0\n\nwarn["destroying"] {\n  input.deploymentRequest.type == "destroy"\n}\n'
    refused = admin_client.post(admin_url(ApprovalPolicy, "add"), policy_form(name="v0 as v1", source=v0))
    assert refused.status_code == 200
    accepted = admin_client.post(
        admin_url(ApprovalPolicy, "add"), policy_form(name="v0", source=v0, rego_version="v0")
    )
    assert accepted.status_code == 302
    assert ApprovalPolicy.objects.get(name="v0").latest_revision.rego_version == "v0"


def test_editing_one_module_of_a_multi_file_policy_keeps_the_others(admin_client, world):
    from policies_app.policies import authoring

    helpers = "package env0\n\nbig if input.costEstimation.monthlyCostDiff > 100\n"
    policy = authoring.create_policy(
        name="split",
        rego_version="v1",
        modules=[
            {"filename": "helpers.rego", "source": helpers},
            {"filename": "main.rego", "source": 'package env0\n\ndeny contains "big" if big\n'},
        ],
    )
    new_main = 'package env0\n\npending contains "big" if big\n'
    response = admin_client.post(
        admin_url(ApprovalPolicy, "change", policy.pk), policy_form(name="split", source=new_main)
    )
    assert response.status_code == 302
    modules = {m.filename: m.source for m in policy.latest_revision.modules.all()}
    assert modules == {"helpers.rego": helpers, "main.rego": new_main}
