"""Type expressions, conversions and the implicit conversions operators use (policies_app.iac.type_constraints)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from policies_app.iac.type_constraints import (
    ANY,
    NUMBER,
    STRING,
    ConversionError,
    ListType,
    MapType,
    ObjectType,
    SetType,
    TupleType,
    TypeSyntaxError,
    convert,
    infer_type,
    parse_type,
    to_bool,
    to_number,
    to_string,
    type_name,
    unify,
    values_equal,
)
from policies_app.iac.values import UNKNOWN, TfSet, to_json_compatible
from tests.engine.test_iac_functions_terraform import hcl

# --- parse_type ----------------------------------------------------------------------------------------------


def test_it_parses_primitive_and_collection_types() -> None:
    assert parse_type("string") == STRING
    assert parse_type(" list( string ) ") == ListType(STRING)
    assert parse_type("set(number)") == SetType(NUMBER)
    assert parse_type("map(any)") == MapType(ANY)
    assert parse_type("tuple([string, number])") == TupleType((STRING, NUMBER))
    assert parse_type("list(list(map(bool)))") == ListType(ListType(MapType(parse_type("bool"))))


def test_it_parses_objects_with_optional_attributes_and_defaults_across_lines() -> None:
    t = parse_type(
        """object({
            name = string           # a comment
            size = optional(number, 3),
            tags = optional(map(string))
            nested = optional(object({on = optional(bool, true)}), {})
        })"""
    )
    assert isinstance(t, ObjectType)
    assert set(t.attribute_types) == {"name", "size", "tags", "nested"}
    optional = t.optional_attributes
    assert optional["size"].default == 3
    assert optional["tags"].has_default is False
    # The default of an optional object gets that object's own defaults.
    assert optional["nested"].default == {"on": True}


def test_it_gives_hashable_comparable_types_that_print_as_hcl() -> None:
    text = 'object({a=optional(list(string), ["x"]), b=map(number)})'
    assert parse_type(text) == parse_type(text)
    assert len({parse_type(text), parse_type(text)}) == 1  # usable as a cache key
    assert str(parse_type(text)) == "object({a=optional(list(string), ['x']), b=map(number)})"


def test_it_accepts_legacy_quoted_type_names() -> None:
    assert parse_type('"string"') == STRING
    assert parse_type('"list"') == ListType(STRING)


@pytest.mark.parametrize(
    "text, message",
    [
        ("strng", "strng"),
        ("list", "requires one argument"),
        ("list(string", "end of type expression"),
        ("optional(string)", "only allowed"),
        ('object({a = optional(number, "x")})', 'optional attribute "a"'),
        ("map(string) extra", "extra"),
        ("object({a = optional(string, var.x)})", "constant"),
        ("", "end of type expression"),
    ],
)
def test_it_rejects_invalid_type_expressions_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(TypeSyntaxError, match=message.replace("(", r"\(")):
        parse_type(text)


# --- convert --------------------------------------------------------------------------------------------------


def test_it_converts_primitives_like_terraform() -> None:
    assert convert(5, STRING) == "5"
    assert convert(1.5, STRING) == "1.5"
    assert convert(True, STRING) == "true"
    assert convert("12", NUMBER) == 12
    assert convert("1.25", NUMBER) == 1.25
    assert convert("true", parse_type("bool")) is True
    assert convert(None, NUMBER) is None


@pytest.mark.parametrize(
    "value, type_text, message",
    [
        ("abc", "number", 'cannot convert "abc" to number'),
        (1, "bool", "a bool is required"),
        ([1], "string", "a string is required"),
        ({"a": 1}, "list(string)", "list of string is required"),
        ([1, 2], "tuple([number])", "tuple of 1 elements"),
        ({"size": 1}, "object({name=string, size=number})", 'attribute "name" is required'),
        ([{"a": "x"}], "list(object({a=number}))", 'element 0: attribute "a": cannot convert'),
        ({"k": "x"}, "map(number)", 'element "k": cannot convert'),
        ([1, True], "list(any)", "all list elements must have the same type"),
        (TfSet(["a"]), "tuple([string])", "a tuple is required"),
    ],
)
def test_it_rejects_impossible_conversions_with_a_path_to_the_problem(
    value: Any, type_text: str, message: str
) -> None:
    with pytest.raises(ConversionError, match=message.replace("(", r"\(")):
        convert(value, parse_type(type_text))


def test_it_converts_between_lists_sets_and_tuples() -> None:
    assert convert(["b", "a", "b"], parse_type("set(string)")) == TfSet(["a", "b"])
    assert isinstance(convert(["b", "a"], parse_type("set(string)")), TfSet)
    assert convert(TfSet([2, 1]), parse_type("list(number)")) == [1, 2]
    assert convert([1, "2"], parse_type("tuple([string, number])")) == ["1", 2]


def test_it_keeps_unknown_values_unknown_also_inside_collections() -> None:
    assert convert(UNKNOWN, parse_type("list(string)")) is UNKNOWN
    assert convert([UNKNOWN, 1], parse_type("list(string)")) == [UNKNOWN, "1"]
    result = convert({"name": UNKNOWN}, parse_type("object({name=string, port=optional(number, 80)})"))
    assert result["name"] is UNKNOWN and result["port"] == 80
    assert to_number(UNKNOWN) is UNKNOWN and to_string(UNKNOWN) is UNKNOWN and to_bool(UNKNOWN) is UNKNOWN


def test_it_drops_attributes_an_object_type_does_not_declare() -> None:
    assert convert({"a": 1, "extra": 2}, parse_type("object({a=number})")) == {"a": 1}


# --- implicit conversions used by operators -----------------------------------------------------------------


def test_it_converts_operands_like_terraform_operators_do() -> None:
    assert to_number("1") + 1 == 2
    assert to_number("-2.5e1") == -25
    assert isinstance(to_number(4.0), int)
    assert to_string(1.5) == "1.5"
    assert to_string(1e-7) == "0.0000001"
    assert to_string(1e21) == "1000000000000000000000"
    assert to_string(True) == "true"
    assert to_bool("true") is True and to_bool("false") is False


def test_it_prints_float_arithmetic_noise_as_the_decimal_terraform_computes() -> None:
    # terraform's 512-bit floats make 0.1 + 0.2 print as 0.3; Python floats carry an ulp of noise.
    assert to_string(0.1 + 0.2) == "0.3"
    assert to_string(1.1 * 1.1) == "1.21"
    assert to_string(1 / 3) == "0.3333333333333333"  # genuinely many digits: keep them


@pytest.mark.parametrize(
    "call, value",
    [
        (to_number, "1x"),
        (to_number, True),
        (to_number, None),
        (to_bool, "yes"),
        (to_bool, 1),
        (to_string, None),
        (to_string, [1]),
        (to_number, " 1"),
    ],
)
def test_it_refuses_implicit_conversions_terraform_refuses(call: Any, value: Any) -> None:
    with pytest.raises(ConversionError):
        call(value)


def test_it_names_value_types_for_error_messages() -> None:
    assert [type_name(v) for v in ["s", 1, 1.5, True, None, [1], {"a": 1}, TfSet([1])]] == [
        "string",
        "number",
        "number",
        "bool",
        "null",
        "list",
        "map",
        "set",
    ]


def test_it_compares_values_with_terraform_equality() -> None:
    assert values_equal(1, 1.0)
    assert not values_equal("1", 1)
    assert not values_equal(True, 1)
    assert values_equal([1, "a"], (1, "a"))
    assert not values_equal([1], TfSet([1]))
    assert values_equal({"a": [1]}, {"a": [1.0]})
    assert not values_equal({"a": 1}, {"a": 1, "b": 2})
    assert values_equal(None, None) and not values_equal(None, "")


def test_it_unifies_types_as_cty_does() -> None:
    assert unify([NUMBER, STRING]) == STRING
    assert unify([NUMBER, parse_type("bool")]) is None
    assert unify([infer_type({"a": 1}), infer_type({"b": 2})]) == MapType(NUMBER)
    assert unify([infer_type([1]), infer_type([1, 2])]) == ListType(NUMBER)
    assert unify([infer_type(None), STRING]) == STRING


# --- convert compared with terraform: variables with a type and a default ------------------------------------

CONVERSIONS: list[tuple[str, Any]] = [
    ("string", 12),
    ("number", "42.5"),
    ("bool", "false"),
    ("list(string)", [1, True, "x"]),
    ("set(number)", [3, "1", 3, 2]),
    ("map(number)", {"a": "1", "b": 2}),
    ("map(any)", {"a": 1, "b": "x"}),
    ("list(any)", [{"a": 1}, {"b": 2}]),
    ("list(any)", [{"a": 1}, {"a": "x", "b": 2}]),
    ("list(any)", [[1], [1, 2]]),
    ("list(any)", [None, 1]),
    ("tuple([string, number, bool])", [1, "2", "true"]),
    ("any", {"a": [1, "x"]}),
    ("object({name=string, size=optional(number, 3), tags=optional(map(string))})", {"name": 1}),
    (
        "list(object({name=string, port=optional(number, 80), tags=optional(map(string), {}), "
        "inner=optional(object({x=optional(bool, true), y=optional(list(string))}), {})}))",
        [
            {"name": "web"},
            {"name": 1, "port": "8080", "tags": {"a": 1}, "inner": {"x": "false"}},
            {"name": "n", "inner": None},
        ],
    ),
    ("object({a = optional(string), b = optional(number, null)})", {}),
    ('object({s = optional(set(string), ["b", "a", "b"])})', {"s": None}),
    (
        'map(object({enabled=optional(bool, false), cidrs=optional(list(string), ["10.0.0.0/8"])}))',
        {"x": {}, "y": {"enabled": True, "cidrs": []}},
    ),
    ("object({n = number, extra_ignored = optional(string)})", {"n": "7", "unused": 1}),
    ("list(list(string))", [[1, 2], []]),
    ("map(list(number))", {"a": ["1"], "b": []}),
    ("map(list(any))", {"a": [1], "b": ["x"]}),
    ("list(object({a=any}))", [{"a": 1}, {"a": "x"}]),
    ("list(map(any))", [{"a": 1}, {"b": "x"}]),
    ("set(any)", [1, "1", "a"]),
    ("map(any)", {"x": {"a": 1}, "y": {"b": "z"}}),
    ("list(any)", [[1], ["a", 2]]),
    ('list(object({a=optional(string, "x"), b=optional(tuple([number, string]))}))', [{}, {"b": ["1", 2]}]),
    ("object({a=optional(string, null)})", {"a": None}),
    ("object({a=list(any)})", {"a": [True, "x"]}),
    ("tuple([any, any])", [1, "x"]),
    ("map(object({x=optional(number)}))", {}),
    ("any", [1, "x", {"a": None}]),
]


@pytest.fixture(scope="module")
def terraform_conversions(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH: conversions cannot be checked against it")
    root: Path = tmp_path_factory.mktemp("types-oracle")
    blocks = [
        f'variable "v{i}" {{\n  type = {type_text}\n  default = {hcl(default)}\n}}\n'
        for i, (type_text, default) in enumerate(CONVERSIONS)
    ]
    (root / "main.tf").write_text("\n".join(blocks))
    expression = (
        "base64encode(jsonencode([" + ", ".join(f"var.v{i}" for i in range(len(CONVERSIONS))) + "]))\n"
    )
    env = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "CHECKPOINT_DISABLE": "1"}
    completed = subprocess.run(
        ["terraform", "console", "-no-color"],
        input=expression,
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(base64.b64decode(completed.stdout.strip().strip('"')))


@pytest.mark.terraform
@pytest.mark.parametrize("index", range(len(CONVERSIONS)), ids=[t for t, _ in CONVERSIONS])
def test_it_converts_variable_defaults_exactly_as_terraform_does(
    index: int, terraform_conversions: list[Any]
) -> None:
    type_text, default = CONVERSIONS[index]
    ours = to_json_compatible(convert(default, parse_type(type_text)))
    assert ours == terraform_conversions[index]


# --- and where terraform refuses a default, we refuse it too (terraform validate reports them all at once) ---

ACCEPT_OR_REJECT: list[tuple[str, Any]] = [
    ("number", "abc"),
    ("number", "0x10"),
    ("number", "1,000"),
    ("number", " 1"),
    ("bool", 1),
    ("bool", "yes"),
    ("bool", "1"),
    ("string", [1]),
    ("string", {"a": 1}),
    ("list(string)", {"a": 1}),
    ("set(string)", [[1]]),
    ("map(string)", [1]),
    ("map(number)", {"a": None}),
    ("tuple([string])", ["a", "b"]),
    ("object({a=number})", {"a": "x"}),
    ("object({name=string, size=number})", {"size": 1}),
    ("list(object({a=string}))", [{"b": 1}]),
    ("map(any)", {"a": 1, "b": True}),
    ("list(any)", [{"a": 1}, [1]]),
    ("list(any)", [1, True]),
    ("list(any)", [[1], [True]]),
    ("object({a=optional(number)})", {"a": "x"}),
    ("list(string)", [None, "a"]),
    ("set(any)", [{"a": 1}, {"b": "x"}]),
]


@pytest.fixture(scope="module")
def terraform_rejections(tmp_path_factory: pytest.TempPathFactory) -> set[int]:
    """Indexes of ACCEPT_OR_REJECT whose default terraform validate rejects."""
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH: conversions cannot be checked against it")
    root: Path = tmp_path_factory.mktemp("types-validate")
    lines: list[str] = []
    line_of_variable: dict[int, int] = {}
    for i, (type_text, default) in enumerate(ACCEPT_OR_REJECT):
        line_of_variable[len(lines) + 3] = i  # the default sits on the third line of each block
        lines += [f'variable "v{i}" {{', f"  type = {type_text}", f"  default = {hcl(default)}", "}"]
    (root / "main.tf").write_text("\n".join(lines) + "\n")
    env = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "CHECKPOINT_DISABLE": "1"}
    completed = subprocess.run(
        ["terraform", "validate", "-json", "-no-color"],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
        check=False,
    )
    report = json.loads(completed.stdout)
    rejected = set()
    for diagnostic in report["diagnostics"]:
        assert diagnostic["summary"] == "Invalid default value for variable", diagnostic
        rejected.add(line_of_variable[diagnostic["range"]["start"]["line"]])
    return rejected


@pytest.mark.terraform
@pytest.mark.parametrize(
    "index", range(len(ACCEPT_OR_REJECT)), ids=[f"{t}<-{d!r}" for t, d in ACCEPT_OR_REJECT]
)
def test_it_rejects_exactly_the_defaults_terraform_rejects(
    index: int, terraform_rejections: set[int]
) -> None:
    type_text, default = ACCEPT_OR_REJECT[index]
    try:
        convert(default, parse_type(type_text))
        we_reject = False
    except ConversionError:
        we_reject = True
    assert we_reject == (index in terraform_rejections)
