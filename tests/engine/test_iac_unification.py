"""Type unification and refined unknowns as cty defines them (issue 21); the same rules are compared
with terraform's plan in iac_corpus/arguments_unified_to_one_type and conditional_of_known_length."""

from __future__ import annotations

import pytest

from policies_app.iac.expressions import EvalError
from policies_app.iac.type_constraints import (
    ANY,
    BOOL,
    NUMBER,
    STRING,
    ListType,
    MapType,
    SetType,
    TupleType,
    convert,
    convertible,
    infer_type,
    parse_type,
    unify,
)
from policies_app.iac.type_unification import unknown_of_either
from policies_app.iac.values import UNKNOWN, TfMap, UnknownValue, is_unknown
from tests.engine.test_iac_eval_support import value_of


def test_an_object_beside_an_empty_map_unifies_to_the_object_when_its_attributes_share_no_type():
    rules = infer_type({"a": {"p": 1}, "b": {"d": True}})
    assert unify([rules, infer_type(TfMap({}, ANY))]) == rules


def test_objects_beside_a_map_unify_as_a_map_when_their_attributes_convert_to_its_elements():
    assert unify([infer_type({"a": 1}), MapType(STRING)]) == MapType(STRING)


def test_strings_are_preferred_and_numbers_and_bools_share_nothing():
    assert unify([NUMBER, STRING, BOOL]) == STRING
    assert unify([NUMBER, BOOL]) is None


def test_tuples_unify_element_by_element_or_as_a_list():
    assert unify([infer_type(["a", 1]), infer_type([True, "b"])]) == TupleType((STRING, STRING))
    assert unify([infer_type(["a"]), infer_type(["b", "c"])]) == ListType(STRING)
    assert unify([infer_type([1]), ListType(STRING)]) == ListType(STRING)


def test_objects_and_tuples_never_unify():
    assert unify([infer_type({"a": 1}), infer_type([1])]) is None


def test_which_conversions_exist_follows_cty():
    assert convertible(STRING, NUMBER)  # unsafe: only for a string holding a number
    assert not convertible(BOOL, NUMBER)
    assert convertible(MapType(ANY), parse_type("object({a = object({p = number})})"))
    assert not convertible(parse_type("object({a = string})"), parse_type("object({b = string})"))
    assert convertible(
        parse_type("object({a = string})"), parse_type("object({a = string, b = optional(number)})")
    )
    assert convertible(ListType(STRING), SetType(STRING))


def test_a_conditional_on_an_unknown_keeps_the_length_both_results_share():
    same = unknown_of_either(["a"], ["b"])
    assert is_unknown(same) and same.type == TupleType((STRING,))
    assert value_of('length(var.u ? ["a"] : ["b"])', variables={"u": UNKNOWN}) == 1
    assert value_of("length(var.u ? { a = 1, b = 2 } : { a = 3, b = 4 })", variables={"u": UNKNOWN}) == 2
    assert value_of('keys(var.u ? { a = 1, b = 2 } : { a = "x", b = "y" })', variables={"u": UNKNOWN}) == [
        "a",
        "b",
    ]
    assert is_unknown(value_of('length(var.u ? ["a"] : ["b", "c"])', variables={"u": UNKNOWN}))
    # One result of any type (an unknown of its own) leaves the result of any type, of any length.
    assert is_unknown(value_of('length(var.u ? var.u : ["b"])', variables={"u": UNKNOWN}))


def test_maps_of_one_type_bound_the_length_of_the_unknown_choice():
    chosen = unknown_of_either(TfMap({"a": 1}, NUMBER), TfMap({"b": 2}, NUMBER))
    assert chosen.type == MapType(NUMBER) and chosen.known_length == 1 and chosen.not_null


def test_a_refined_unknown_converted_to_a_collection_keeps_its_length_and_is_not_null():
    converted = convert(UnknownValue(TupleType((STRING, STRING)), True), ListType(STRING))
    assert converted.type == ListType(STRING) and converted.known_length == 2
    assert value_of('(var.u ? ["a"] : ["b"]) == null', variables={"u": UNKNOWN}) is False


def test_one_of_a_known_list_is_its_element_with_its_unknown_parts():
    assert value_of("one([{ a = 1, b = var.u }])", variables={"u": UNKNOWN}) == {"a": 1, "b": UNKNOWN}
    assert value_of("one(var.u)", variables={"u": UNKNOWN}) is UNKNOWN


def test_a_trailing_comma_ends_any_type_constructors_arguments():
    declared = parse_type(
        "object({ a = optional(list(string), ), b = list(string,), c = optional(tuple([string, ]), ) })"
    )
    assert convert({"b": []}, declared) == {"a": None, "b": [], "c": None}


def test_inconsistent_conditional_results_are_still_refused():
    with pytest.raises(EvalError, match="Inconsistent conditional result types"):
        value_of("true ? 1 : false")
