"""Push webhooks: ``POST /api/v1/policies/{id}/sync/`` as GitHub (HMAC of the body) and GitLab (a token)
send it, unauthenticated otherwise; a good one queues a sync that records the pushed commit."""

import hashlib
import hmac
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from policies_app.policies.git import repositories, sources
from tests.git_repos import GitRepo
from tests.policies.test_sync import DATA, MAIN

pytestmark = [
    pytest.mark.django_db,
    # The repositories are bare ones in the test's folder, listed as the one local root allowed.
    pytest.mark.usefixtures("repository_cache", "local_repositories_allowed"),
]

SECRET = "webhook-secret"


@pytest.fixture
def followed(world, tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "data.json": DATA})
    repository = repositories.save_repository(
        None, world.admin, name="r", url=repo.url, webhook_secret=SECRET
    )
    policy = sources.create_synced_policy(
        name="cost", repository=repository, revision="main", user=world.admin
    )
    return repo, policy


def push_body(ref="refs/heads/main", after="0" * 40) -> bytes:
    return json.dumps({"ref": ref, "after": after, "repository": {"full_name": "org/policies"}}).encode()


def github(policy, body: bytes, secret: str = SECRET, event: str = "push"):
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return APIClient().post(
        f"/api/v1/policies/{policy.pk}/sync/",
        body,
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signature,
        HTTP_X_GITHUB_EVENT=event,
    )


def test_a_signed_github_push_syncs_the_pushed_commit(followed, django_capture_on_commit_callbacks):
    repo, policy = followed
    commit = repo.commit({"data.json": json.dumps({"limits": {"cost": 5}})})
    with django_capture_on_commit_callbacks(execute=True):
        response = github(policy, push_body(after=commit))
    assert response.status_code == 202, response.content
    policy.refresh_from_db()
    assert (policy.active_revision.number, policy.active_revision.commit) == (2, commit)


def test_a_gitlab_push_with_the_token_syncs(followed, django_capture_on_commit_callbacks):
    repo, policy = followed
    commit = repo.commit({"data.json": json.dumps({"limits": {"cost": 6}})})
    with django_capture_on_commit_callbacks(execute=True):
        response = APIClient().post(
            f"/api/v1/policies/{policy.pk}/sync/",
            push_body(),
            content_type="application/json",
            HTTP_X_GITLAB_TOKEN=SECRET,
            HTTP_X_GITLAB_EVENT="Push Hook",
        )
    assert response.status_code == 202
    policy.refresh_from_db()
    assert policy.active_revision.commit == commit


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_X_HUB_SIGNATURE_256": "sha256=" + "0" * 64},
        {"HTTP_X_GITLAB_TOKEN": "not-the-secret"},
    ],
    ids=["unsigned", "wrong signature", "wrong token"],
)
def test_an_unsigned_or_badly_signed_webhook_is_refused_and_syncs_nothing(
    followed, headers, django_capture_on_commit_callbacks
):
    repo, policy = followed
    repo.commit({"data.json": json.dumps({"limits": {"cost": 7}})})
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = APIClient().post(
            f"/api/v1/policies/{policy.pk}/sync/", push_body(), content_type="application/json", **headers
        )
    assert response.status_code == 403
    assert callbacks == [] and policy.revisions.count() == 1


def test_a_signature_of_another_body_is_refused(followed):
    _, policy = followed
    signature = "sha256=" + hmac.new(SECRET.encode(), push_body(), hashlib.sha256).hexdigest()
    response = APIClient().post(
        f"/api/v1/policies/{policy.pk}/sync/",
        push_body(ref="refs/heads/other"),
        content_type="application/json",
        HTTP_X_HUB_SIGNATURE_256=signature,
    )
    assert response.status_code == 403


def test_a_webhook_for_an_unknown_policy_reads_like_a_bad_signature(followed):
    response = github(type("Unknown", (), {"pk": 999_999})(), push_body())
    assert response.status_code == 403


def test_a_push_to_another_branch_is_acknowledged_and_ignored(followed, django_capture_on_commit_callbacks):
    _, policy = followed
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = github(policy, push_body(ref="refs/heads/feature"))
    assert response.status_code == 202 and "ignored" in response.json()["detail"]
    assert callbacks == []


def test_githubs_ping_is_answered(followed):
    _, policy = followed
    response = github(policy, b'{"zen": "Keep it simple."}', event="ping")
    assert (response.status_code, response.json()) == (200, {"detail": "pong"})


def test_a_form_encoded_github_delivery_is_read(followed, django_capture_on_commit_callbacks):
    repo, policy = followed
    commit = repo.commit({"data.json": json.dumps({"limits": {"cost": 8}})})
    body = b"payload=" + json.dumps({"ref": "refs/heads/main"}).replace(" ", "").encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    with django_capture_on_commit_callbacks(execute=True):
        response = APIClient().post(
            f"/api/v1/policies/{policy.pk}/sync/",
            body,
            content_type="application/x-www-form-urlencoded",
            HTTP_X_HUB_SIGNATURE_256=signature,
            HTTP_X_GITHUB_EVENT="push",
        )
    assert response.status_code == 202
    policy.refresh_from_db()
    assert policy.active_revision.commit == commit


def test_an_author_syncs_on_demand_with_their_token(followed, api, world):
    repo, policy = followed
    commit = repo.commit({"data.json": json.dumps({"limits": {"cost": 9}})})
    response = api(world.admin).post(f"/api/v1/policies/{policy.pk}/sync/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["synced"] == [
        {
            "policy": policy.pk,
            "commit": commit,
            "revision": 2,
            "activated": True,
            "tests": "none",
            "errors": None,
        }
    ]


def test_an_on_demand_sync_of_a_missing_branch_is_a_400_on_revision(followed, api, world):
    _, policy = followed
    response = api(world.admin).post(
        f"/api/v1/policies/{policy.pk}/sync/", {"revision": "nope"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["revision"]


def test_a_push_whose_sync_was_lost_is_synced_by_the_scheduled_sync(
    followed, django_capture_on_commit_callbacks
):
    """No row records a push's sync: the scheduled sync of every repository policy makes it good."""
    repo, policy = followed
    commit = repo.commit({"data.json": json.dumps({"limits": {"cost": 9}})})
    with django_capture_on_commit_callbacks(execute=False) as dropped:  # the wake-up never leaves
        response = github(policy, push_body(after=commit))
    assert response.status_code == 202 and len(dropped) == 1
    policy.refresh_from_db()
    assert policy.active_revision.number == 1

    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_periodic", "--once")
    policy.refresh_from_db()
    assert (policy.active_revision.number, policy.active_revision.commit) == (2, commit)
