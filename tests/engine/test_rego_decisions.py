"""env0's decision rules and the normalisation of rule values (pure functions, no engine)."""

import pytest

from policies_app.rego import combine_decisions, normalise_rule_value
from policies_app.rego.decisions import MessageLimits, limit_messages, policy_decision, truncate_message


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        (["allow", "warn"], "warn"),
        (["allow", "pending"], "pending"),
        (["warn", "pending"], "pending"),
        (["pending", "deny"], "deny"),
        (["allow", "deny"], "deny"),
        (["deny", "allow", "warn", "pending"], "deny"),
        (["allow", "allow"], "allow"),
        (["warn"], "warn"),
        (["deny", "error"], "error"),
        (["allow", None, "error"], "error"),
    ],
)
def test_it_lets_the_strictest_decision_win(decisions, expected):
    assert combine_decisions(decisions) == expected


@pytest.mark.parametrize("decisions", [[], [None], [None, None]])
def test_it_waits_for_approval_when_no_rule_fired(decisions):
    assert combine_decisions(decisions) == "pending"


def test_it_accepts_any_iterable_of_decisions():
    assert combine_decisions(d for d in ("allow", "warn")) == "warn"


def test_it_rejects_an_unknown_decision():
    with pytest.raises(ValueError, match="unknown decision 'approve'"):
        combine_decisions(["allow", "approve"])


def test_it_takes_a_policys_decision_from_its_strictest_rule_with_messages():
    assert (
        policy_decision({"deny": [], "pending": ["wait"], "warn": ["careful"], "allow": ["ok"]}) == "pending"
    )
    assert policy_decision({"deny": [], "pending": [], "warn": [], "allow": ["ok"]}) == "allow"


def test_it_says_no_rule_fired_when_every_rule_is_empty():
    assert policy_decision({"deny": [], "pending": [], "warn": [], "allow": []}) is None


@pytest.mark.parametrize("value", [None, False, [], set(), {}, frozenset()])
def test_it_treats_undefined_false_and_empty_values_as_no_message(value):
    assert normalise_rule_value(value) == []


def test_it_names_the_rule_when_a_boolean_rule_is_true():
    assert normalise_rule_value(True, rule="deny") == ["deny"]
    assert normalise_rule_value(True) == ["true"]


def test_it_turns_a_string_into_one_message():
    assert normalise_rule_value("needs two approvers") == ["needs two approvers"]


def test_it_keeps_the_order_of_an_array():
    assert normalise_rule_value(["b", "a"]) == ["b", "a"]


def test_it_sorts_a_set_so_both_engines_agree():
    assert normalise_rule_value({"b", "a", "c"}) == ["a", "b", "c"]


def test_it_takes_the_keys_of_an_object_as_messages():
    # regopy returns a v0 partial set deny["msg"] { ... } as {"msg": true}
    assert normalise_rule_value({"too expensive": True, "protected": True}) == ["too expensive", "protected"]


def test_it_writes_non_string_messages_as_json():
    assert normalise_rule_value([{"b": 1, "a": [1, 2]}, 3, None]) == ['{"a": [1, 2], "b": 1}', "3", "null"]
    assert normalise_rule_value(42) == ["42"]
    assert normalise_rule_value({frozenset({"y", "x"})}) == ['["x", "y"]']


def test_a_set_of_mixed_values_is_sorted_by_its_json_text():
    # Python cannot compare 1 with "a": the set is sorted by each element's JSON text instead.
    assert normalise_rule_value([{1, "a"}]) == ['["a", 1]']


def test_an_object_with_non_string_keys_is_written_with_json_keys():
    # regorus hands back Rego objects whose keys are arrays as dicts with tuple keys.
    assert normalise_rule_value([{("a", 1): True}]) == ['{"[\\"a\\", 1]": true}']


def test_non_ascii_text_in_a_json_message_stays_readable():
    assert normalise_rule_value([{"owner": "équipe café"}]) == ['{"owner": "équipe café"}']


def test_a_message_of_exactly_the_limit_is_kept_whole():
    assert truncate_message("abc", 3) == "abc"
    assert truncate_message("abcd", 3) == "abc… [truncated: 4 characters]"


def test_limits_take_a_policys_messages_with_rules_missing_as_empty():
    kept, used = limit_messages({"warn": ["w1"]}, MessageLimits(), 10)
    assert kept == {"deny": [], "pending": [], "warn": ["w1"], "allow": []}
    assert used == 1
