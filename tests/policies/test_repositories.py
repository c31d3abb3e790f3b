"""Policy repositories: their secrets reach git (a real smart-HTTP server checking Basic
authentication) and are never given back, not by the API, not in a recorded sync error."""

import json

import pytest

from policies_app.errors import Invalid
from policies_app.models import AuditEntry, PolicyRepository
from policies_app.policies.git import repositories, sources
from tests.git_http import GitHttpServer
from tests.git_repos import GitRepo
from tests.policies.test_sync import DATA, MAIN

pytestmark = [
    pytest.mark.django_db,
    # The smart-HTTP server listens on 127.0.0.1, the one address the egress guard is told to allow.
    pytest.mark.usefixtures("repository_cache", "loopback_allowed"),
]

TOKEN = "s3cr3t-t0ken-value"


@pytest.fixture
def served(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "data.json": DATA})
    server = GitHttpServer(tmp_path / "repo", "deploy-bot", TOKEN)
    with server.serving() as base:
        yield repo, server, f"{base}/origin.git"


def test_https_credentials_reach_the_server_and_a_wrong_one_is_a_credentials_error(world, served):
    repo, server, url = served
    wrong = repositories.save_repository(
        None, world.admin, name="wrong", url=url, username="deploy-bot", password="nope"
    )
    with pytest.raises(Invalid) as refused:
        sources.create_synced_policy(name="p", repository=wrong, user=world.admin)
    assert list(refused.value.errors) == ["credentials"]
    right = repositories.save_repository(
        None, world.admin, name="right", url=url, username="deploy-bot", password=TOKEN
    )
    policy = sources.create_synced_policy(name="p", repository=right, user=world.admin)
    assert policy.latest_revision.commit == repo.head()
    assert all(header.startswith("Basic ") for header in server.requests), "never asked without credentials"


def test_a_revoked_token_is_recorded_as_a_sync_error_without_the_token(world, served):
    repo, server, url = served
    repository = repositories.save_repository(
        None, world.admin, name="r", url=url, username="deploy-bot", password=TOKEN
    )
    policy = sources.create_synced_policy(name="p", repository=repository, user=world.admin)
    repo.commit({"data.json": json.dumps({"limits": {"cost": 1}})})
    server.credentials["password"] = "rotated"
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert list(outcome.errors) == ["credentials"]
    assert policy.sync_error and TOKEN not in policy.sync_error
    assert policy.active_revision.number == 1


def test_the_api_sets_secrets_but_never_returns_them(world, api, served):
    _, _, url = served
    client = api(world.admin)
    created = client.post(
        "/api/v1/policy-repositories/",
        {"name": "infra", "url": url, "username": "deploy-bot", "password": TOKEN, "webhook_secret": "hook"},
        format="json",
    )
    assert created.status_code == 201, created.content
    shown = client.get(f"/api/v1/policy-repositories/{created.json()['id']}/")
    for response in (created, shown, client.get("/api/v1/policy-repositories/")):
        assert TOKEN not in response.content.decode() and "hook" not in response.content.decode().replace(
            "has_webhook", ""
        )
    assert shown.json()["has_password"] and shown.json()["has_webhook_secret"]
    assert not shown.json()["has_ssh_private_key"]
    audit = AuditEntry.objects.get(action="policy_repository.created")
    assert TOKEN not in json.dumps(audit.after)


def test_a_secret_left_out_is_kept_and_an_empty_one_is_removed(world, api, served):
    _, _, url = served
    client = api(world.admin)
    created = client.post(
        "/api/v1/policy-repositories/", {"name": "infra", "url": url, "password": TOKEN}, format="json"
    )
    repository_id = created.json()["id"]
    client.patch(f"/api/v1/policy-repositories/{repository_id}/", {"username": "bot"}, format="json")
    assert PolicyRepository.objects.get(pk=repository_id).password == TOKEN
    client.patch(f"/api/v1/policy-repositories/{repository_id}/", {"password": ""}, format="json")
    assert PolicyRepository.objects.get(pk=repository_id).password == ""


def test_a_bad_url_is_a_400_on_the_url_field(world, api):
    response = api(world.admin).post(
        "/api/v1/policy-repositories/", {"name": "x", "url": "ftp://nope"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["url"]


def test_creating_a_policy_from_a_missing_revision_through_the_api_is_a_400_on_revision(world, api, served):
    _, _, url = served
    repository = repositories.save_repository(
        None, world.admin, name="r", url=url, username="deploy-bot", password=TOKEN
    )
    response = api(world.admin).post(
        "/api/v1/policies/",
        {"name": "p", "repository": repository.pk, "repository_revision": "gone"},
        format="json",
    )
    assert response.status_code == 400 and list(response.json()) == ["revision"], response.content
