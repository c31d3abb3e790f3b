"""Policy changes tested on the pull request: a signed push webhook for a feature branch runs the
branch's tests and a replay over recent deployments, and reports a commit status and a comment through
GitHub's and GitLab's REST APIs, here local servers that check each request as the forges document it
(tests/forges.py)."""

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from policies_app.errors import Invalid
from policies_app.models import Deployment, Evaluation, PolicyBranchCheck, PolicyRepository
from policies_app.policies.git import branch_checks, repositories, sources
from tests.forges import Forge
from tests.git_repos import GitRepo
from tests.policies.test_sync import DATA, MAIN, MAIN_TEST

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("repository_cache", "local_repositories_allowed", "loopback_allowed"),
]

SECRET = "webhook-secret"
TOKEN = "forge-token-7f3a"
PASSWORD = "hunter2-very-secret"  # a sensitive variable of recorded deployments
# The branch's policy: a lower limit, and a message that would quote the sensitive variable.
BRANCH_MAIN = MAIN.replace(
    'deny contains sprintf("cost rises by %v, over %v", [input.costEstimation.monthlyCostDiff, data.limits.cost])',
    'deny contains sprintf("cost rises by %v (db password %v)", [input.costEstimation.monthlyCostDiff, '
    'object.get(input, ["variables", "terraform", "db_password"], "")])',
)


@pytest.fixture
def forge():
    servers = []

    def start(kind: str, **options) -> Forge:
        server = Forge(kind, TOKEN, "org/policies" if kind == "github" else "42", **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def repo(tmp_path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        {
            "policies/cost/main.rego": MAIN,
            "policies/cost/main_test.rego": MAIN_TEST,
            "policies/cost/data.json": DATA,
        }
    )
    return repo


def follow(repo: GitRepo, world, server: Forge | None, token: str = TOKEN):
    review = {}
    if server is not None:
        review = {
            "review_api": server.kind,
            "review_api_url": server.url,
            "review_project": server.project,
            "review_token": token,
        }
    repository = repositories.save_repository(
        None, world.admin, name="infra", url=repo.url, webhook_secret=SECRET, **review
    )
    policy = sources.create_synced_policy(
        name="cost", repository=repository, path="policies/cost", revision="main", user=world.admin
    )
    world.platform.approval_policies.add(policy)
    return policy


def recorded_deployments(world, policy, diffs):
    """Deployments of an environment the policy applies to, decided by its revision in force; their input
    holds a sensitive variable."""
    deployments = Deployment.objects.bulk_create(
        Deployment(environment=world.environment, deployer=world.bob, status="approved") for _ in diffs
    )
    Evaluation.objects.bulk_create(
        Evaluation(
            deployment=deployment,
            request_type="deploy",
            input_json=json.dumps(
                {
                    "costEstimation": {"monthlyCostDiff": diff},
                    "variables": {"terraform": {"db_password": PASSWORD}},
                }
            ),
            sensitive_variables={"terraform": ["db_password"]},
            decision="deny" if diff > 100 else "allow",
            outcomes=[
                {
                    "policy_id": policy.pk,
                    "policy": policy.name,
                    "revision": 1,
                    "decision": "deny" if diff > 100 else "allow",
                }
            ],
            engine="regorus",
        )
        for deployment, diff in zip(deployments, diffs, strict=True)
    )
    return deployments


def push(policy, branch: str, commit: str, *, gitlab: bool = False, default_branch: str = "main"):
    if gitlab:
        body = json.dumps(
            {
                "object_kind": "push",
                "ref": f"refs/heads/{branch}",
                "after": commit,
                "checkout_sha": commit,
                "project": {"id": 42, "default_branch": default_branch},
            }
        ).encode()
        headers = {"HTTP_X_GITLAB_TOKEN": SECRET, "HTTP_X_GITLAB_EVENT": "Push Hook"}
    else:
        body = json.dumps(
            {
                "ref": f"refs/heads/{branch}",
                "after": commit,
                "repository": {"full_name": "org/policies", "default_branch": default_branch},
            }
        ).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"HTTP_X_HUB_SIGNATURE_256": signature, "HTTP_X_GITHUB_EVENT": "push"}
    return APIClient().post(
        f"/api/v1/policies/{policy.pk}/sync/", body, content_type="application/json", **headers
    )


def feature_commit(repo: GitRepo, files: dict[str, str]) -> str:
    repo.checkout("feature", create=True)
    return repo.commit(files, "a policy change")


def test_a_feature_branch_push_reports_tests_and_replay_to_the_github_pull_request(
    world, repo, forge, settings, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "feature"}}])
    policy = follow(repo, world, server)
    deployments = recorded_deployments(world, policy, [5, 60, 120, 500])
    # The branch lowers the limit from 100 to 50: the deployment at 60 would now be denied.
    commit = feature_commit(
        repo,
        {
            "policies/cost/main.rego": BRANCH_MAIN,
            "policies/cost/data.json": json.dumps({"limits": {"cost": 50}}),
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = push(policy, "feature", commit)
    assert response.status_code == 202 and response.json()["detail"] == "branch check queued", (
        response.content
    )

    assert server.problems == []
    status, lookup, comment = server.calls
    assert (status.method, status.path) == ("POST", f"/repos/org/policies/statuses/{commit}")
    assert status.headers["authorization"] == f"Bearer {TOKEN}"
    assert status.body["state"] == "success" and status.body["context"] == "policy-platform"
    assert status.body["target_url"] == f"{settings.PLATFORM_URL}/policies/{policy.pk}/"
    assert "tests 2/2 passed" in status.body["description"]
    assert "1 of 4 replayed decisions change" in status.body["description"]
    assert (lookup.method, lookup.path) == ("GET", f"/repos/org/policies/commits/{commit}/pulls")
    assert (comment.method, comment.path) == ("POST", "/repos/org/policies/issues/7/comments")
    text = comment.body["body"]
    assert "`feature`" in text and "2/2 passed" in text and "4 replayed, 1 decisions change" in text
    assert f"/deployments/{deployments[1].pk}/" in text  # the changed one, linked
    assert f"/deployments/{deployments[0].pk}/" not in text

    check = PolicyBranchCheck.objects.get()
    assert (check.branch, check.commit, check.status, check.passed) == ("feature", commit, "done", True)
    assert (check.report_state, check.change_request) == ("sent", 7)
    policy.refresh_from_db()
    assert policy.revisions.count() == 1 and policy.active_revision.commit != commit  # nothing stored

    # The sensitive value the branch's messages would quote reaches neither the forge nor the row.
    everything = json.dumps([call.body for call in server.calls]) + json.dumps(check.summary)
    assert PASSWORD not in everything


def test_a_failing_policy_test_posts_a_failure_status_to_a_gitlab_merge_request(
    world, repo, forge, django_capture_on_commit_callbacks
):
    server = forge("gitlab", requests_of_commit=[{"iid": 3, "state": "opened", "source_branch": "feature"}])
    policy = follow(repo, world, server)
    recorded_deployments(world, policy, [5, 500])
    # A limit of 1000 lets the 500 rise through: the test that expects a denial fails.
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 1000}})})
    with django_capture_on_commit_callbacks(execute=True):
        response = push(policy, "feature", commit, gitlab=True)
    assert response.status_code == 202, response.content

    assert server.problems == []
    status, lookup, note = server.calls
    assert (status.method, status.path) == ("POST", f"/api/v4/projects/42/statuses/{commit}")
    assert status.headers["private-token"] == TOKEN and "authorization" not in status.headers
    assert status.body["state"] == "failed" and status.body["name"] == "policy-platform"
    assert lookup.path == f"/api/v4/projects/42/repository/commits/{commit}/merge_requests"
    assert note.path == "/api/v4/projects/42/merge_requests/3/notes"
    assert "failed" in note.body["body"] and "`test_a_big_rise_is_denied`" in note.body["body"]
    check = PolicyBranchCheck.objects.get()
    assert (check.passed, check.report_state, check.change_request) == (False, "sent", 3)


def test_a_push_to_the_default_branch_syncs_as_before_and_reports_nothing(
    world, repo, forge, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "main"}}])
    policy = follow(repo, world, server)
    commit = repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 90}})})
    with django_capture_on_commit_callbacks(execute=True):
        response = push(policy, "main", commit)
    assert response.status_code == 202 and response.json()["detail"] == "sync queued"
    policy.refresh_from_db()
    assert policy.active_revision.commit == commit
    assert server.calls == [] and server.problems == []
    assert not PolicyBranchCheck.objects.exists()


def test_a_broken_token_is_a_recorded_report_failure(world, repo, forge, django_capture_on_commit_callbacks):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "feature"}}])
    policy = follow(repo, world, server, token="expired-token")
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    with django_capture_on_commit_callbacks(execute=True):
        response = push(policy, "feature", commit)
    assert response.status_code == 202
    assert server.calls == [] and server.problems == ["Bad credentials"]
    check = PolicyBranchCheck.objects.get()
    assert (check.status, check.passed, check.report_state) == ("done", True, "failed")
    assert "401" in check.report_error and "expired-token" not in check.report_error


def test_the_same_push_delivered_twice_is_checked_and_reported_once(
    world, repo, forge, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[])  # no pull request yet: a status only
    policy = follow(repo, world, server)
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            push(policy, "feature", commit)
    assert [call.method for call in server.calls] == ["POST", "GET"] and server.problems == []
    check = PolicyBranchCheck.objects.get()
    assert (check.report_state, check.change_request) == ("sent", None)


def test_without_a_review_api_a_feature_push_is_ignored(world, repo, django_capture_on_commit_callbacks):
    policy = follow(repo, world, None)
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = push(policy, "feature", commit)
    assert response.status_code == 202 and "ignored" in response.json()["detail"]
    assert callbacks == [] and not PolicyBranchCheck.objects.exists()


def test_a_check_whose_wake_up_was_lost_is_resent_by_the_sweep(
    world, repo, forge, settings, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "feature"}}])
    policy = follow(repo, world, server)
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    # Recorded in the row, the broker down: no worker woke.
    check = PolicyBranchCheck.objects.create(repository=policy.repository, branch="feature", commit=commit)
    PolicyBranchCheck.objects.filter(pk=check.pk).update(
        enqueued_at=timezone.now() - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS + 1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert branch_checks.resend_lost_branch_checks() == [check.pk]
    check.refresh_from_db()
    assert (check.status, check.report_state) == ("done", "sent")
    assert [call.path for call in server.calls][-1] == "/repos/org/policies/issues/7/comments"


def test_the_review_token_is_write_only_in_the_api(world, api, repo, forge):
    server = forge("github")
    policy = follow(repo, world, server)
    answer = api(world.admin).get(f"/api/v1/policy-repositories/{policy.repository_id}/").json()
    assert answer["has_review_token"] is True and "review_token" not in answer
    assert answer["review_api"] == "github" and answer["review_project"] == "org/policies"
    assert TOKEN not in json.dumps(answer)
    stored = PolicyRepository.objects.filter(pk=policy.repository_id).values_list("review_token", flat=True)
    assert list(stored) == [TOKEN]  # decrypted by the field; the column holds ciphertext
    call_command("check")


def test_a_review_api_on_a_refused_address_is_refused(
    world, repo, forge, settings, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "feature"}}])
    policy = follow(repo, world, server)
    settings.EGRESS_ALLOWED_NETWORKS = []  # loopback is an internal address again
    with pytest.raises(Invalid) as refused:
        repositories.save_repository(policy.repository, world.admin, review_api_url=server.url)
    assert list(refused.value.errors) == ["review_api_url"]
    # Saved while it was allowed, refused at the call: recorded, nothing sent.
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    with django_capture_on_commit_callbacks(execute=True):
        push(policy, "feature", commit)
    check = PolicyBranchCheck.objects.get()
    assert check.report_state == "failed" and "not allowed" in check.report_error
    assert server.calls == [] and server.problems == []


def test_the_policy_page_lists_the_checks_for_authors_only(
    world, repo, forge, client, django_capture_on_commit_callbacks
):
    server = forge("github", requests_of_commit=[{"number": 7, "state": "open", "head": {"ref": "feature"}}])
    policy = follow(repo, world, server)
    commit = feature_commit(repo, {"policies/cost/data.json": json.dumps({"limits": {"cost": 1000}})})
    with django_capture_on_commit_callbacks(execute=True):
        push(policy, "feature", commit)
    client.force_login(world.admin)
    page = client.get(f"/policies/{policy.pk}/").content.decode()
    assert "Pull request checks" in page and commit[:12] in page and "tests 1/2" in page and "(#7)" in page
    client.force_login(world.bob)
    page = client.get(f"/policies/{policy.pk}/")
    assert page.status_code != 200 or "Pull request checks" not in page.content.decode()
