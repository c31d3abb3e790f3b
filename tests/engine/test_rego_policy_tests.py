"""Policy tests run like ``opa test``, with line coverage, and the decision rules that fired, through
the public interface (a supervised OPA worker), without Django."""

import pytest

from policies_app.rego import (
    PolicyCompileError,
    PolicyModule,
    PolicySource,
    explain_decision,
    run_policy_tests,
)

POLICY = """package env0

import rego.v1

deny contains "too big" if input.size > data.limits.size

pending contains msg if {
	input.size > 5
	msg := sprintf("size %v needs a look", [input.size])
}

allow contains "small" if input.size <= 5
"""


def policy(source=POLICY, version="v1", data=None):
    data = {"limits": {"size": 10}} if data is None else data
    return PolicySource("p@1", "p", version, (PolicyModule("main.rego", source),), data)


def suite(source: str, filename="main_test.rego"):
    return [PolicyModule(filename, source)]


def outcomes(report):
    return {result.name: (result.outcome, result.message) for result in report.results}


def test_a_test_passes_when_true_fails_when_false_undefined_or_not_true_and_todo_is_skipped():
    report = run_policy_tests(
        policy(),
        suite(
            """package env0_test

import rego.v1

import data.env0

test_true if env0.deny["too big"] with input as {"size": 20}
test_false if count(env0.deny) == 1 with input as {"size": 1}
test_undefined if env0.allow["nope"] with input as {"size": 1}
test_three := 3
todo_test_later if false
"""
        ),
    )
    assert outcomes(report) == {
        "test_true": ("pass", ""),
        "test_false": ("fail", "undefined (a condition of the test was false)"),
        "test_undefined": ("fail", "undefined (a condition of the test was false)"),
        "test_three": ("fail", "evaluated to 3, not true"),
        "todo_test_later": ("skip", ""),
    }
    assert not report.passed
    assert [(r.file, r.line) for r in report.results][:2] == [("main_test.rego", 7), ("main_test.rego", 8)]


def test_with_mocks_input_and_data():
    report = run_policy_tests(
        policy(),
        suite(
            """package env0_test

import rego.v1

import data.env0

test_a_lower_limit_denies_less if {
	env0.deny["too big"] with input as {"size": 7} with data.limits.size as 6
}

test_the_real_limit_allows_seven if {
	count(env0.deny) == 0 with input as {"size": 7}
}
"""
        ),
    )
    assert report.passed and outcomes(report) == {
        "test_a_lower_limit_denies_less": ("pass", ""),
        "test_the_real_limit_allows_seven": ("pass", ""),
    }


def test_line_coverage_counts_the_lines_any_test_ran():
    report = run_policy_tests(
        policy(),
        suite(
            """package env0_test

import rego.v1

import data.env0

test_small if env0.allow["small"] with input as {"size": 1}
"""
        ),
    )
    [coverage] = report.coverage
    assert coverage.file == "main.rego"
    assert 12 in coverage.covered and {8, 9} <= set(coverage.not_covered)
    assert 0 < report.coverage_percent < 100


def test_an_error_in_a_test_is_reported_as_an_error_with_its_position():
    report = run_policy_tests(
        policy(),
        suite(
            """package env0_test

import rego.v1

test_divides if {
	x := 1 / 0
	x > 0
}
"""
        ),
    )
    [result] = report.results
    assert (
        result.outcome == "error"
        and "main_test.rego:6" in result.message
        and "divide by zero" in result.message
    )


def test_a_test_module_that_does_not_compile_is_the_reports_error_with_file_and_line():
    report = run_policy_tests(
        policy(), suite("package env0_test\n\nimport rego.v1\n\ntest_x if {\n\tnosuch(1)\n}\n")
    )
    assert report.results == () and not report.passed
    assert (report.error.file, report.error.line) == ("main_test.rego", 6)
    assert "undefined function nosuch" in report.error.message


def test_tests_of_a_v0_policy_are_written_in_v0_too():
    source = 'package env0\n\ndeny["too big"] { input.size > 10 }\n'
    report = run_policy_tests(
        policy(source, "v0"),
        suite('package env0_test\n\ntest_big { data.env0.deny["too big"] with input as {"size": 11} }\n'),
    )
    assert report.passed and outcomes(report) == {"test_big": ("pass", "")}


def test_the_rules_that_fired_are_named_by_file_and_line():
    fired = explain_decision(policy(), '{"size": 7}')
    assert [(rule.rule, rule.file, rule.line) for rule in fired] == [("pending", "main.rego", 7)]
    fired = explain_decision(policy(), '{"size": 11}')
    assert [(rule.rule, rule.line) for rule in fired] == [("deny", 5), ("pending", 7)]


def test_a_one_line_rule_whose_condition_was_evaluated_but_false_did_not_fire():
    fired = explain_decision(policy(), '{"size": 1}')
    assert [(rule.rule, rule.line) for rule in fired] == [("allow", 12)]


def test_explaining_a_policy_that_does_not_compile_raises_with_its_position():
    with pytest.raises(PolicyCompileError) as refused:
        explain_decision(policy("package env0\n\nimport rego.v1\n\ndeny contains 1 if nosuch(1)\n"), "{}")
    assert (refused.value.file, refused.value.line) == ("main.rego", 5)
