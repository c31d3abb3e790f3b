"""Issue 7's four reproductions, as a new user meets them: saved and dry-run through the API with the
default engine, deciding as OPA 1.20 decides (and as env0, which reads package env0 only)."""

import pytest

from policies_app.models import ApprovalPolicy


def save(client, name, modules, rego_version="v0"):
    return client.post(
        "/api/v1/policies/",
        {
            "name": name,
            "rego_version": rego_version,
            "modules": [{"filename": filename, "source": source} for filename, source in modules],
        },
        format="json",
    )


def dry_run(client, policy_id, input_document):
    response = client.post(
        f"/api/v1/policies/{policy_id}/evaluate/", {"input": input_document}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def admin_client(world, api):
    return api(world.admin)


def test_a_function_defined_in_two_modules_is_saved_and_evaluated(admin_client):
    saved = save(
        admin_client,
        "split function",
        [
            ("a.rego", 'package env0\nallow[f("ok")] { true }\nf(x) := x\n'),
            ("b.rego", "package env0\nf(x) := x\n"),
        ],
    )
    assert saved.status_code == 201, saved.content
    result = dry_run(admin_client, saved.json()["id"], {})
    assert (result["decision"], result["allow"], result["error"]) == ("allow", ["ok"], None)


@pytest.mark.parametrize(
    ("source", "input_document"),
    [
        (
            'has_key(x, k) { _ = x[k] }\nallow["no cost"] { not has_key(input.costEstimation, "totalMonthlyCost") }',
            {},
        ),
        ('deny["not main"] { allowed = {"main"}; not allowed[input.deploymentRequest.revision] }', {}),
        ('allow["a"] { not startswith(input.a, "x") }', {}),
    ],
    ids=["cost-estimation-fails-open", "revision-may-be-missing", "builtin-argument"],
)
def test_a_negation_over_an_undefined_nested_reference_waits_as_in_opa(admin_client, source, input_document):
    saved = save(admin_client, "negation", [("main.rego", f"package env0\n{source}\n")])
    assert saved.status_code == 201, saved.content
    result = dry_run(admin_client, saved.json()["id"], input_document)
    assert result == {
        "decision": "pending",
        "deny": [],
        "pending": [],
        "warn": [],
        "allow": [],
        "error": None,
    }


def test_a_call_to_an_undefined_function_is_refused_with_file_line_and_column(admin_client):
    saved = save(
        admin_client,
        "undefined function",
        [("main.rego", "package env0\npending[nosuch(1)] { count(input.approvers) < 1 }\n")],
    )
    assert saved.status_code == 400
    assert saved.json()["modules"] == ["main.rego:2:9: undefined function nosuch"]
    assert not ApprovalPolicy.objects.filter(name="undefined function").exists()


def test_a_policy_in_another_package_than_env0_is_refused(admin_client):
    saved = save(
        admin_client,
        "other package",
        [
            (
                "main.rego",
                'package env0.multipleApprovals\npending["At least 2 approvals must be given."] { count(input.approvers) < 2 }\n',
            )
        ],
    )
    assert saved.status_code == 400
    [message] = saved.json()["modules"]
    assert message.startswith("main.rego:1: package env0.multipleApprovals:")
    assert "use `package env0`" in message


def test_a_body_without_braces_around_a_negation_is_saved_and_decides_as_opa(admin_client):
    """Issue 20: the negation rewrite broke `x if not input.a in {"b"}` ("Failed to parse rule-ref")."""
    saved = save(
        admin_client,
        "brace-less",
        [
            (
                "p.rego",
                'package env0\nis_prod if not input.policyData.env != "production"\n'
                'other if not input.a in {"b"}\n'
                'deny contains "production" if is_prod\npending contains "not b" if other\n',
            )
        ],
        rego_version="v1",
    )
    assert saved.status_code == 201, saved.content
    policy_id = saved.json()["id"]
    assert dry_run(admin_client, policy_id, {"policyData": {"env": "production"}})["deny"] == ["production"]
    # input.a missing: OPA moves it out of the negation, so `other` is undefined, not true.
    assert dry_run(admin_client, policy_id, {})["decision"] == "pending"
    assert dry_run(admin_client, policy_id, {"a": "c"})["pending"] == ["not b"]


def test_an_error_opa_never_reaches_does_not_stop_the_decision(admin_client):
    """Issue 20: regorus raised a type error in a body whose earlier expression is undefined (OPA stops
    there), so a deny that fired became an error; OPA decides, and formats messages as Go does."""
    saved = save(
        admin_client,
        "never reached",
        [
            (
                "p.rego",
                'package env0\nallowed := {"main": true}\ndeny contains "destroy" if input.type == "destroy"\n'
                'warn contains sprintf("%.2f %s", [input.cost, input.n]) if {\n'
                '  not allowed[input.missing]\n  not startswith(input.list, "x")\n}\n',
            )
        ],
        rego_version="v1",
    )
    assert saved.status_code == 201, saved.content
    policy_id = saved.json()["id"]
    result = dry_run(admin_client, policy_id, {"type": "destroy", "list": [1, 2], "cost": 15, "n": 2})
    assert (result["decision"], result["deny"], result["error"]) == ("deny", ["destroy"], None)
    result = dry_run(admin_client, policy_id, {"list": "abc", "missing": "other", "cost": 15, "n": 2})
    assert result["warn"] == ["%!f(int64=15) %!s(int64=2)"]  # as OPA (Go's fmt) writes it
