"""Issue 16, finding 2: a builtin that reaches out of the engine (``http.send``, a JSON schema's ``$ref``)
is refused in every module the platform compiles, its tests included, on every surface that compiles
one: saving through the API, syncing from a real git repository (on demand, on schedule, through the
signed push webhook), the editor's check, drafts replayed, "try it" and ``manage.py policy_test``.
Each test points the module at a real HTTP server on loopback and checks that nothing reached it."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import transaction

from policies_app import rego
from policies_app.choices import Role
from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy, Deployment, Evaluation, PolicyReplay, ProjectMembership
from policies_app.policies import authoring
from policies_app.policies.git import repositories, sources
from policies_app.tasks import sync_policy_repositories_task
from tests.builders import make_user
from tests.git_repos import GitRepo
from tests.policies.test_push_webhooks import SECRET, github, push_body
from tests.policies.test_sync import DATA, MAIN, MAIN_TEST
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db

POLICY = """package env0

import rego.v1

deny contains "too expensive" if input.costEstimation.monthlyCostDiff > 100

allow contains "cheap" if input.costEstimation.monthlyCostDiff <= 100
"""
# Line 8, column 7 is where the test names http.send: every refusal below points there.
SENDING_TEST = """package env0_test

import rego.v1

import data.env0

test_cheap_is_allowed if {{
	r := http.send({{"method": "post", "url": "{url}", "raw_body": "sent by a policy test"}})
	env0.allow["cheap"] with input as {{"costEstimation": {{"monthlyCostDiff": r.status_code}}}}
}}
"""
REFUSED_AT = "main_test.rego:8:7: http.send reaches the network"
# A test that passes, for a policy saved before a revision brings the one above.
MAIN_TEST_FOR_POLICY = """package env0_test

import rego.v1

import data.env0

test_cheap_is_allowed if env0.allow["cheap"] with input as {"costEstimation": {"monthlyCostDiff": 5}}
"""


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def author(world):
    """A policy author by permission, with no role on any project: the lowest role that writes policies."""
    user = make_user("author")
    user.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    return user


def modules(test_source: str) -> list[dict[str, str]]:
    return [
        {"filename": "main.rego", "source": POLICY},
        {"filename": "main_test.rego", "source": test_source},
    ]


def stored_without_a_check(name: str, files: dict[str, str]) -> ApprovalPolicy:
    """A revision as one stored before the capability list existed: written without the engine's check."""
    policy = ApprovalPolicy.objects.create(name=name)
    content = authoring.validated_content(
        "v1", [{"filename": f, "source": s} for f, s in files.items()], None
    )
    with transaction.atomic():
        authoring.store_revision(policy, content, rego.PolicyTestReport(), user=None)
    return policy


# ------------------------------------------------------------------------------------ saving (API)


def test_saving_a_policy_whose_test_calls_http_send_is_refused_and_nothing_is_sent(api, author, receiver):
    response = api(author).post(
        "/api/v1/policies/",
        {"name": "cost", "modules": modules(SENDING_TEST.format(url=receiver.url))},
        format="json",
    )
    assert response.status_code == 400, response.content
    [problem] = response.json()["modules"]
    assert problem.startswith(REFUSED_AT)
    assert not ApprovalPolicy.objects.exists()
    assert receiver.received == []


def test_revising_a_policy_with_such_a_test_is_refused_and_keeps_the_revision_in_force(api, author, receiver):
    policy = authoring.create_policy(name="cost", modules=modules(MAIN_TEST_FOR_POLICY), user=author)
    response = api(author).patch(
        f"/api/v1/policies/{policy.pk}/",
        {"modules": modules(SENDING_TEST.format(url=receiver.url)), "draft": True},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["modules"][0].startswith(REFUSED_AT)
    assert list(policy.revisions.values_list("number", flat=True)) == [1]
    assert receiver.received == []


# ------------------------------------------------------------------------------------------ syncing


@pytest.fixture
def repo(tmp_path, repository_cache, local_repositories_allowed) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "main_test.rego": MAIN_TEST, "data.json": DATA})
    return repo


@pytest.fixture
def followed(world, author, repo):
    repository = repositories.save_repository(
        None, world.admin, name="r", url=repo.url, webhook_secret=SECRET
    )
    return sources.create_synced_policy(name="cost", repository=repository, revision="main", user=author)


def pushed_sending_test(repo: GitRepo, receiver: Receiver) -> str:
    sending = SENDING_TEST.replace("test_cheap_is_allowed", "test_reaches_out").format(url=receiver.url)
    return repo.commit({"sending_test.rego": sending}, "a test that reaches out")


def assert_recorded_refusal(policy: ApprovalPolicy, commit: str, receiver: Receiver) -> None:
    policy.refresh_from_db()
    assert policy.sync_error.startswith(f"at commit {commit[:12]}: modules: sending_test.rego:8:7: http.send")
    assert (policy.revisions.count(), policy.active_revision.number) == (1, 1)
    assert receiver.received == []


def test_following_a_folder_whose_test_calls_http_send_is_refused(world, author, repo, receiver):
    pushed_sending_test(repo, receiver)
    repository = repositories.save_repository(None, world.admin, name="r", url=repo.url)
    with pytest.raises(Invalid) as caught:
        sources.create_synced_policy(name="cost", repository=repository, revision="main", user=author)
    assert caught.value.errors["modules"][0].startswith(
        "sending_test.rego:8:7: http.send reaches the network"
    )
    assert not ApprovalPolicy.objects.exists()
    assert receiver.received == []


def test_a_sync_that_brings_such_a_test_is_a_recorded_failure(author, repo, followed, receiver):
    commit = pushed_sending_test(repo, receiver)
    [outcome] = sources.sync_policy(followed, user=author)
    assert outcome.revision is None and "http.send" in outcome.errors["modules"][0]
    assert_recorded_refusal(followed, commit, receiver)


def test_the_scheduled_sync_refuses_it_too(repo, followed, receiver):
    commit = pushed_sending_test(repo, receiver)
    sync_policy_repositories_task()
    assert_recorded_refusal(followed, commit, receiver)


def test_an_unauthenticated_push_with_a_valid_signature_refuses_it_too(
    repo, followed, receiver, django_capture_on_commit_callbacks
):
    commit = pushed_sending_test(repo, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        response = github(followed, push_body(after=commit))
    assert response.status_code == 202
    assert_recorded_refusal(followed, commit, receiver)


# -------------------------------------------------------------------------- the editor's check


@pytest.mark.parametrize(
    ("call", "builtin"),
    [
        ('http.send({"method": "post", "url": "URL"})', "http.send"),
        ('json.match_schema({}, {"$ref": "URL"})', "json.match_schema"),
        ("opa.runtime()", "opa.runtime"),
    ],
)
def test_the_editors_check_refuses_a_refused_builtin_in_a_test_module(api, author, receiver, call, builtin):
    tests = f"package env0_test\n\nimport rego.v1\n\ntest_x if {{\n\tx := {call.replace('URL', receiver.url)}\n}}\n"
    response = api(author).post("/api/v1/policies/check/", {"modules": modules(tests)}, format="json")
    assert response.status_code == 200
    [problem] = response.json()["problems"]
    assert (problem["file"], problem["line"], problem["column"]) == ("main_test.rego", 6, 7)
    assert problem["message"].startswith(builtin)
    assert receiver.received == []


# ------------------------------------------------------- what runs a stored revision: replay, try it


SCHEMA_POLICY = """package env0

import rego.v1

deny contains "schema" if {{
	not json.match_schema(input, {{"$ref": "{url}"}})[0]
}}
"""


@pytest.fixture
def stored_schema_policy(world, receiver, settings):
    """A stored policy whose module fetches a schema: OPA would GET it from the server."""
    settings.POLICY_ENGINE = "opa"
    policy = stored_without_a_check("schema", {"main.rego": SCHEMA_POLICY.format(url=receiver.url)})
    world.platform.approval_policies.add(policy)
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="approved"
    )
    Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"costEstimation": {"monthlyCostDiff": 5}}),
        decision="allow",
        engine="opa",
    )
    return policy


def test_try_it_on_a_stored_revision_that_reaches_out_fails_closed_and_sends_nothing(
    api, world, receiver, stored_schema_policy
):
    # Vera only views the project the policy applies to: the lowest role that may try a policy.
    response = api(world.vera).post(
        f"/api/v1/policies/{stored_schema_policy.pk}/evaluate/",
        {"input": {"costEstimation": {"monthlyCostDiff": 5}}, "explain": True},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["decision"] == "error"
    assert body["error"].startswith("schema: main.rego:6:6: json.match_schema reaches the network")
    assert receiver.received == []


def test_replaying_a_stored_revision_that_reaches_out_records_errors_and_sends_nothing(
    api, author, receiver, stored_schema_policy, django_capture_on_commit_callbacks, world
):
    # A replay reads only deployments its requester may see (tests/guards/test_masking_everywhere.py): the
    # author also views the project, so the recorded deployment is replayed.
    ProjectMembership.objects.create(project=world.platform, user=author, role=Role.VIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(author).post(
            f"/api/v1/policies/{stored_schema_policy.pk}/replay/", {"revision": 1}, format="json"
        )
    assert response.status_code == 201, response.content
    replay = PolicyReplay.objects.get()
    assert (replay.status, replay.result["policy_errors"]) == ("done", 1)
    [changed] = replay.result["changed"]
    assert "json.match_schema reaches the network" in changed["after_policy"]["error"]
    assert receiver.received == []


def test_replaying_a_draft_whose_test_calls_http_send_is_refused(api, author, receiver, world):
    policy = authoring.create_policy(name="cost", modules=modules(MAIN_TEST_FOR_POLICY), user=author)
    response = api(author).post(
        f"/api/v1/policies/{policy.pk}/replay/",
        {"modules": modules(SENDING_TEST.format(url=receiver.url))},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["modules"][0].startswith(REFUSED_AT)
    assert not PolicyReplay.objects.exists()
    assert receiver.received == []


# ------------------------------------------------------------------- running a stored revision's tests


def test_policy_test_on_a_stored_revision_whose_test_calls_http_send_runs_no_test(receiver, capsys):
    stored_without_a_check(
        "cost", {"main.rego": POLICY, "main_test.rego": SENDING_TEST.format(url=receiver.url)}
    )
    with pytest.raises(CommandError, match="the tests could not run"):
        call_command("policy_test", "cost")
    assert f"ERROR cost: {REFUSED_AT}" in capsys.readouterr().out
    assert receiver.received == []


def test_the_api_test_run_of_such_a_revision_runs_no_test(api, world, receiver):
    policy = stored_without_a_check(
        "cost", {"main.rego": POLICY, "main_test.rego": SENDING_TEST.format(url=receiver.url)}
    )
    world.platform.approval_policies.add(policy)
    response = api(world.vera).post(f"/api/v1/policies/{policy.pk}/test/", {}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["passed"], body["results"]) == (False, [])
    assert (body["error"]["file"], body["error"]["line"], body["error"]["column"]) == ("main_test.rego", 8, 7)
    assert receiver.received == []
