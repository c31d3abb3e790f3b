"""On OPA, the policies of one evaluation are decided by one query over the input read once, each under a
namespace of its own (engines.py); each must decide exactly as when evaluated alone, and an error of one
policy must still be exactly that policy's own error, the others deciding."""

import json

import pytest

from policies_app.rego import PolicyModule, PolicySource, evaluate_policies
from policies_app.rego.engines import OpaAdapter, namespaced
from policies_app.rego.prepare import policy_payload, prepare_policy
from tests.engine.rego_differential import CORPUS, INPUTS, generated_case

CASES = [*CORPUS, *(generated_case(seed) for seed in range(40))]


def alone(case_source: PolicySource, input_json: str):
    [outcome] = evaluate_policies([case_source], input_json, "opa", timeout_s=60).outcomes
    return outcome


@pytest.fixture(scope="module")
def decidable():
    """The cases OPA decides on every input when evaluated alone (not refused, no error)."""
    found = []
    for case in CASES:
        source = case.source()
        if all(alone(source, json.dumps(document)).error is None for document in INPUTS):
            found.append(source)
    assert len(found) > 40
    return found


def summary(outcome):
    return (outcome.decision, outcome.messages, str(outcome.error) if outcome.error else None)


@pytest.mark.parametrize("number", range(len(INPUTS)))
def test_the_corpus_in_one_query_decides_each_policy_as_alone(decidable, number):
    input_json = json.dumps(INPUTS[number])
    adapter = OpaAdapter()
    prepared = [prepare_policy(policy_payload(source)) for source in decidable]
    keys = [(source.key, "h") for source in decidable]
    reported: dict[int, dict] = {}
    adapter.evaluate(
        prepared, keys, input_json, lambda index, kind, **fields: reported.__setitem__(index, fields)
    )
    assert adapter._combined[tuple(keys)] is not None, "the corpus was compiled together"
    together = evaluate_policies(decidable, input_json, "opa", timeout_s=120)
    for source, outcome in zip(decidable, together.outcomes, strict=True):
        assert summary(outcome) == summary(alone(source, input_json)), source.name


CONFLICT = PolicySource(
    "conflict@1",
    "conflict",
    "v1",
    (
        PolicyModule(
            "policy.rego", 'package env0\n\nx := 1\nx := 2 if input.a\n\ndeny contains "x" if x == 1\n'
        ),
    ),
    None,
)
FINE = PolicySource(
    "fine@1",
    "fine",
    "v1",
    (
        PolicyModule(
            "policy.rego", 'package env0\n\nimport data.lib.tfplan\n\nwarn contains "w" if input.a\n'
        ),
    ),
    {"limit": 3},
)


def test_an_error_of_one_policy_is_its_own_and_the_others_decide():
    input_json = json.dumps({"a": True})
    result = evaluate_policies([FINE, CONFLICT, FINE], input_json, "opa")
    assert [summary(outcome) for outcome in result.outcomes] == [
        summary(alone(FINE, input_json)),
        summary(alone(CONFLICT, input_json)),
        summary(alone(FINE, input_json)),
    ]
    assert result.outcomes[1].error is not None and result.outcomes[0].decision == "warn"


def test_policies_cannot_see_each_other_or_be_read_with_a_computed_key():
    [(name, text)] = namespaced((("p.rego", "package env0\n\nx := data.env0.y\ny := data.lib.z\n"),), "__p3")
    assert name == "__p3/p.rego"
    assert text == "package __p3.env0\n\nx := data.__p3.env0.y\ny := data.lib.z\n"
    assert namespaced((("p.rego", 'package env0\n\nx := data["env0"]\n'),), "__p1") is None
    assert namespaced((("p.rego", "package lib.mine\n\nx := 1\n"),), "__p1") is None
    assert namespaced((("p.rego", 'package env0\n\nx := $"{data.env0.y}"\n'),), "__p1") is None


def _policy(key: str, source: str, data=None) -> PolicySource:
    return PolicySource(key, key, "v1", (PolicyModule("policy.rego", source),), data)


# Its own data document under "lib": alone, data.lib.blocked is its own value; it must stay so together.
DATA_UNDER_LIB = _policy(
    "lib-data@1",
    'package env0\n\ndeny contains "blocked" if data.lib.blocked == true\n',
    {"lib": {"blocked": True}},
)
# Another policy holding a value its author must not show, and a decision others must not change.
HOLDER = _policy(
    "holder@1",
    'package env0\n\ndeny contains "held" if data.gate == "closed"\n',
    {"gate": "closed", "token": "s3cr3t-x"},
)
PEEKS = _policy(
    "peeks@1",
    "package env0\n\nimport data.__p1 as other\n\n"
    'warn contains sprintf("%v %v", [data.__p1.token, other]) if true\n'
    'warn contains "shadow" if { data.__p1.env0.deny with data.__p1.gate as "open" }\n',
)
SHADOWS = _policy("shadows@1", 'package __p1.env0\n\ndeny := set()\n\nwarn contains "x" if true\n')


def test_a_policy_keeps_its_own_data_and_reads_or_shadows_no_other_policy_together():
    """Review of the combined query: hand-written ``data.__p1`` (read, import, ``with``), a package named
    ``__p1.env0`` and a data document under ``lib`` neither read nor change another policy's decision."""
    input_json = json.dumps({"a": True})
    for policies in ([DATA_UNDER_LIB, HOLDER, PEEKS, SHADOWS], [PEEKS, HOLDER, SHADOWS, DATA_UNDER_LIB]):
        result = evaluate_policies(policies, input_json, "opa")
        for policy, outcome in zip(policies, result.outcomes, strict=True):
            assert summary(outcome) == summary(alone(policy, input_json)), policy.name
            assert "s3cr3t" not in json.dumps(outcome.messages), policy.name
        by_name = dict(zip([p.name for p in policies], result.outcomes, strict=True))
        assert by_name["lib-data@1"].decision in ("deny", "error")  # never allowed: it fails closed
        assert by_name["holder@1"].decision == "deny"
    # The two that compile together are decided by the one query (not the fallback), as alone.
    policies = [PEEKS, HOLDER]
    adapter = OpaAdapter()
    prepared = [prepare_policy(policy_payload(source)) for source in policies]
    keys = [(source.key, "h") for source in policies]
    reported: dict[int, dict] = {}
    adapter.evaluate(
        prepared, keys, input_json, lambda index, kind, **fields: reported.__setitem__(index, fields)
    )
    assert adapter._combined[tuple(keys)] is not None
    assert "s3cr3t" not in json.dumps(reported)
    assert reported[1]["messages"]["deny"] == ["held"]
