"""Policy tests on demand (``manage.py policy_test``, ``POST /api/v1/policies/{id}/test/``), tests on
save keeping a failing revision from being activated (and evaluations pinning the active one), the
editor's check, and the catalog: every entry's own tests, installing with validated parameters."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command

from policies_app.deployments.lifecycle import trigger_deployment
from policies_app.errors import Conflict
from policies_app.models import Deployment, Evaluation
from policies_app.policies import authoring, catalog
from tests.builders import make_policy, make_user

pytestmark = pytest.mark.django_db

POLICY = """package env0

import rego.v1

deny contains "too expensive" if input.costEstimation.monthlyCostDiff > 100

allow contains "cheap" if input.costEstimation.monthlyCostDiff <= 100
"""
TESTS = """package env0_test

import rego.v1

import data.env0

test_expensive_is_denied if {
	env0.deny["too expensive"] with input as {"costEstimation": {"monthlyCostDiff": 500}}
}

test_cheap_is_allowed if {
	env0.allow["cheap"] with input as {"costEstimation": {"monthlyCostDiff": 5}}
}
"""


def with_tests(name="cost", source=POLICY, tests=TESTS, **extra):
    return authoring.create_policy(
        name=name,
        modules=[
            {"filename": "main.rego", "source": source},
            {"filename": "main_test.rego", "source": tests},
        ],
        **extra,
    )


def test_policy_test_prints_each_result_and_the_coverage(world, capsys):
    with_tests()
    call_command("policy_test", "cost")
    out = capsys.readouterr().out
    assert "main_test.rego:7: env0_test.test_expensive_is_denied: PASS" in out
    assert "main_test.rego:11: env0_test.test_cheap_is_allowed: PASS" in out
    assert "PASS: 2/2" in out and "coverage main.rego: 100.0%" in out


def test_policy_test_fails_when_a_test_fails(world, capsys):
    policy = with_tests()
    authoring.revise_policy(
        policy,
        modules=[
            {"filename": "main.rego", "source": POLICY.replace("> 100", "> 1000")},
            {"filename": "main_test.rego", "source": TESTS},
        ],
    )
    with pytest.raises(CommandError, match="tests failed"):
        call_command("policy_test", str(policy.pk))
    out = capsys.readouterr().out
    assert "test_expensive_is_denied: FAIL" in out and "PASS: 1/2, FAIL: 1" in out
    call_command("policy_test", "cost", "--revision", "1")  # r1 still passes


def test_policy_test_names_an_unknown_policy(world):
    with pytest.raises(CommandError, match="no policy named 'nope'"):
        call_command("policy_test", "nope")


def test_the_api_runs_a_revisions_tests(world, api):
    policy = with_tests()
    world.platform.approval_policies.add(policy)
    response = api(world.vera).post(f"/api/v1/policies/{policy.pk}/test/", {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["revision"], body["passed"], body["test_files"]) == (1, True, ["main_test.rego"])
    assert [(r["name"], r["outcome"]) for r in body["results"]] == [
        ("test_expensive_is_denied", "pass"),
        ("test_cheap_is_allowed", "pass"),
    ]
    assert body["coverage"]["percent"] == 100.0


def test_a_revision_whose_tests_fail_is_recorded_but_evaluations_keep_the_active_one(
    world, api, django_capture_on_commit_callbacks
):
    policy = with_tests()
    world.platform.approval_policies.add(policy)
    response = api(world.admin).patch(
        f"/api/v1/policies/{policy.pk}/",
        {
            "modules": [
                {"filename": "main.rego", "source": POLICY.replace("> 100", "> 1000")},
                {"filename": "main_test.rego", "source": TESTS},
            ]
        },
        format="json",
    )
    body = response.json()
    assert (body["active_revision"], body["latest_revision"]["number"]) == (1, 2)
    assert body["latest_revision"]["not_activated_because"].startswith(
        "1 of its tests failed: test_expensive_is_denied"
    )
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, monthly_cost_diff=500)
    deployment.refresh_from_db()
    assert deployment.decision == "deny", "r1 (active) denies; r2 would have allowed"
    assert list(deployment.policy_revisions.values_list("number", flat=True)) == [1]


BROKEN_TESTS = "package env0_test\n\ntest_expensive_is_denied if { no_such_function(1) }\n"


def test_a_revision_whose_tests_could_not_run_is_recorded_but_never_activated(
    world, django_capture_on_commit_callbacks
):
    policy = with_tests()
    world.platform.approval_policies.add(policy)
    allowing = POLICY.replace("> 100", "> 1000")
    revision = authoring.revise_policy(
        policy,
        modules=[
            {"filename": "main.rego", "source": allowing},
            {"filename": "main_test.rego", "source": BROKEN_TESTS},
        ],
        user=world.admin,
    )
    assert (revision.number, revision.tests_status) == (2, "error")
    policy.refresh_from_db()
    assert policy.active_revision.number == 1
    assert authoring.refusal_to_activate(revision).message.startswith(
        "its tests could not run: main_test.rego:3"
    )
    with pytest.raises(Conflict) as refused:
        authoring.publish_revision(policy, revision, world.admin)
    assert refused.value.code == "tests_failed"
    policy.refresh_from_db()
    assert policy.active_revision.number == 1
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, monthly_cost_diff=500)
    deployment.refresh_from_db()
    assert deployment.decision == "deny", "r1 (active) denies; r2 would have allowed"


def test_a_new_policy_whose_tests_could_not_run_has_no_active_revision(world):
    policy = with_tests(tests=BROKEN_TESTS)
    assert policy.active_revision is None and policy.latest_revision.tests_status == "error"


def test_a_new_policy_whose_tests_fail_has_no_active_revision(world):
    policy = with_tests(source=POLICY.replace("> 100", "> 1000"))
    assert policy.active_revision is None and policy.latest_revision.tests_status == "failed"


def test_a_policy_without_an_active_revision_fails_deployments_closed_instead_of_being_skipped(
    world, django_capture_on_commit_callbacks
):
    # Skipped, it would leave no policy at all, and this environment approves plans automatically.
    world.environment.approve_plans_automatically = True
    world.environment.save()
    world.platform.approval_policies.add(with_tests(source=POLICY.replace("> 100", "> 1000")))
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, monthly_cost_diff=5000)
    deployment.refresh_from_db()
    assert deployment.status == "error"
    assert "has no active revision" in deployment.error


def test_the_editor_check_answers_file_line_and_column(world, api):
    client = api(world.admin)
    broken = client.post(
        "/api/v1/policies/check/",
        {
            "modules": [
                {"filename": "main.rego", "source": POLICY},
                {
                    "filename": "lib/x.rego",
                    "source": "package x\n\nimport rego.v1\n\ny if {\n\tnosuch(2)\n}\n",
                },
            ]
        },
        format="json",
    )
    assert broken.json() == {
        "problems": [{"file": "lib/x.rego", "line": 6, "column": 2, "message": "undefined function nosuch"}]
    }
    fine = client.post(
        "/api/v1/policies/check/", {"modules": [{"filename": "main.rego", "source": POLICY}]}, format="json"
    )
    assert fine.json() == {"problems": []}
    unnamed = client.post(
        "/api/v1/policies/check/", {"modules": [{"filename": "", "source": POLICY}]}, format="json"
    )
    assert unnamed.json()["problems"][0]["field"] == "modules"


def test_try_it_through_the_api_on_a_recorded_deployment_names_the_rules_that_fired(world, api):
    policy = make_policy("cost", POLICY)
    world.platform.approval_policies.add(policy)
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="approved"
    )
    Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"costEstimation": {"monthlyCostDiff": 500}}),
        decision="deny",
        engine="regorus",
    )
    response = api(world.vera).post(
        f"/api/v1/policies/{policy.pk}/evaluate/",
        {"deployment": deployment.pk, "explain": True},
        format="json",
    )
    body = response.json()
    assert (body["decision"], body["deny"], body["fired"]) == (
        "deny",
        ["too expensive"],
        [{"rule": "deny", "file": "main.rego", "line": 5}],
    )
    unseen = api(world.charlie).post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"deployment": deployment.pk}, format="json"
    )
    assert unseen.status_code == 404


def test_a_deployment_the_user_cannot_see_does_not_exist_for_try_it(world, api):
    policy = make_policy("cost", POLICY)
    unseen = Deployment.objects.create(environment=world.environment, deployer=world.bob, status="approved")
    Evaluation.objects.create(
        deployment=unseen, request_type="deploy", input_json="{}", decision="pending", engine="x"
    )
    author = make_user("author")  # a policy author by permission, with no role on any project
    author.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    response = api(author).post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"deployment": unseen.pk}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["deployment"]


@pytest.mark.parametrize("slug", sorted(catalog.catalog()))
def test_every_catalog_policy_passes_its_own_tests(world, slug):
    entry = catalog.entry(slug)
    tests = [name for name, _ in entry.modules if name.endswith("_test.rego")]
    assert tests, f"{slug} has no tests"
    parameters = {
        "require-team-approver": {"team": "security"},
        "cost-limits": {"approval_above": 100, "deny_above": 1000},
    }
    policy = catalog.install(slug, name=slug, parameters=parameters.get(slug), user=world.admin)
    revision = policy.active_revision
    assert revision is not None and revision.tests_status == "passed", revision.tests_report
    assert len(revision.tests_report["results"]) >= 4
    assert revision.tests_report["coverage"]["percent"] >= 85


def test_installing_from_the_catalog_validates_the_parameters(world, api):
    client = api(world.admin)
    listed = client.get("/api/v1/policies/catalog/").json()
    assert {entry["entry"] for entry in listed} == set(catalog.catalog())
    bad = client.post(
        "/api/v1/policies/install/",
        {
            "entry": "change-window",
            "name": "window",
            "parameters": {"timezone": "Mars/Olympus", "start_hour": 25},
        },
        format="json",
    )
    assert bad.status_code == 400
    assert bad.json() == {
        "parameters": [
            "start_hour: 25 is greater than the maximum of 23",
            "timezone: 'Mars/Olympus' is not a known timezone",
        ]
    }
    good = client.post(
        "/api/v1/policies/install/",
        {"entry": "change-window", "name": "window", "parameters": {"timezone": "Europe/Berlin"}},
        format="json",
    )
    assert good.status_code == 201, good.content
    assert good.json()["catalog_entry"] == "change-window"
    assert good.json()["latest_revision"]["data"]["policyData"]["days"][0] == "Monday"


def test_installed_parameters_decide_and_a_deployment_cannot_change_them(
    world, django_capture_on_commit_callbacks
):
    policy = catalog.install("require-approvers", name="three", parameters={"count": 3}, user=world.admin)
    world.platform.approval_policies.add(policy)
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, policy_data={"count": 0})
    deployment.refresh_from_db()
    assert (deployment.decision, deployment.messages["pending"]) == (
        "pending",
        ["0 of the 3 required approvals so far"],
    )


def test_an_advisory_policy_only_warns(world, django_capture_on_commit_callbacks):
    policy = make_policy("cost", POLICY)
    authoring.revise_policy(policy, enforcement="advisory")
    world.platform.approval_policies.add(policy)
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, monthly_cost_diff=500)
    deployment.refresh_from_db()
    assert (deployment.decision, deployment.messages["warn"]) == ("warn", ["[advisory] too expensive"])


def test_a_soft_mandatory_deny_waits_for_an_approver(world, django_capture_on_commit_callbacks):
    policy = make_policy("cost", POLICY)
    authoring.revise_policy(policy, enforcement="soft-mandatory")
    world.platform.approval_policies.add(policy)
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = trigger_deployment(world.environment, world.bob, plan=None, monthly_cost_diff=500)
    deployment.refresh_from_db()
    assert (deployment.decision, deployment.messages["pending"]) == (
        "pending",
        ["[soft-mandatory] too expensive"],
    )
