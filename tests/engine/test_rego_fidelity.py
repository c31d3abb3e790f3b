"""Deciding as OPA decides (issue 7's four deviations), message limits and the dry-run pool.

Every engine the platform offers is run through the public interface; OPA itself is one of them.
"""

import json
import threading
import time

import pytest

from policies_app.rego import (
    ENGINES,
    EngineBusyError,
    PolicyCompileError,
    PolicyModule,
    PolicySource,
    check_policy,
    evaluate_policies,
)
from policies_app.rego.decisions import MessageLimits, limit_messages
from policies_app.rego.negations import hoist_out_of_negations
from policies_app.rego.supervisor import _NAMED_POOL_WAIT_S
from policies_app.rego.syntax_tree import parse_module
from policies_app.rego.v1_syntax import to_rego_v1


def policy(*modules, version="v0", name="policy"):
    return PolicySource(f"{name}@1", name, version, tuple(PolicyModule(f, s) for f, s in modules))


def decide(source_policy, input_document, engine):
    check_policy(source_policy, engine)
    result = evaluate_policies([source_policy], json.dumps(input_document), engine)
    assert result.error is None, result.error
    return result.decision, {rule: messages for rule, messages in result.messages.items() if messages}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_function_defined_in_two_modules_is_one_function(engine):
    split = policy(
        ("a.rego", 'package env0\nallow[f("ok")] { true }\nf(x) := x\n'),
        ("b.rego", "package env0\nf(x) := x\n"),
    )
    assert decide(split, {}, engine) == ("allow", {"allow": ["ok"]})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_function_split_over_modules_with_different_imports_keeps_each_modules_names(engine):
    split = policy(
        (
            "a.rego",
            'package env0\nimport data.lib.approvals as ap\nlabel(1) := "one"\nallow[label(1)] { true }\n',
        ),
        ("b.rego", "package env0\nimport input.deploymentRequest as request\nlabel(2) := request.type\n"),
        ("c.rego", "package env0\nwarn[label(2)] { true }\n"),
    )
    assert decide(split, {"deploymentRequest": {"type": "deploy"}}, engine) == (
        "warn",
        {"allow": ["one"], "warn": ["deploy"]},
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "source",
    [
        # env0's first cost-estimation example: without an estimate OPA waits, it does not allow.
        'has_key(x, k) { _ = x[k] }\nallow["no cost"] { not has_key(input.costEstimation, "totalMonthlyCost") }',
        'deny["not main"] { allowed = {"main"}; not allowed[input.deploymentRequest.revision] }',
        'allow["a"] { not startswith(input.a, "x") }',
        'allow["a"] { not count(input.a) > 2 }',
        'allow["a"] { not input.a != 1 }',
        'allow["a"] { not [input.a] == [1] }',
    ],
)
def test_a_negation_over_an_undefined_nested_reference_does_not_fire(engine, source):
    assert decide(policy(("p.rego", f"package env0\n{source}\n")), {}, engine) == ("pending", {})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "source",
    [
        'allow["a"] { not input.a }',
        'allow["a"] { not input.a == "x" }',
        'allow["a"] { not data.nothing.here }',
    ],
)
def test_a_negation_of_a_whole_reference_or_an_equality_side_still_fires(engine, source):
    assert decide(policy(("p.rego", f"package env0\n{source}\n")), {}, engine) == ("allow", {"allow": ["a"]})


def test_negations_are_rewritten_on_their_own_line_with_their_with_modifiers():
    source = (
        "package env0\n"
        "x := {}\n"
        'allow contains "a" if {\n'
        '  not startswith(input.a, "x") with input.b as 1\n'
        "  not x[lower(input.k)]\n"
        "}\n"
    )
    rewritten, _ = hoist_out_of_negations(
        parse_module("p.rego", source, False), {"x", "allow"}, rego_v0=False
    )
    assert rewritten.splitlines()[3:5] == [
        '  __not1__ := input.a with input.b as 1; not startswith(__not1__, "x") with input.b as 1',
        "  __not2__ := lower(input.k); not x[__not2__]",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_to_an_undefined_function_is_refused_on_save_with_its_position(engine):
    source = "package env0\n\npending[nosuch(1)] { count(input.approvers) < 1 }\n"
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy(("p.rego", source)), engine)
    error = caught.value
    assert (error.file, error.line, error.column, error.message) == (
        "p.rego",
        3,
        9,
        "undefined function nosuch",
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_what_opa_refuses_is_refused_on_every_engine(engine):
    unsafe = 'package env0\n\nallow contains "a" if { not startswith(input.a[_], "x") }\n'
    with pytest.raises(PolicyCompileError, match="var _ is unsafe") as caught:
        check_policy(policy(("p.rego", unsafe), version="v1"), engine)
    assert (caught.value.file, caught.value.line) == ("p.rego", 3)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_decision_package_other_than_env0_is_refused(engine):
    source = 'package env0.multipleApprovals\npending["At least 2 approvals must be given."] { count(input.approvers) < 2 }\n'
    with pytest.raises(PolicyCompileError, match="use `package env0`"):
        check_policy(policy(("p.rego", source)), engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_helper_modules_in_other_packages_stay_allowed(engine):
    helper = ("helpers.rego", "package env0.helpers\nsmall { count(input.approvers) < 2 }\n")
    main = (
        "main.rego",
        'package env0\nimport data.env0.helpers\npending["two approvals"] { helpers.small }\n',
    )
    assert decide(policy(helper, main), {"approvers": []}, engine) == (
        "pending",
        {"pending": ["two approvals"]},
    )


def test_v0_modules_are_given_to_opa_in_v1_syntax_on_the_same_lines():
    source = (
        "package env0\n"
        'deny[msg] {\n  msg := "a"\n}\n'
        "f(x) = y { y := x } else = 2 { true }\n"
        "g(x) { x > 1 } else { true }\n"
        "p { false } { true }\n"
    )
    assert to_rego_v1(parse_module("p.rego", source, True)) == (
        "package env0\n"
        'deny contains msg if {\n  msg := "a"\n}\n'
        "f(x) = y if { y := x } else = 2 if { true }\n"
        "g(x) if { x > 1 } else if { true }\n"
        "p if { false } { true }\n"
    )


# ------------------------------------------------------------------------------------ message limits


def test_limits_keep_the_strictest_messages_and_count_the_rest():
    messages = {"deny": ["d1", "d2", "d3"], "pending": ["p1"], "warn": [], "allow": ["a1", "a2"]}
    kept, used = limit_messages(messages, MessageLimits(per_policy=2, characters=100, per_evaluation=50), 50)
    assert kept == {"deny": ["d1", "d2", "… and 1 more message"], "pending": [], "warn": [], "allow": []}
    assert used == 2


def test_limits_never_change_a_policys_decision():
    messages = {"deny": [], "pending": ["p1", "p2"], "warn": ["w1"], "allow": []}
    kept, used = limit_messages(messages, MessageLimits(), 0)  # the evaluation's budget is spent
    assert kept["pending"] == ["… and 2 more messages"]
    assert used == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_huge_and_numerous_messages_are_cut_in_the_worker(engine):
    source = (
        "package env0\n\n"
        'deny contains concat("", [x | some _ in numbers.range(1, 200000); x := "y"]) if { true }\n'
        'warn contains sprintf("w%d", [n]) if { some n in numbers.range(1, 50) }\n'
    )
    result = evaluate_policies(
        [policy(("p.rego", source), version="v1"), policy(("q.rego", source), version="v1", name="q")],
        "{}",
        engine,
        max_messages_per_policy=5,
        max_message_length=100,
        max_messages=8,
        timeout_s=60,
    )
    first, second = result.outcomes
    assert result.decision == "deny"
    assert first.messages["deny"] == ["y" * 100 + "… [truncated: 200000 characters]"]
    assert len(first.messages["warn"]) == 5  # 4 messages and the marker
    assert first.messages["warn"][-1] == "… and 46 more messages"
    assert second.decision == "deny"  # 3 of the evaluation's 8 messages were left for it
    assert len(second.messages["deny"]) == 1 and second.messages["warn"][-1] == "… and 48 more messages"


# ------------------------------------------------------------------------------------- dry-run pool

SLOW = policy(
    (
        "slow.rego",
        'package env0\ndeny contains "x" if { some a in numbers.range(1, 3000); some b in numbers.range(1, 3000); a * b == -1 }\n',
    ),
    version="v1",
    name="slow",
)


def test_a_named_pool_refuses_work_when_busy_instead_of_queueing():
    fine = policy(("p.rego", 'package env0\nallow contains "ok" if { true }\n'), version="v1")
    name = f"dry-run-{time.monotonic_ns()}"
    assert evaluate_policies([fine], "{}", "regorus", pool_name=name, pool_size=1).decision == "allow"
    busy = threading.Thread(
        target=lambda: evaluate_policies([SLOW], "{}", "regorus", pool_name=name, pool_size=1, timeout_s=30)
    )
    busy.start()
    time.sleep(0.3)
    started = time.monotonic()
    with pytest.raises(EngineBusyError, match="busy"):
        evaluate_policies([fine], "{}", "regorus", pool_name=name, pool_size=1)
    # Refused after the short wait for a worker to come back, not queued for the slow policy's 30 s.
    assert time.monotonic() - started < _NAMED_POOL_WAIT_S + 1.0
    # The deployment pool is another pool: it answers while the dry-run pool is busy.
    assert evaluate_policies([fine], "{}", "regorus").decision == "allow"
    busy.join(60)


def test_a_named_pool_waits_a_moment_for_its_worker_to_come_back_or_be_replaced():
    """Issue 20: the worker of the request before, or the one replacing a killed worker, is waited for
    (within _NAMED_POOL_WAIT_S), not refused as busy."""
    fine = policy(("p.rego", 'package env0\nallow contains "ok" if { true }\n'), version="v1")
    a_moment = policy(
        (
            "m.rego",
            'package env0\ndeny contains "never" if { some a in numbers.range(1, input.n); a == -1 }\n',
        ),
        version="v1",
    )
    name = f"dry-run-{time.monotonic_ns()}"
    assert evaluate_policies([fine], "{}", "regorus", pool_name=name, pool_size=1).decision == "allow"
    for holder in (
        lambda: evaluate_policies([a_moment], '{"n": 1000000}', "regorus", pool_name=name, pool_size=1),
        # Runs out of time: its worker is killed and the next caller's worker starts afresh.
        lambda: evaluate_policies([SLOW], "{}", "regorus", pool_name=name, pool_size=1, timeout_s=0.5),
    ):
        holding = threading.Thread(target=holder)
        holding.start()
        time.sleep(0.1)
        assert evaluate_policies([fine], "{}", "regorus", pool_name=name, pool_size=1).decision == "allow"
        holding.join(60)
