"""Requirements, not just reasons: a policy declares what clears it (OPA METADATA ``custom``), and the
API, the page and the approval emails show each requirement with its state and who can satisfy it; after
a rejection the reasons shown are the final ones."""

import pytest
from django.core import mail

from policies_app.deployments.requirements import RequirementDeclarationError, declared_requirements
from tests.builders import make_policy, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

# Two approvals, one of them from the security team, as the METADATA says and the Rego decides.
PRODUCTION = """# METADATA
# title: Production changes
# custom:
#   approvals: 2
#   team: security team
package env0

import rego.v1

import data.lib.approvals

pending contains "two approvals are needed" if count(input.approvers) < 2

pending contains "an approver from the security team is needed" if approvals.count_in_team("security team") < 1

allow contains "two approvals, one from security" if {
	count(input.approvers) >= 2
	approvals.count_in_team("security team") >= 1
}
"""

# Waits only for deletes: its requirement is shown only when it waited.
DELETES = """# METADATA
# custom:
#   requirements:
#     - team: security team
#       title: a security review of deletions
package env0

import rego.v1

deletes if {
	some change in input.plan.resource_changes
	"delete" in change.change.actions
}

pending contains "deletes need security" if {
	deletes
	not security
}

allow contains "nothing is deleted" if not deletes

allow contains "security approved" if security

security if {
	some approver in input.approvers
	some team in approver.teams
	team.name == "security team"
}
"""


def trigger(api, world, **body):
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", body, format="json"
    )
    assert response.status_code in (200, 201), response.json()
    return api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()


def by_requirement(body):
    return {r["requirement"]: r for r in body["requirements"]}


def test_the_api_shows_each_requirement_with_its_state_and_who_can_satisfy_it(world, api):
    world.platform.approval_policies.add(make_policy("production", PRODUCTION))
    body = trigger(api, world)
    assert body["status"] == "pending_approval"
    shown = by_requirement(body)
    assert shown["2 approvals"]["summary"] == "0/2 approvals ✗"
    assert shown["2 approvals"]["may_satisfy"] == ["admin", "alice", "sam"]
    assert shown["security team"]["summary"] == "security team 0/1 ✗"
    assert shown["security team"]["may_satisfy"] == ["sam"]
    assert {r["policy"] for r in body["requirements"]} == {"production"}

    after_alice = (
        api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    )
    shown = by_requirement(after_alice)
    assert shown["2 approvals"]["summary"] == "1/2 approvals ✗"
    assert shown["2 approvals"]["approved_by"] == ["alice"]
    assert shown["2 approvals"]["may_satisfy"] == ["admin", "sam"]
    assert (shown["security team"]["approved"], shown["security team"]["may_satisfy"]) == (0, ["sam"])

    after_sam = api(world.sam).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json").json()
    assert after_sam["status"] == "approved"
    shown = by_requirement(after_sam)
    assert shown["2 approvals"]["summary"] == "2/2 approvals ✓"
    assert shown["security team"] == {
        **shown["security team"],
        "met": True,
        "approved_by": ["sam"],
        "may_satisfy": [],
    }
    # A list does not compute progress (a query per row).
    listed = api(world.bob).get("/api/v1/deployments/").json()["results"][0]
    assert listed["requirements"] is None


def test_a_requirement_is_shown_only_when_its_policy_waited(world, api):
    world.platform.approval_policies.add(make_policy("deletes", DELETES))
    creation = trigger(api, world, plan=plan_with(("aws_s3_bucket.logs", ["create"])))
    assert (creation["status"], creation["requirements"]) == ("approved", [])
    api(world.bob).post(
        f"/api/v1/deployments/{creation['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    deletion = trigger(api, world, plan=plan_with(("aws_s3_bucket.logs", ["delete"])))
    assert [r["summary"] for r in deletion["requirements"]] == ["a security review of deletions 0/1 ✗"]
    released = api(world.sam).post(f"/api/v1/deployments/{deletion['id']}/approve/", {}, format="json").json()
    assert released["status"] == "approved"
    assert [r["summary"] for r in released["requirements"]] == ["a security review of deletions 1/1 ✓"]


def test_after_a_rejection_the_reasons_are_the_final_ones(world, api, client):
    world.platform.approval_policies.add(make_policy("production", PRODUCTION))
    body = trigger(api, world)
    rejected = (
        api(world.alice)
        .post(f"/api/v1/deployments/{body['id']}/reject/", {"comment": "not on a Friday"}, format="json")
        .json()
    )
    assert rejected["status"] == "rejected"
    assert rejected["decision"] == "deny"
    assert rejected["messages"] == {
        "deny": ["rejected by alice: not on a Friday"],
        "pending": [],
        "warn": [],
        "allow": [],
    }
    # The policies' reasons stay in the evaluation that gave them.
    assert "two approvals are needed" in rejected["evaluations"][-1]["messages"]["pending"]
    client.force_login(world.vera)
    page = client.get(f"/deployments/{body['id']}/").content.decode()
    why = page.split("<h2>Why</h2>")[1].split("</div>")[0]
    assert "rejected by alice: not on a Friday" in why
    assert "two approvals are needed" not in why


def test_the_page_shows_requirements_and_who_can_clear_them(world, api, client):
    world.platform.approval_policies.add(make_policy("production", PRODUCTION))
    body = trigger(api, world)
    api(world.alice).post(f"/api/v1/deployments/{body['id']}/approve/", {}, format="json")
    client.force_login(world.vera)
    page = client.get(f"/deployments/{body['id']}/").content.decode()
    assert "1/2 approvals ✗" in page
    assert "security team 0/1 ✗" in page
    assert "can be cleared by sam" in page
    assert "approved by alice" in page


def test_the_approval_email_lists_the_requirements(world, api):
    world.platform.approval_policies.add(make_policy("production", PRODUCTION))
    trigger(api, world)
    message = next(m for m in mail.outbox if m.to == ["alice@example.com"])
    assert "Required before it is released:" in message.body
    assert "  0/2 approvals ✗ (production): can be cleared by admin, alice, sam" in message.body
    assert "  security team 0/1 ✗ (production): can be cleared by sam" in message.body


def test_declarations_are_read_from_the_package_metadata_only():
    flat = declared_requirements([("main.rego", PRODUCTION)])
    assert flat == [{"approvals": 2}, {"approvals": 1, "team": "security team"}]
    listed = declared_requirements(
        [
            (
                "a.rego",
                "# METADATA\n# custom:\n#   requirements:\n#   - approvals: 2\n#     users: [alice, sam@example.com]\npackage env0\n",
            )
        ]
    )
    assert listed == [{"approvals": 2, "users": ["alice", "sam@example.com"]}]
    # A METADATA block on a rule, a test module and a module without one declare nothing.
    on_a_rule = "package env0\n\n# METADATA\n# custom:\n#   approvals: 3\nallow contains 1 if true\n"
    assert (
        declared_requirements(
            [("r.rego", on_a_rule), ("main_test.rego", PRODUCTION), ("x.rego", "package env0\n")]
        )
        == []
    )


@pytest.mark.parametrize(
    ("custom", "problem"),
    [
        ("approvals: two", "lib/x.rego: custom.approvals must be a whole number from 1 to 100"),
        ("approvals: 0", "custom.approvals must be a whole number"),
        ("team: []", "custom.team must be a name or a list of names"),
        ("requirements: [{teams: x}]", "custom.requirements[0]: unknown field teams"),
        ("approvals: [", "METADATA is not YAML"),
    ],
)
def test_a_declaration_that_cannot_be_understood_names_the_file_and_field(custom, problem):
    source = f"# METADATA\n# custom:\n#   {custom}\npackage env0\n"
    with pytest.raises(RequirementDeclarationError, match=problem.replace("[", r"\[")):
        declared_requirements([("lib/x.rego", source)])


def test_saving_a_policy_whose_declaration_cannot_be_understood_is_a_400_naming_the_file(world, api):
    source = "# METADATA\n# custom:\n#   approvals: two\npackage env0\n\nallow contains 1 if true\n"
    response = api(world.admin).post(
        "/api/v1/policies/",
        {"name": "bad", "rego_version": "v1", "modules": [{"filename": "main.rego", "source": source}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["modules"] == [
        "requirements: main.rego: custom.approvals must be a whole number from 1 to 100"
    ]


def test_a_catalog_policy_declares_its_requirements_from_its_parameters(world, api):
    from policies_app.models import ApprovalPolicy

    for entry, name, parameters in (
        ("require-approvers", "two approvers", {"count": 2}),
        ("require-team-approver", "security", {"team": "security team"}),
    ):
        response = api(world.admin).post(
            "/api/v1/policies/install/",
            {"entry": entry, "name": name, "parameters": parameters},
            format="json",
        )
        assert response.status_code == 201, response.json()
        world.platform.approval_policies.add(ApprovalPolicy.objects.get(name=name))
    body = trigger(api, world)
    assert sorted(r["summary"] for r in body["requirements"]) == ["0/2 approvals ✗", "security team 0/1 ✗"]


def test_a_declaration_may_read_the_policys_data_and_names_what_is_missing():
    source = "# METADATA\n# custom:\n#   approvals: data.policyData.count\n#   severity: data.elsewhere\npackage env0\n"
    assert declared_requirements([("a.rego", source)], {"policyData": {"count": 3}}) == [{"approvals": 3}]
    with pytest.raises(
        RequirementDeclarationError, match="a.rego: custom.approvals: data.policyData.count is not"
    ):
        declared_requirements([("a.rego", source)], {"policyData": {}})
