"""Every engine the platform offers decides as OPA on the written corpus and on generated policies.

A bounded number of generated cases runs here; bench/bench_rego_differential.py runs many more.
Decisions, messages (their exact text) and refusals on save must all be OPA's; an error where OPA
decides (regorus raising for a builtin given the wrong type, or a conflict OPA never reaches) fails
too.
"""

import pytest

from policies_app.rego import ENGINES
from tests.engine.rego_differential import CORPUS, REFERENCE, compare, generated_case

ENGINES_UNDER_TEST = [engine for engine in ENGINES if engine != REFERENCE]
GENERATED_IN_SUITE = 60


@pytest.mark.parametrize("engine", ENGINES_UNDER_TEST)
@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_the_corpus_decides_as_opa(engine, case):
    comparison = compare(case, engine)
    assert comparison.differences == []
    assert comparison.failed_closed == []


@pytest.mark.parametrize("engine", ENGINES_UNDER_TEST)
def test_generated_policies_decide_as_opa(engine):
    differences, failed_closed = [], []
    for seed in range(GENERATED_IN_SUITE):
        comparison = compare(generated_case(seed), engine)
        differences.extend(comparison.differences)
        failed_closed.extend(comparison.failed_closed)
    assert differences == []
    assert failed_closed == []
