"""The editor's check and "Try it" on text not saved (issue 19), as the lowest role that reaches them (a
policy author with no role on any project) and refused to those who may not edit the policy. The text runs
under the same capability list as a save, on the dry-run pool, and nothing is stored."""

import pytest
from django.contrib.auth.models import Permission

from policies_app.models import ApprovalPolicy, PolicyRevision
from tests.builders import make_policy, make_user

pytestmark = pytest.mark.django_db

SAVED = 'package env0\n\nimport rego.v1\n\npending contains "look" if input.size > 3\n'
UNSAVED = 'package env0\n\nimport rego.v1\n\ndeny contains "too big" if input.size > 3\n'
BROKEN = 'package env0\n\nimport rego.v1\n\ndeny contains "too big" if input.size > 3 }\n\nallow contains "x" if true\n'


@pytest.fixture
def paula(world):
    """A policy author with no role on any project: the lowest role that may edit a policy."""
    author = make_user("paula")
    author.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    return author


@pytest.fixture
def policy(world):
    made = make_policy("size", SAVED)
    world.platform.approval_policies.add(made)  # Platform's members see it
    return made


def modules(source: str) -> list[dict[str, str]]:
    return [{"filename": "main.rego", "source": source}]


def test_the_check_of_unsaved_text_names_the_line_and_column(api, paula, policy):
    answer = api(paula).post(
        "/api/v1/policies/check/", {"policy": policy.pk, "modules": modules(BROKEN)}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    [problem] = answer.json()["problems"]
    assert (problem["file"], problem["line"]) == ("main.rego", 5)
    assert problem["column"] and problem["message"]

    fixed = api(paula).post(
        "/api/v1/policies/check/", {"policy": policy.pk, "modules": modules(UNSAVED)}, format="json"
    )
    assert fixed.json() == {"problems": []}


def test_the_check_is_refused_to_who_may_not_edit_and_to_a_synced_policy(api, world, paula, policy):
    body = {"policy": policy.pk, "modules": modules(UNSAVED)}
    assert api(world.vera).post("/api/v1/policies/check/", body, format="json").status_code == 403
    missing = api(paula).post("/api/v1/policies/check/", {**body, "policy": 999_999}, format="json")
    assert missing.status_code == 404
    from policies_app.models import PolicyRepository

    repository = PolicyRepository.objects.create(name="policies", url="https://example.com/policies.git")
    ApprovalPolicy.objects.filter(pk=policy.pk).update(repository=repository)
    synced = api(paula).post("/api/v1/policies/check/", body, format="json")
    assert synced.status_code == 403
    assert "synced from the repository" in synced.json()["detail"]


def test_try_it_runs_the_unsaved_text_and_stores_nothing(api, paula, policy):
    tried = api(paula).post(
        f"/api/v1/policies/{policy.pk}/try-unsaved/",
        {"modules": modules(UNSAVED), "input": {"size": 5}, "explain": True},
        format="json",
    )
    assert tried.status_code == 200, tried.json()
    answer = tried.json()
    assert answer["decision"] == "deny" and answer["deny"] == ["too big"]  # the saved text says pending
    assert [rule["line"] for rule in answer["fired"]] == [5]
    assert PolicyRevision.objects.filter(policy=policy).count() == 1

    advisory = api(paula).post(
        f"/api/v1/policies/{policy.pk}/try-unsaved/",
        {"modules": modules(UNSAVED), "input": {"size": 5}, "enforcement": "advisory"},
        format="json",
    )
    assert advisory.json()["decision"] == "warn", "the editor's enforcement level counts as on save"


def test_try_it_on_unsaved_text_runs_under_the_capability_list(api, paula, policy):
    calls_out = "package env0\n\nimport rego.v1\n\ndeny contains x if {\n\tx := opa.runtime()\n}\n"
    tried = api(paula).post(
        f"/api/v1/policies/{policy.pk}/try-unsaved/",
        {"modules": modules(calls_out), "input": {}},
        format="json",
    )
    assert tried.status_code == 200, tried.json()
    assert tried.json()["decision"] == "error"
    assert "opa.runtime" in tried.json()["error"]


def test_try_it_on_unsaved_text_is_refused_to_who_may_not_edit(api, world, policy):
    body = {"modules": modules(UNSAVED), "input": {"size": 5}}
    url = f"/api/v1/policies/{policy.pk}/try-unsaved/"
    assert api(world.vera).post(url, body, format="json").status_code == 403  # sees it, may not edit it
    assert api(world.charlie).post(url, body, format="json").status_code == 404  # does not see it


def test_try_it_on_unsaved_text_refuses_invalid_content(api, paula, policy):
    tried = api(paula).post(
        f"/api/v1/policies/{policy.pk}/try-unsaved/",
        {"modules": [{"filename": "main.txt", "source": UNSAVED}], "input": {}},
        format="json",
    )
    assert tried.status_code == 400
    assert "must end with .rego" in str(tried.json())
