"""Policy repositories in the product: a list, a page per repository with the sync state of its policies,
creating and changing one with the API's checks, "test connection" against a real git server, and secrets
that are never put back in a page (only whether each is set). Who sees and who changes them is the API's
rule: policy authors change, a project member sees nothing."""

import pytest
from django.urls import reverse

from policies_app.models import PolicyRepository
from policies_app.policies.git import repositories, sources
from tests.git_http import GitHttpServer
from tests.git_repos import GitRepo
from tests.policies.test_sync import DATA, MAIN

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("repository_cache", "loopback_allowed")]

TOKEN = "s3cr3t-t0ken-value"
HOOK = "hook-secret-value"


@pytest.fixture
def served(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "data.json": DATA})
    server = GitHttpServer(tmp_path / "repo", "deploy-bot", TOKEN)
    with server.serving() as base:
        yield repo, server, f"{base}/origin.git"


def test_an_author_creates_tests_and_changes_a_repository_and_secrets_are_never_shown(client, world, served):
    repo, _server, url = served
    client.force_login(world.admin)
    new = client.get(reverse("web:repository-new")).content.decode()
    assert 'name="password"' in new and 'name="url"' in new
    created = client.post(
        reverse("web:repository-new"),
        {"name": "infra", "url": url, "username": "deploy-bot", "password": TOKEN, "webhook_secret": HOOK},
    )
    assert created.status_code == 302, created.content.decode()
    repository = PolicyRepository.objects.get(name="infra")
    assert (repository.password, repository.webhook_secret) == (TOKEN, HOOK)

    detail = client.get(created["Location"]).content.decode()
    assert "Password or token (https): set" in detail and "SSH private key: not set" in detail
    assert TOKEN not in detail and HOOK not in detail

    tested = client.post(reverse("web:repository-test", args=[repository.pk]), follow=True).content.decode()
    assert f"is at {repo.head()[:12]}" in tested

    edit = reverse("web:repository-edit", args=[repository.pk])
    form = client.get(edit).content.decode()
    assert TOKEN not in form and HOOK not in form and "Set. Never shown again" in form
    # Saved with the secrets left empty: they are kept; the webhook secret is removed by its tick.
    saved = client.post(
        edit, {"name": "infra", "url": url, "username": "deploy-bot", "remove_webhook_secret": "on"}
    )
    assert saved.status_code == 302
    repository.refresh_from_db()
    assert (repository.password, repository.webhook_secret) == (TOKEN, "")

    client.post(edit, {"name": "infra", "url": url, "username": "deploy-bot", "password": "wrong"})
    refused = client.post(reverse("web:repository-test", args=[repository.pk]))
    html = refused.content.decode()
    assert refused.status_code == 400 and "Cannot connect: credentials:" in html and "wrong" not in html


def test_the_page_shows_the_sync_state_of_its_policies(client, world, served):
    repo, server, url = served
    repository = repositories.save_repository(
        None, world.admin, name="infra", url=url, username="deploy-bot", password=TOKEN
    )
    policy = sources.create_synced_policy(name="synced", repository=repository, user=world.admin)
    client.force_login(world.admin)
    html = client.get(reverse("web:repository-detail", args=[repository.pk])).content.decode()
    assert "synced" in html and repo.head()[:12] in html and 'tone-good">ok' in html
    server.credentials["password"] = "rotated"
    repo.commit({"data.json": DATA.replace("1", "2")})
    sources.sync_policy(policy, user=world.admin)
    html = client.get(reverse("web:repository-detail", args=[repository.pk])).content.decode()
    assert "failed" in html and TOKEN not in html


def test_the_api_checks_refuse_a_bad_url_beside_its_field(client, world):
    client.force_login(world.admin)
    response = client.post(
        reverse("web:repository-new"), {"name": "bad", "url": "https://user:secret@example.com/x.git"}
    )
    html = response.content.decode()
    assert response.status_code == 400 and not PolicyRepository.objects.filter(name="bad").exists()
    url_row = html.split('name="url"')[1].split('<div class="form-row">')[0]
    assert 'class="errorlist' in url_row


def test_a_project_member_sees_no_repository_and_cannot_create_one(client, world, served):
    _repo, _server, url = served
    repository = repositories.save_repository(None, world.admin, name="infra", url=url, password=TOKEN)
    client.force_login(world.alice)
    assert "infra" not in client.get(reverse("web:repository-list")).content.decode()
    assert client.get(reverse("web:repository-detail", args=[repository.pk])).status_code == 404
    assert client.get(reverse("web:repository-new")).status_code == 404
    assert client.post(reverse("web:repository-test", args=[repository.pk])).status_code == 404
    assert client.post(reverse("web:repository-new"), {"name": "x", "url": url}).status_code == 404
