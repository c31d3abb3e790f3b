"""What a policy can read decides what it is given. On OPA, each policy is given only the top-level parts of the input it can read (the bindings convert
the whole input again on every query): what it reads, and so what it decides, must be the same as with
the whole input. A policy that may read the input as a whole gets all of it. On regorus, only a policy
that may read the shared library is compiled with it."""

import json

import pytest

from policies_app.rego import PolicyModule, PolicySource, evaluate_policies
from policies_app.rego.engines import input_keys, reaches_library
from policies_app.rego.prepare import policy_payload, prepare_policy

INPUT = json.dumps(
    {
        "approvers": [{"name": "Bob"}],  # without an email: no approver for the library
        "plan": {"resource_changes": [{"address": "a.b", "change": {"actions": ["delete"]}}]},
        "deploymentRequest": {"type": "deploy"},
        "weird key": 1,
    }
)


def source(text: str, version: str = "v1") -> PolicySource:
    return PolicySource(
        "p@1", "p", version, (PolicyModule("policy.rego", f"package env0\n\n{text}\n"),), None
    )


def keys_of(text: str, version: str = "v1"):
    return input_keys(prepare_policy(policy_payload(source(text, version))))


@pytest.mark.parametrize(
    "text, expected",
    [
        ('deny contains "x" if input.plan.resource_changes[_].change.actions[_] == "delete"', {"plan"}),
        (
            'deny contains "x" if { input["weird key"] == 1; count(input.approvers) > 0 }',
            {"weird key", "approvers"},
        ),
        (
            "import input.deploymentRequest as request\ndeny contains request.type if true",
            {"deploymentRequest"},
        ),
        ('deny contains "x" if { some k; input[k] }', None),
        ('deny contains "x" if count(input) == 4', None),
        ('deny contains "x" if { object.keys(input) }', None),
        ('deny contains "x" if { y := data.env0.z with input as {} }\nz := 1', None),
        ('deny contains "input.plan" if true # input', set()),  # a string or a comment reads nothing
        ('deny contains "x" if data.lib.tfplan.deleted[_]', "library"),
        ('deny contains "x" if data["lib"].tfplan.deleted[_]', "library"),
    ],
)
def test_what_a_policy_can_read_of_the_input(text, expected):
    found = keys_of(text)
    if expected == "library":
        assert found is not None and {"plan", "approvers"} <= found
    else:
        assert found == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize(
    "text, decision, messages",
    [
        ('deny contains "four parts" if count(input) == 4', "deny", ["four parts"]),
        ('deny contains k if { some k, _ in input; k == "weird key" }', "deny", ["weird key"]),
        ('deny contains sprintf("%v", [count(object.keys(input))]) if true', "deny", ["4"]),
        ('deny contains "no plan" if not input.plan', None, []),
        (
            'deny contains a.address if { some a in input.plan.resource_changes; "delete" in a.change.actions }',
            "deny",
            ["a.b"],
        ),
        (
            'pending contains "one approver" if { count(input["approvers"]) == 1; not input.costEstimation }',
            "pending",
            ["one approver"],
        ),
    ],
)
def test_a_policy_decides_on_opa_as_over_the_whole_input_and_as_on_regorus(text, decision, messages):
    for engine in ("opa", "regorus"):
        result = evaluate_policies([source(text)], INPUT, engine)
        assert result.error is None, (engine, result.error)
        [outcome] = result.outcomes
        assert (outcome.decision, outcome.messages["deny"] + outcome.messages["pending"]) == (
            decision,
            messages,
        ), engine


def test_policies_reading_different_parts_share_one_evaluation_on_opa():
    policies = [
        PolicySource(
            f"p{n}@1", f"p{n}", "v1", (PolicyModule("policy.rego", f"package env0\n\n{text}\n"),), None
        )
        for n, text in enumerate(
            [
                'deny contains "whole" if count(input) == 4',
                "warn contains a.name if { some a in input.approvers }",
                'pending contains "deploy" if input.deploymentRequest.type == "deploy"',
                'allow contains "nothing read" if true',
            ]
        )
    ]
    result = evaluate_policies(policies, INPUT, "opa")
    assert [(o.decision, sum(o.messages.values(), [])) for o in result.outcomes] == [
        ("deny", ["whole"]),
        ("warn", ["Bob"]),
        ("pending", ["deploy"]),
        ("allow", ["nothing read"]),
    ]


@pytest.mark.parametrize(
    "text, reaches",
    [
        ('deny contains "x" if input.plan', False),
        ('deny contains "x" if data.env0.y\ny := input.a', False),
        ("import data.lib.tfplan\ndeny contains r if some r in tfplan.deletes", True),
        ('deny contains "x" if count(data.lib.approvals.approvers) > 1', True),
        ('deny contains "x" if data["lib"]', True),
    ],
)
def test_only_a_policy_that_may_read_the_library_is_compiled_with_it(text, reaches):
    assert reaches_library(prepare_policy(policy_payload(source(text)))) is reaches


def test_policies_with_and_without_the_library_in_one_evaluation_decide_as_on_opa():
    with_library = PolicySource(
        "lib@1",
        "lib",
        "v1",
        (
            PolicyModule(
                "policy.rego",
                "package env0\n\nimport data.lib.approvals\n\n"
                'deny contains "no approver" if count(approvals.distinct_approvers_other_than_deployer) == 0\n',
            ),
        ),
        None,
    )
    without = source('warn contains "one approver" if count(input.approvers) == 1')
    for engine in ("regorus", "opa"):
        result = evaluate_policies([without, with_library, without], INPUT, engine)
        assert [o.decision for o in result.outcomes] == ["warn", "deny", "warn"], (engine, result.error)
