"""Machine identities (issue 18): service accounts owned by a project, with tokens scoped to capabilities
and to a project subtree, expiring, shown once, rotated without downtime, listed with their last use.
Everything through the API, as a pipeline and an admin use it."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from policies_app.models import ApiToken, AuditEntry, Environment, Project
from tests.builders import ONE_APPROVER, make_policy

pytestmark = pytest.mark.django_db


def client_with(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def make_account(api, world, **body) -> dict:
    response = api(world.admin).post(
        "/api/v1/service-accounts/", {"project": world.platform.pk, "name": "ci", **body}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def make_token(api, world, account: dict, **body) -> dict:
    response = api(world.admin).post(f"/api/v1/service-accounts/{account['id']}/tokens/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def trigger(key: str, environment: Environment):
    return client_with(key).post(
        f"/api/v1/environments/{environment.pk}/deployments/", {"revision": "main"}, format="json"
    )


@pytest.fixture
def elsewhere(world) -> Environment:
    """An environment under Platform but outside Payments."""
    data = Project.objects.create(name="Data", parent=world.platform)
    return Environment.objects.create(name="warehouse", project=data, template=world.template)


def test_a_deploy_token_triggers_in_its_subtree_and_is_refused_elsewhere(
    api, world, elsewhere, django_capture_on_commit_callbacks
):
    account = make_account(api, world)
    token = make_token(api, world, account, capabilities=["deploy"], project=world.payments.pk)
    assert token["key"].startswith("pp_") and token["capabilities"] == ["deploy"]
    assert token["project"] == world.payments.pk

    with django_capture_on_commit_callbacks(execute=True):
        inside = trigger(token["key"], world.environment)  # prod, in Payments EU
    assert inside.status_code == 201, inside.json()
    assert inside.json()["deployer"] == account["username"] == f"sa-{world.platform.pk}-ci"

    outside = trigger(token["key"], elsewhere)
    assert outside.status_code == 403, outside.json()
    assert outside.json()["detail"] == "Only deployers of this project may trigger deployments."


def test_a_read_token_cannot_trigger(api, world):
    token = make_token(api, world, make_account(api, world), capabilities=["read"])
    assert client_with(token["key"]).get(f"/api/v1/environments/{world.environment.pk}/").status_code == 200
    assert trigger(token["key"], world.environment).status_code == 403


def test_a_deploy_token_cannot_approve_and_approve_is_not_grantable_unless_allowed(
    api, world, django_capture_on_commit_callbacks
):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    account = make_account(api, world)
    token = make_token(api, world, account)
    assert token["capabilities"] == ["deploy", "read"]
    with django_capture_on_commit_callbacks(execute=True):
        deployment = api(world.bob).post(
            f"/api/v1/environments/{world.environment.pk}/deployments/", {"revision": "main"}, format="json"
        )
    assert (
        api(world.bob).get(f"/api/v1/deployments/{deployment.json()['id']}/").json()["status"]
        == "pending_approval"
    )
    approve = client_with(token["key"]).post(f"/api/v1/deployments/{deployment.json()['id']}/approve/", {})
    assert approve.status_code == 403, approve.json()

    refused = api(world.admin).post(
        f"/api/v1/service-accounts/{account['id']}/tokens/", {"capabilities": ["approve"]}, format="json"
    )
    assert refused.status_code == 403
    assert refused.json()["code"] == "approve_not_allowed"

    allowed = api(world.admin).patch(
        f"/api/v1/service-accounts/{account['id']}/", {"may_approve": True}, format="json"
    )
    assert allowed.status_code == 200 and allowed.json()["may_approve"] is True
    approver = make_token(api, world, account, capabilities=["read", "approve"])
    approve = client_with(approver["key"]).post(f"/api/v1/deployments/{deployment.json()['id']}/approve/", {})
    assert approve.status_code == 200, approve.json()
    assert AuditEntry.objects.filter(action="service_account.changed").exists()


def test_an_expired_token_is_refused_with_401(api, world):
    token = make_token(api, world, make_account(api, world), expires_in_days=1)
    expires_at = timezone.datetime.fromisoformat(token["expires_at"].replace("Z", "+00:00"))
    assert timedelta(hours=23) < expires_at - timezone.now() <= timedelta(days=1)
    assert client_with(token["key"]).get("/api/v1/projects/").status_code == 200

    ApiToken.objects.filter(pk=token["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client_with(token["key"]).get("/api/v1/projects/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Token expired."


def test_lifetime_defaults_to_90_days_and_is_bounded_by_the_setting(api, world, settings):
    account = make_account(api, world)
    token = make_token(api, world, account)
    expires_at = timezone.datetime.fromisoformat(token["expires_at"].replace("Z", "+00:00"))
    assert timedelta(days=89) < expires_at - timezone.now() <= timedelta(days=90)
    settings.API_TOKEN_MAX_DAYS = 30
    too_long = api(world.admin).post(
        f"/api/v1/service-accounts/{account['id']}/tokens/", {"expires_in_days": 31}, format="json"
    )
    assert too_long.status_code == 400
    assert too_long.json() == {"expires_in_days": ["Between 1 and 30 days."]}


def test_rotation_keeps_both_tokens_working_until_the_old_one_is_revoked(api, world):
    account = make_account(api, world)
    old = make_token(api, world, account, capabilities=["deploy"], project=world.payments.pk)
    rotated = api(world.admin).post(
        f"/api/v1/service-accounts/{account['id']}/tokens/{old['id']}/rotate/", {}
    )
    assert rotated.status_code == 201, rotated.json()
    new = rotated.json()
    assert (new["capabilities"], new["project"]) == (old["capabilities"], old["project"])
    assert new["key"] != old["key"]
    for key in (old["key"], new["key"]):
        assert client_with(key).get("/api/v1/me/").status_code == 200

    third = api(world.admin).post(f"/api/v1/service-accounts/{account['id']}/tokens/", {}, format="json")
    assert third.status_code == 409 and third.json()["code"] == "too_many_tokens"

    revoked = api(world.admin).delete(f"/api/v1/service-accounts/{account['id']}/tokens/{old['id']}/")
    assert revoked.status_code == 204
    assert client_with(old["key"]).get("/api/v1/me/").status_code == 401
    assert client_with(new["key"]).get("/api/v1/me/").status_code == 200


def test_tokens_are_listed_with_their_last_use_and_never_their_key(api, world):
    account = make_account(api, world)
    token = make_token(api, world, account)
    listed = api(world.admin).get(f"/api/v1/service-accounts/{account['id']}/tokens/").json()
    assert [(t["prefix"], t["last_used_at"]) for t in listed] == [(token["prefix"], None)]
    assert client_with(token["key"]).get("/api/v1/projects/").status_code == 200
    [shown] = api(world.admin).get("/api/v1/service-accounts/").json()["results"][0]["tokens"]
    assert shown["last_used_at"] is not None
    assert "key" not in shown and token["key"] not in str(
        api(world.admin).get("/api/v1/service-accounts/").json()
    )


def test_only_admins_of_the_project_manage_its_service_accounts(api, world):
    refused = api(world.bob).post(
        "/api/v1/service-accounts/", {"project": world.platform.pk, "name": "mine"}, format="json"
    )
    assert refused.status_code == 403
    account = make_account(api, world)
    assert api(world.bob).get("/api/v1/service-accounts/").json()["results"] == []
    assert api(world.bob).post(f"/api/v1/service-accounts/{account['id']}/tokens/", {}).status_code == 404


def test_a_service_account_token_cannot_mint_tokens_nor_reach_another_project(api, world):
    token = make_token(api, world, make_account(api, world))
    made = client_with(token["key"]).post("/api/v1/tokens/", {"name": "escape"}, format="json")
    assert made.status_code == 403
    outside = Project.objects.create(name="Elsewhere")
    assert client_with(token["key"]).get(f"/api/v1/projects/{outside.pk}/").status_code == 404
    narrow = api(world.admin).post(
        f"/api/v1/service-accounts/{make_account(api, world, name='other', project=world.payments.pk)['id']}/tokens/",
        {"project": world.platform.pk},
        format="json",
    )
    assert narrow.status_code == 400 and "project" in narrow.json()


def test_user_tokens_expire_too(api, world):
    made = api(world.bob).post("/api/v1/tokens/", {"name": "laptop", "expires_in_days": 7}, format="json")
    assert made.status_code == 201, made.json()
    key = made.json()["key"]
    assert client_with(key).get("/api/v1/me/").status_code == 200
    ApiToken.objects.filter(pk=made.json()["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client_with(key).get("/api/v1/me/").status_code == 401


def test_the_readmes_command_makes_an_account_and_prints_a_deploy_key(
    world, django_capture_on_commit_callbacks
):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "create_service_account", "deploy-pipeline", "--project", "Platform", "--by", "admin", stdout=out
    )
    key = out.getvalue().strip()
    with django_capture_on_commit_callbacks(execute=True):
        assert trigger(key, world.environment).status_code == 201


def test_the_projects_page_makes_an_account_and_a_token_shown_once_for_admins_only(world, client):
    page = f"/projects/{world.payments.pk}/service-accounts/"
    client.force_login(world.bob)
    assert client.get(page).status_code == 403
    client.force_login(world.admin)
    made = client.post(page, {"action": "create_account", "name": "ci"}, follow=True)
    assert made.status_code == 200 and "Service account ci is created." in made.content.decode()
    account = world.payments.service_accounts.get()
    shown = client.post(
        page,
        {
            "action": "create_token",
            "account": account.pk,
            "capabilities": ["deploy"],
            "scope": world.payments_eu.pk,
        },
    )
    assert shown.status_code == 201
    key = re.search(r'<code id="new-key">([^<]+)</code>', shown.content.decode()).group(1)
    assert key not in client.get(page).content.decode(), "shown once"
    token = account.tokens.get()
    assert (token.capabilities, token.scope_project) == (["deploy"], world.payments_eu)
    refused = client.post(
        page, {"action": "create_token", "account": account.pk, "capabilities": ["approve"]}
    )
    assert refused.status_code == 403
    assert "may not approve" in refused.content.decode()
