"""The policy pages: the editor (several modules, drafts, errors with file and line), revisions side by
side, "Try it" with the rules that fired, a failing test that keeps a revision from being activated
(and the page saying why), publishing, syncing, replays and the catalog."""

import json

import pytest
from django.urls import reverse

from policies_app.models import ApprovalPolicy, Deployment, Evaluation
from policies_app.policies import authoring
from tests.builders import make_policy
from tests.policies.test_policy_tests import POLICY as COST

pytestmark = pytest.mark.django_db

COST_TEST = """package env0_test

import rego.v1

import data.env0

test_expensive_is_denied if {
	env0.deny["too expensive"] with input as {"costEstimation": {"monthlyCostDiff": 500}}
}
"""


def signed_in(client, user):
    client.force_login(user)
    return client


def edit(client, policy, modules, button="save", **fields):
    data = {
        "name": policy.name if policy else fields.pop("name"),
        "description": "",
        "rego_version": "v1",
        "enforcement": "hard-mandatory",
        "data": "",
        "filename": [name for name, _ in modules],
        "source": [source for _, source in modules],
        button: "1",
        **fields,
    }
    url = reverse("web:policy-edit", args=[policy.pk]) if policy else reverse("web:policy-new")
    return client.post(url, data)


def test_an_author_creates_a_policy_with_a_module_and_its_tests(client, world):
    response = edit(
        signed_in(client, world.admin),
        None,
        [("main.rego", COST), ("main_test.rego", COST_TEST)],
        name="cost",
    )
    policy = ApprovalPolicy.objects.get(name="cost")
    assert response.status_code == 302 and response["Location"] == reverse(
        "web:policy-detail", args=[policy.pk]
    )
    assert policy.active_revision.tests_status == "passed"
    assert sorted(m.filename for m in policy.active_revision.modules.all()) == ["main.rego", "main_test.rego"]


def test_modules_are_renamed_added_and_removed_in_a_new_revision(client, world):
    policy = make_policy("cost", COST)
    helper = "package helpers\n\nimport rego.v1\n\nlimit := 100\n"
    edit(signed_in(client, world.admin), policy, [("cost/main.rego", COST), ("lib/helpers.rego", helper)])
    policy.refresh_from_db()
    assert policy.active_revision.number == 2
    assert sorted(m.filename for m in policy.active_revision.modules.all()) == [
        "cost/main.rego",
        "lib/helpers.rego",
    ]
    assert [m.filename for m in policy.revisions.get(number=1).modules.all()] == ["main.rego"], (
        "r1 is unchanged"
    )


def test_a_syntax_error_is_shown_with_file_and_line_and_nothing_is_saved(client, world):
    policy = make_policy("cost", COST)
    response = edit(signed_in(client, world.admin), policy, [("main.rego", COST + "\ndeny contains if {\n")])
    assert response.status_code == 400
    assert "main.rego:9" in response.content.decode()
    assert policy.revisions.count() == 1
    assert 'name="filename" value="main.rego"' in response.content.decode(), "the author's work is kept"


def test_a_draft_is_saved_but_not_activated(client, world):
    policy = make_policy("cost", COST)
    edit(signed_in(client, world.admin), policy, [("main.rego", COST.replace("100", "50"))], button="draft")
    policy.refresh_from_db()
    assert (policy.active_revision.number, policy.latest_revision.number, policy.latest_revision.draft) == (
        1,
        2,
        True,
    )
    page = client.get(reverse("web:policy-detail", args=[policy.pk])).content.decode()
    assert "Saved as a draft" in page


def test_a_revision_whose_tests_fail_is_recorded_not_activated_and_the_page_says_why(client, world):
    policy = authoring.create_policy(
        name="cost",
        modules=[
            {"filename": "main.rego", "source": COST},
            {"filename": "main_test.rego", "source": COST_TEST},
        ],
    )
    edit(
        signed_in(client, world.admin),
        policy,
        [("main.rego", COST.replace("> 100", "> 1000")), ("main_test.rego", COST_TEST)],
    )
    policy.refresh_from_db()
    assert (policy.active_revision.number, policy.latest_revision.tests_status) == (1, "failed")
    page = client.get(reverse("web:policy-detail", args=[policy.pk])).content.decode()
    assert (
        "r2: Recorded but not activated: 1 of its tests failed: test_expensive_is_denied (main_test.rego:7) failed."
        in page
    )
    published = client.post(reverse("web:policy-publish", args=[policy.pk]), {"revision": 2})
    assert published.status_code == 409 and "r2 cannot be published" in published.content.decode()


def test_the_editor_is_for_authors_only(client, world):
    policy = make_policy("cost", COST)
    response = signed_in(client, world.alice).get(reverse("web:policy-edit", args=[policy.pk]))
    assert response.status_code == 403
    assert signed_in(client, world.admin).get(reverse("web:policy-edit", args=[policy.pk])).status_code == 200


def test_two_revisions_side_by_side(client, world):
    policy = make_policy("cost", COST)
    world.platform.approval_policies.add(policy)
    authoring.revise_policy(
        policy, modules=[{"filename": "main.rego", "source": COST.replace("> 100", "> 150")}], data={"x": 1}
    )
    response = signed_in(client, world.vera).get(
        reverse("web:policy-diff", args=[policy.pk]), {"old": 1, "new": 2}
    )
    assert response.status_code == 200
    [changed] = [f for f in response.context["files"] if f.filename == "main.rego"]
    [row] = [r for r in changed.rows if r.kind == "changed"]
    assert (row.left_number, row.right_number) == (5, 5)
    assert "> 100" in row.left and "> 150" in row.right
    assert {f.filename: f.status for f in response.context["files"]}["(data)"] == "added"


def test_try_it_on_a_pasted_input_names_the_rules_that_fired(client, world):
    policy = make_policy("cost", COST)
    world.platform.approval_policies.add(policy)
    response = signed_in(client, world.vera).post(
        reverse("web:policy-detail", args=[policy.pk]),
        {"revision": 1, "input_json": json.dumps({"costEstimation": {"monthlyCostDiff": 500}})},
    )
    result = response.context["result"]
    assert (result["decision"], result["deny"]) == ("deny", ["too expensive"])
    assert result["fired"] == [{"rule": "deny", "file": "main.rego", "line": 5}]
    assert "main.rego:5" in response.content.decode()


def test_try_it_on_the_recorded_input_of_a_past_deployment(client, world):
    policy = make_policy("cost", COST)
    world.platform.approval_policies.add(policy)
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="approved"
    )
    Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"costEstimation": {"monthlyCostDiff": 20}}),
        decision="allow",
        engine="regorus",
    )
    alice = signed_in(client, world.alice)
    page = alice.get(reverse("web:policy-detail", args=[policy.pk]))
    assert (deployment.pk, f"#{deployment.pk} prod deploy") in [
        (value, label.split(" (")[0])
        for value, label in page.context["form"].fields["deployment"].choices[1:]
    ]
    response = alice.post(
        reverse("web:policy-detail", args=[policy.pk]), {"revision": 1, "deployment": deployment.pk}
    )
    assert response.context["result"]["allow"] == ["cheap"]
    assert response.context["result"]["fired"] == [{"rule": "allow", "file": "main.rego", "line": 7}]


def test_the_revision_page_marks_the_lines_the_tests_covered(client, world):
    policy = authoring.create_policy(
        name="cost",
        modules=[
            {"filename": "main.rego", "source": COST},
            {"filename": "main_test.rego", "source": COST_TEST},
        ],
    )
    response = signed_in(client, world.admin).get(reverse("web:policy-revision", args=[policy.pk, 1]))
    [main] = [m for m in response.context["modules"] if m["filename"] == "main.rego"]
    marks = {number: mark for number, _, mark in main["lines"]}
    assert (marks[5], marks[7]) == ("covered", "missed")


def test_publishing_an_older_revision_rolls_back(client, world):
    policy = make_policy("cost", COST)
    authoring.revise_policy(policy, data={"x": 1})
    response = signed_in(client, world.admin).post(
        reverse("web:policy-publish", args=[policy.pk]), {"revision": 1}
    )
    policy.refresh_from_db()
    assert response.status_code == 302 and policy.active_revision.number == 1


def test_publishing_is_for_authors_only(client, world):
    policy = make_policy("cost", COST)
    world.platform.approval_policies.add(policy)
    authoring.revise_policy(policy, data={"x": 1}, draft=True)
    response = signed_in(client, world.alice).post(
        reverse("web:policy-publish", args=[policy.pk]), {"revision": 2}
    )
    policy.refresh_from_db()
    assert response.status_code == 403 and policy.active_revision.number == 1


def test_the_catalog_installs_a_policy_with_validated_parameters(client, world):
    admin = signed_in(client, world.admin)
    page = admin.get(reverse("web:policy-catalog"))
    assert page.status_code == 200 and "Require N approvers" in page.content.decode()
    bad = admin.post(
        reverse("web:policy-catalog"),
        {
            "entry": "require-approvers",
            "require-approvers-name": "two",
            "require-approvers-count": "0",
        },
    )
    assert bad.status_code == 400 and "0 is less than the minimum of 1" in bad.content.decode()
    installed = admin.post(
        reverse("web:policy-catalog"),
        {
            "entry": "require-approvers",
            "require-approvers-name": "two",
            "require-approvers-count": "2",
        },
    )
    policy = ApprovalPolicy.objects.get(name="two")
    assert installed.status_code == 302
    assert (policy.active_revision.data, policy.active_revision.tests_status) == (
        {"policyData": {"count": 2}},
        "passed",
    )
