"""Expression semantics of the static evaluator, checked one expression at a time."""

from __future__ import annotations

import pytest

from policies_app.iac.expressions import EvalError, ResourceObject
from policies_app.iac.values import UNKNOWN, TfSet, is_unknown

from .test_iac_eval_support import value_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("7 / 2", 3.5),
        ("4 / 2", 2),
        ("-7 % 3", -1),
        ("7 % -3", 1),
        ("0.1 + 0.2", 0.3),
        ("1 / 3", 0.3333333333333333),
        ("1.1 * 1.1", 1.21),
        ("5 % 0.3", 0.2),
        ("9007199254740993 + 0", 9007199254740993),
        ("1e21", 10**21),
        ('"3" + 1', 4),
        ("-(2 - 5)", 3),
        ("1 < 2 && 2 <= 2", True),
        ("3 > 4 || 4 >= 5", False),
        ("!true", False),
        ('"1" == 1', False),
        ('[1, "a"] == [1, "a"]', True),
        ("{a = 1} != {a = 2}", True),
        ("null == null", True),
        ('true ? 1 : "a"', "1"),
        ("false ? 1 : 2", 2),
        ('"true" ? "y" : "n"', "y"),
    ],
)
def test_it_computes_operators_like_terraform(text, expected):
    assert value_of(text) == expected
    assert type(value_of(text)) is type(expected)


def test_a_conditional_keeps_a_set_beside_an_empty_list():
    assert value_of("var.s != null ? var.s : []", variables={"s": TfSet(["b", "a"])}) == TfSet(["a", "b"])


def test_it_divides_by_zero_as_terraform_does_and_refuses_zero_by_zero():
    assert value_of("1 / 0") == float("inf") and value_of("-1 / 0") == float("-inf")
    assert value_of("5 % 0") == 5
    with pytest.raises(EvalError, match="can't divide zero by zero"):
        value_of("0 / 0")


def test_it_refuses_arithmetic_on_null_and_mismatched_conditional_types():
    with pytest.raises(EvalError, match="null"):
        value_of("null + 1")
    with pytest.raises(EvalError, match="Inconsistent conditional result types"):
        value_of("true ? 1 : false")


@pytest.mark.parametrize(
    "text",
    [
        "var.u + 1",
        "-var.u",
        "!var.u",
        "var.u == 1",
        "var.u < 3",
        "var.u ? 1 : 2",
        "[for x in var.u : x]",
        "{for k, v in var.u : k => v}",
        "var.u.attr",
        "var.u[0]",
        "var.u[*].id",
        "[1, 2][var.u]",
        "false && var.u",
        "true || var.u",
        "{(var.u) = 1}",
    ],
)
def test_unknowns_propagate_through_every_kind_of_expression(text):
    assert is_unknown(value_of(text, variables={"u": UNKNOWN}))


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        ('"a-${var.u}"', "a-"),
        ('"ab${var.u}"', "a"),  # a letter may yet combine with what follows: cty drops it
        ('"%{if var.u}yes%{endif}"', ""),
        ('"%{for x in var.u}${x}%{endfor}"', ""),
        ('"a-%{if true}b-${var.u}%{endif}"', "a-"),  # a directive is one part: its text is not counted
    ],
)
def test_a_template_with_an_unknown_part_is_a_string_not_null_with_its_known_beginning(text, prefix):
    # HCL's TemplateExpr, as terraform 1.11 plans it (iac_corpus/template_refinements).
    value = value_of(text, variables={"u": UNKNOWN})
    assert is_unknown(value)
    assert (value.not_null, value.prefix) == (True, prefix)
    assert value_of(f"{text} != null", variables={"u": UNKNOWN}) is True


def test_unknowns_inside_collections_keep_the_known_parts():
    assert value_of("[1, var.u]", variables={"u": UNKNOWN}) == [1, UNKNOWN]
    assert value_of("[for x in [1, 2] : x == 1 ? var.u : x]", variables={"u": UNKNOWN}) == [UNKNOWN, 2]


def test_an_unknown_for_condition_makes_the_whole_result_unknown():
    assert value_of("[for x in [1, 2] : x if x == var.u]", variables={"u": UNKNOWN}) is UNKNOWN


def test_logical_operators_evaluate_both_sides_and_raise_their_errors():
    # Terraform does not short-circuit: the right side's error is reported even when the left decides.
    with pytest.raises(EvalError, match="null"):
        value_of("var.n == null || var.n.a > 1", variables={"n": None})


def test_templates_render_directives_and_strip_markers():
    assert value_of('"a${1.5}b${true}c${7}"') == "a1.5btruec7"
    assert value_of('"%{ if var.x > 1 }big%{ else }small%{ endif }"', variables={"x": 2}) == "big"
    assert value_of('"%{ for i, v in ["a", "b"] }${i}=${v};%{ endfor }"') == "0=a;1=b;"
    assert value_of('"x  %{~ if true ~}  y  %{~ endif ~}  z"') == "xyz"
    assert value_of('"%{for k, v in {b = 2, a = 1}}${k}${v}%{endfor}"') == "a1b2"


def test_templates_refuse_null_and_collections():
    with pytest.raises(EvalError, match="null"):
        value_of('"a${null}"')
    with pytest.raises(EvalError, match="template"):
        value_of('"a${[1]}"')


def test_a_template_of_one_interpolation_yields_the_value_itself():
    assert value_of('"${[1, 2]}"') == [1, 2]


def test_for_expressions_iterate_lists_sets_and_maps_in_terraform_order():
    assert value_of("[for i, v in ['x', 'y'] : \"${i}${v}\"]".replace("'", '"')) == ["0x", "1y"]
    assert value_of("[for k, v in {b = 1, a = 2} : k]") == ["a", "b"]
    assert value_of("{for k, v in {b = 1, a = 2} : v => k}") == {"1": "b", "2": "a"}
    assert value_of("[for v in var.s : v]", variables={"s": TfSet(["b", "a"])}) == ["a", "b"]
    assert value_of("[for v in [1, 2, 3, 4] : v * 10 if v % 2 == 0]") == [20, 40]


def test_for_expressions_group_with_an_ellipsis_and_refuse_duplicate_keys_without_one():
    grouped = value_of('{for p in [["a", 1], ["b", 2], ["a", 3]] : p[0] => p[1]...}')
    assert grouped == {"a": [1, 3], "b": [2]}
    with pytest.raises(EvalError, match="Duplicate object key"):
        value_of('{for p in [["a", 1], ["a", 3]] : p[0] => p[1]}')


def test_for_over_null_is_an_error():
    with pytest.raises(EvalError, match="null"):
        value_of("[for x in null : x]")


def test_splat_on_null_is_empty_and_on_a_single_value_wraps_it():
    assert value_of("null[*]") == []
    assert value_of('"a"[*]') == ["a"]
    assert value_of("var.o[*].id", variables={"o": {"id": 5}}) == [5]
    assert value_of("var.l[*].id", variables={"l": [{"id": 1}, {"id": 2}]}) == [1, 2]
    assert value_of("var.l.*.id", variables={"l": [{"id": 1}, {"id": 2}]}) == [1, 2]


def test_indexing_and_attribute_access_follow_terraform():
    assert value_of('var.m["k"]', variables={"m": {"k": 1}}) == 1
    assert value_of("var.m.k", variables={"m": {"k": 1}}) == 1
    assert value_of('var.l["1"]', variables={"l": ["a", "b"]}) == "b"
    with pytest.raises(EvalError, match="Invalid index"):
        value_of("var.l[2]", variables={"l": ["a", "b"]})
    with pytest.raises(EvalError, match="Unsupported attribute"):
        value_of("var.m.nope", variables={"m": {"k": 1}})
    with pytest.raises(EvalError, match="null"):
        value_of("var.n.a", variables={"n": None})
    with pytest.raises(EvalError, match="set"):
        value_of("var.s[0]", variables={"s": TfSet(["a"])})


def test_attributes_of_a_resource_not_set_in_configuration_are_unknown():
    web = ResourceObject({"ami": "abc"})
    assert value_of("aws_instance.web.ami", resources={"aws_instance.web": web}) == "abc"
    assert value_of("aws_instance.web.arn", resources={"aws_instance.web": web}) is UNKNOWN


def test_ephemeral_resources_are_never_known():
    assert value_of("ephemeral.random_password.db.result") is UNKNOWN


def test_count_each_and_self_come_from_bound_names_only():
    assert value_of("count.index * 2", names={"count": {"index": 3}}) == 6
    assert value_of('"${each.key}=${each.value}"', names={"each": {"key": "a", "value": 1}}) == "a=1"
    with pytest.raises(EvalError, match="count"):
        value_of("count.index")
    with pytest.raises(EvalError, match="each"):
        value_of("each.key")
    with pytest.raises(EvalError, match="self"):
        value_of("self.id")


def test_try_returns_the_first_expression_that_succeeds_and_can_says_whether_one_does():
    assert value_of('try(var.m.missing, "fallback")', variables={"m": {}}) == "fallback"
    assert value_of("try(var.m.k, 2)", variables={"m": {"k": 1}}) == 1
    assert value_of("can(var.m.missing)", variables={"m": {}}) is False
    assert value_of("can(var.m.k)", variables={"m": {"k": 1}}) is True
    with pytest.raises(EvalError, match="try"):
        value_of("try(var.m.a, var.m.b)", variables={"m": {}})


def test_try_and_can_answer_unknown_for_values_not_known_yet():
    # What terraform 1.11 plans: try(unknown, "z") and can(unknown) are both unknown.
    assert value_of('try(var.u, "z")', variables={"u": UNKNOWN}) is UNKNOWN
    assert value_of('try([var.u], "z")', variables={"u": UNKNOWN}) is UNKNOWN
    assert value_of("can(var.u)", variables={"u": UNKNOWN}) is UNKNOWN


def test_an_unsupported_function_becomes_unknown_with_a_warning_naming_it():
    from policies_app.iac.expressions import Scope, evaluate

    from .test_iac_eval_support import FakeResolver, parse_expression

    scope = Scope({}, FakeResolver())
    assert evaluate(parse_expression('provider::aws::arn_parse("x")', "t.tf"), scope) is UNKNOWN
    assert scope.warnings and "provider::aws::arn_parse" in scope.warnings[0].summary
    assert scope.warnings[0].line == 1


def test_function_calls_go_to_the_library_and_propagate_unknowns():
    assert value_of('upper("a")') == "A"
    assert value_of("length([var.u, 1])", variables={"u": UNKNOWN}) == 2
    assert is_unknown(value_of("upper(var.u)", variables={"u": UNKNOWN}))
    assert value_of("max([1, 5]...)") == 5
    with pytest.raises(EvalError, match="function"):
        value_of('tonumber("x")')


def test_timestamp_and_uuid_are_unknown_until_apply():
    assert is_unknown(value_of("timestamp()"))
    assert is_unknown(value_of("uuid()"))


def test_a_known_beginning_is_cut_where_cty_cuts_it():
    from policies_app.iac.values import safe_known_prefix, template_prefix

    # A delimiter ends a grapheme cluster; a letter or digit may still combine with what follows.
    assert [safe_known_prefix(t) for t in ("a-", "ab", "https://", "v1", "")] == [
        "a-",
        "a",
        "https://",
        "v",
        "",
    ]
    # Beyond ASCII we keep no more than what ends in a delimiter (never longer than cty's).
    assert safe_known_prefix("é-b") == "é-"
    assert safe_known_prefix("e\u0301") == ""
    # HCL keeps at most 128 bytes of a template's known text (terraform 1.11: startswith of 127 x is true, of 128 unknown).
    assert template_prefix("x" * 200 + "-") == "x" * 127
