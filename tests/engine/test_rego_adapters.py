"""The engine adapters in-process (what the worker runs): the input is loaded once per evaluation.

Loading a plan is the expensive part (regorus ~25 ms per MB), so it must not be repeated per policy;
each policy still gets its own namespace. On OPA the policies of an evaluation are compiled together into
one engine (each under its own package prefix) and decided in one query; a set that cannot share an engine
falls back to one engine per policy, each compiled once and kept.
"""

import json

from policies_app.rego import PolicyModule, PolicySource
from policies_app.rego.engines import OpaAdapter, RegorusAdapter
from policies_app.rego.prepare import policy_payload, prepare_policy


def prepared(number):
    source = f'package env0\n\nmine := {number}\n\nallow contains sprintf("policy %d sees %d", [mine, count(input.items)]) if {{ true }}\n'
    payload = policy_payload(
        PolicySource(f"p{number}@1", f"p{number}", "v1", (PolicyModule("policy.rego", source),))
    )
    return payload, prepare_policy(payload)


class CountingRegorus:
    """Stands in for the regorus module: real engines, counted input loads."""

    def __init__(self, real):
        self.real = real
        self.input_loads = 0
        counter = self

        class Engine:
            def __init__(self, inner=None):
                self.inner = inner or real.Engine()

            def set_input_json(self, text):
                counter.input_loads += 1
                return self.inner.set_input_json(text)

            def clone(self):
                return Engine(self.inner.clone())

            def __getattr__(self, name):
                return getattr(self.inner, name)

        self.Engine = Engine


def test_regorus_loads_the_input_once_for_all_policies():
    adapter = RegorusAdapter()
    counting = CountingRegorus(adapter._regorus)
    adapter._regorus = counting
    policies = [prepared(number)[1] for number in range(5)]
    outcomes = {}
    adapter.evaluate(
        policies,
        json.dumps({"items": [1, 2, 3]}),
        lambda i, kind, **f: outcomes.update({i: f}) if f else None,
    )
    assert counting.input_loads == 1
    assert [outcomes[i]["messages"]["allow"] for i in range(5)] == [[f"policy {i} sees 3"] for i in range(5)]


def _evaluate_twice(adapter):
    payloads, policies = zip(*(prepared(number) for number in range(5)), strict=True)
    keys = [(p["key"], p["hash"]) for p in payloads]
    outcomes = {}

    def report(index, kind, **fields):
        if fields:
            outcomes[index] = fields

    adapter.evaluate(list(policies), keys, json.dumps({"items": [1, 2]}), report)
    adapter.evaluate(list(policies), keys, json.dumps({"items": [1]}), report)
    return [outcomes[i]["messages"]["allow"] for i in range(5)]


def test_opa_compiles_the_policies_of_an_evaluation_together_once_and_keeps_them_apart():
    adapter = OpaAdapter()
    together, alone = [], []
    real_together, real_alone = adapter._compile_together, adapter._compile
    adapter._compile_together = lambda policies: together.append(len(policies)) or real_together(policies)
    adapter._compile = lambda policy: alone.append(policy.key) or real_alone(policy)

    decided = _evaluate_twice(adapter)

    assert (together, alone) == ([5], [])  # one engine for the five, reused by the second evaluation
    assert decided == [[f"policy {i} sees 1"] for i in range(5)]


def test_opa_compiles_each_policy_once_when_they_cannot_share_an_engine():
    adapter = OpaAdapter()
    alone = []
    real_alone = adapter._compile
    adapter._compile_together = lambda policies: None  # as for a policy that cannot be namespaced
    adapter._compile = lambda policy: alone.append(policy.key) or real_alone(policy)

    decided = _evaluate_twice(adapter)

    assert alone == [f"p{number}@1" for number in range(5)]  # reused by the second evaluation
    assert decided == [[f"policy {i} sees 1"] for i in range(5)]
