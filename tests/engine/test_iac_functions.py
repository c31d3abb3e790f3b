"""call_function behaviour terraform console cannot show: unknown values, the filesystem fence, templates,
unsupported and mis-called functions. Values are checked against terraform in test_iac_functions_terraform.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from policies_app.iac.functions import (
    SUPPORTED_FUNCTIONS,
    FunctionContext,
    FunctionError,
    UnsupportedFunction,
    call_function,
)
from policies_app.iac.values import UNKNOWN, TfSet, is_unknown


@pytest.fixture
def root(tmp_path: Path) -> Path:
    module = tmp_path / "root"
    (module / "modules" / "app").mkdir(parents=True)
    (module / "hello.txt").write_text("hello")
    (module / "modules" / "app" / "user_data.tpl").write_text("name=${name}")
    (tmp_path / "secret.txt").write_text("top secret")
    return module


@pytest.fixture
def ctx(root: Path) -> FunctionContext:
    return FunctionContext(module_dir=str(root), source_root=str(root), cwd=str(root))


def call(name: str, *args: Any, ctx: FunctionContext | None = None) -> Any:
    return call_function(
        name, list(args), ctx or FunctionContext("/nonexistent", "/nonexistent", "/nonexistent")
    )


# --- unknown values ------------------------------------------------------------------------------------------


def test_it_makes_the_result_unknown_when_an_argument_is_unknown() -> None:
    assert is_unknown(call("upper", UNKNOWN))
    assert is_unknown(call("join", ",", ["a", UNKNOWN]))
    assert is_unknown(call("jsonencode", {"a": [UNKNOWN]}))
    assert is_unknown(call("format", "%s-%s", "a", UNKNOWN))
    assert is_unknown(call("cidrsubnet", UNKNOWN, 4, 1))


def test_it_knows_the_length_of_a_sorted_list_holding_unknowns_but_not_its_order() -> None:
    # As terraform plans sort([unknown, "b"]) (iac_corpus/functions_over_unknowns).
    assert call("sort", ["b", UNKNOWN]) == [UNKNOWN, UNKNOWN]


def test_it_knows_the_length_of_a_list_holding_unknown_elements() -> None:
    assert call("length", [UNKNOWN, "b"]) == 2
    assert call("length", {"a": UNKNOWN}) == 1
    assert is_unknown(call("length", UNKNOWN))


def test_it_knows_the_keys_of_a_map_with_unknown_values() -> None:
    assert call("keys", {"b": UNKNOWN, "a": 1}) == ["a", "b"]
    assert call("values", {"b": UNKNOWN, "a": 1}) == [1, UNKNOWN]


def test_it_keeps_unknown_elements_inside_collection_results() -> None:
    assert call("concat", ["a"], [UNKNOWN]) == ["a", UNKNOWN]
    assert call("merge", {"a": UNKNOWN}, {"b": 1}) == {"a": UNKNOWN, "b": 1}
    assert call("tolist", [UNKNOWN, "x"]) == [UNKNOWN, "x"]
    assert call("tomap", {"a": UNKNOWN, "b": 1}) == {"a": UNKNOWN, "b": 1}
    assert call("element", ["a", UNKNOWN], 0) == "a"
    assert call("element", ["a", UNKNOWN], 1) is UNKNOWN
    assert call("element", ["a"], UNKNOWN) is UNKNOWN
    assert call("lookup", {"a": UNKNOWN, "b": 2}, "b") == 2
    assert call("reverse", [UNKNOWN, 1]) == [1, UNKNOWN]
    assert call("slice", [1, UNKNOWN, 3], 0, 2) == [1, UNKNOWN]
    assert call("zipmap", ["a", "b"], [UNKNOWN, 2]) == {"a": UNKNOWN, "b": 2}
    assert call("chunklist", [1, UNKNOWN, 3], 2) == [[1, UNKNOWN], [3]]
    assert call("formatlist", "%s!", ["a", UNKNOWN]) == ["a!", UNKNOWN]


def test_it_returns_the_first_usable_value_of_coalesce_before_an_unknown() -> None:
    assert call("coalesce", None, "", "x", UNKNOWN) == "x"
    assert is_unknown(call("coalesce", None, UNKNOWN, "x"))
    assert call("coalescelist", [], ["a"], UNKNOWN) == ["a"]
    assert is_unknown(call("coalescelist", [], UNKNOWN, ["a"]))


def test_it_decides_alltrue_and_anytrue_when_a_known_element_settles_them() -> None:
    assert call("alltrue", [False, UNKNOWN]) is False
    assert is_unknown(call("alltrue", [True, UNKNOWN]))
    assert call("anytrue", [True, UNKNOWN]) is True
    assert is_unknown(call("anytrue", [False, UNKNOWN]))


def test_it_keeps_unknown_elements_of_a_set_last_and_its_size_unknown() -> None:
    # As terraform plans toset([unknown, unknown, "b", "a"]): two unknowns may still differ.
    assert list(call("toset", [UNKNOWN, UNKNOWN, "b", "a"])) == ["a", "b", UNKNOWN, UNKNOWN]
    assert is_unknown(call("length", TfSet(["a", UNKNOWN])))


@pytest.mark.parametrize(
    "name, args", [("timestamp", []), ("plantimestamp", []), ("uuid", []), ("bcrypt", ["pw"])]
)
def test_it_leaves_apply_time_functions_unknown(name: str, args: list[Any]) -> None:
    assert is_unknown(call(name, *args))


def test_it_computes_uuidv5_because_it_is_deterministic() -> None:
    assert call("uuidv5", "dns", "example.com") == "cfbff0d1-9375-5685-968c-48ce8b15ae17"


def test_it_returns_a_null_format_argument_as_unknown_like_terraform() -> None:
    # terraform 1.11 answers "(known after apply)" for format("%v", null); we match rather than guess.
    assert is_unknown(call("format", "%v", None))


# --- numbers and sets follow values.py ----------------------------------------------------------------------


def test_it_returns_whole_numbers_as_int() -> None:
    for result in [
        call("max", 1.0, 2.0),
        call("ceil", 1.2),
        call("jsondecode", "2.0"),
        call("sum", [0.5, 1.5]),
        call("tonumber", "3.0"),
        call("pow", 2, 3),
        call("log", 8, 2),
    ]:
        assert isinstance(result, int) and not isinstance(result, bool), result
    assert call("range", 0, 1, 0.25) == [0, 0.25, 0.5, 0.75]


def test_it_returns_sets_as_tfsets_in_terraform_order() -> None:
    assert call("toset", ["b", "a", "b"]) == TfSet(["a", "b"])
    assert isinstance(call("setunion", ["b"], ["a"]), TfSet)
    assert list(call("toset", [10, 2, 1])) == [1, 2, 10]


# --- what a caller gets wrong --------------------------------------------------------------------------------


def test_it_refuses_provider_functions_as_unsupported() -> None:
    with pytest.raises(UnsupportedFunction) as error:
        call("provider::aws::arn_parse", "arn:aws:s3:::b")
    assert error.value.name == "provider::aws::arn_parse"
    assert "not supported" in str(error.value)


@pytest.mark.parametrize("name", ["try", "can", "no_such_function", "type"])
def test_it_refuses_functions_it_does_not_implement(name: str) -> None:
    assert name not in SUPPORTED_FUNCTIONS
    with pytest.raises(UnsupportedFunction):
        call(name, 1)


@pytest.mark.parametrize(
    "name, args, fragment",
    [
        ("upper", [], "takes 1 argument, 0 given"),
        ("lookup", [{}, "a", 1, 2], "takes 2 to 3 arguments"),
        ("merge", [1], "merge()"),
        ("max", [], "at least 1"),
        ("tonumber", ["ten"], "tonumber()"),
    ],
)
def test_it_reports_bad_calls_naming_the_function(name: str, args: list[Any], fragment: str) -> None:
    with pytest.raises(FunctionError) as error:
        call(name, *args)
    assert fragment in str(error.value)


def test_it_supports_every_function_family_of_the_terraform_library() -> None:
    expected = {
        "abs",
        "parseint",
        "format",
        "formatlist",
        "regexall",
        "templatestring",
        "setproduct",
        "transpose",
        "csvdecode",
        "yamldecode",
        "textdecodebase64",
        "fileset",
        "templatefile",
        "filebase64sha512",
        "formatdate",
        "timecmp",
        "bcrypt",
        "uuidv5",
        "cidrsubnets",
        "tomap",
        "issensitive",
        "nonsensitive",
    }
    assert expected <= SUPPORTED_FUNCTIONS


# --- the filesystem fence ------------------------------------------------------------------------------------


def test_it_reads_files_inside_the_root_module(ctx: FunctionContext) -> None:
    assert call("file", "hello.txt", ctx=ctx) == "hello"
    assert call("fileexists", "hello.txt", ctx=ctx) is True
    assert call("fileset", ".", "**/*.tpl", ctx=ctx) == TfSet(["modules/app/user_data.tpl"])


@pytest.mark.parametrize("path", ["../secret.txt", "modules/../../secret.txt", "/etc/passwd"])
def test_it_refuses_to_read_outside_the_root_module(ctx: FunctionContext, path: str) -> None:
    for name in ("file", "filebase64", "filesha256", "fileexists"):
        with pytest.raises(FunctionError, match="outside the template"):
            call(name, path, ctx=ctx)


def test_it_refuses_a_fileset_pattern_that_reaches_outside_the_root_module(ctx: FunctionContext) -> None:
    with pytest.raises(FunctionError, match="outside the template"):
        call("fileset", ".", "../*.txt", ctx=ctx)
    with pytest.raises(FunctionError, match="outside the template"):
        call("fileset", "..", "*", ctx=ctx)


def test_it_finds_files_a_module_reaches_with_dot_dot_inside_the_root(root: Path) -> None:
    module = root / "modules" / "app"
    ctx = FunctionContext(module_dir=str(module), source_root=str(root), cwd=str(module))
    assert call("fileset", ".", "../../*.txt", ctx=ctx) == TfSet(["../../hello.txt"])


def test_it_refuses_to_follow_a_symlink_out_of_the_root_module(ctx: FunctionContext, root: Path) -> None:
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    os.symlink(root.parent, root / "up")
    with pytest.raises(FunctionError, match="outside the template"):
        call("file", "link.txt", ctx=ctx)
    assert "link.txt" not in call("fileset", ".", "*", ctx=ctx)
    assert all(not p.startswith("up/") for p in call("fileset", ".", "**", ctx=ctx))


def test_it_resolves_relative_paths_against_the_working_directory(root: Path) -> None:
    ctx = FunctionContext(module_dir=str(root / "modules" / "app"), source_root=str(root), cwd=str(root))
    assert call("file", "modules/app/user_data.tpl", ctx=ctx) == "name=${name}"
    assert call("abspath", "x/../y", ctx=ctx) == f"{root}/y"


# --- templates are rendered by the evaluator -----------------------------------------------------------------


def test_it_hands_templatefile_contents_to_the_evaluator(ctx: FunctionContext) -> None:
    seen: list[tuple[str, str, dict]] = []

    def render(text: str, filename: str, variables: dict) -> str:
        seen.append((text, filename, variables))
        return text.replace("${name}", variables["name"])

    ctx.render_template = render
    assert call("templatefile", "modules/app/user_data.tpl", {"name": "web"}, ctx=ctx) == "name=web"
    assert seen == [("name=${name}", "modules/app/user_data.tpl", {"name": "web"})]
    assert call("templatestring", "name=${name}", {"name": "db"}, ctx=ctx) == "name=db"


def test_it_rejects_templatefile_without_a_renderer_or_with_bad_variable_names(ctx: FunctionContext) -> None:
    with pytest.raises(FunctionError, match="cannot be rendered"):
        call("templatefile", "hello.txt", {}, ctx=ctx)
    ctx.render_template = lambda text, filename, variables: text
    with pytest.raises(FunctionError, match="variable name"):
        call("templatefile", "hello.txt", {"1bad": 1}, ctx=ctx)


# --- RE2 syntax Python's re does not share -------------------------------------------------------------------


def test_it_translates_re2_syntax_that_python_spells_differently() -> None:
    assert call("regex", "a(?i)b", "aB") == "aB"  # a flag group in the middle of the pattern
    assert call("regex", "(?<year>\\d{4})", "in 2024") == {"year": "2024"}
    assert call("regexall", "\\Q.*\\E", "a.*b.*") == [".*", ".*"]
    assert call("regex", "\\d+", "٣12") == "12"  # \d is ASCII-only in RE2
    assert call("regexall", "\\b\\w+\\b", "é ab") == ["ab"]  # and so are \w and \b
    with pytest.raises(FunctionError):
        call("regex", "^a$", "a\n")  # RE2's $ is the very end of the text without (?m)


# --- an evaluation service must not be stalled by one expression --------------------------------------------


def test_it_refuses_results_too_large_to_build_instead_of_hanging() -> None:
    with pytest.raises(FunctionError):
        call("pow", 10**30, 10**30)
    with pytest.raises(FunctionError, match="too large"):
        call("format", "%9999999999s", "x")
    with pytest.raises(FunctionError, match="more than"):
        call("setproduct", list(range(1000)), list(range(1000)), list(range(10)))
    with pytest.raises(FunctionError, match="more than"):
        call("indent", 10**9, "a\nb")
    assert call("pow", 2, 100) == 2**100  # exact where it is reasonable


def test_it_reports_a_directory_given_to_file_as_a_function_error(ctx: FunctionContext) -> None:
    with pytest.raises(FunctionError, match="no file exists"):
        call("file", "modules", ctx=ctx)


def test_it_returns_maps_in_key_order_as_terraform_iterates_them() -> None:
    # A for expression over merge(...) walks keys lexically in terraform; dict order must agree.
    assert list(call("merge", {"b": 1}, {"a": 2})) == ["a", "b"]
    assert list(call("zipmap", ["z", "a"], [1, 2])) == ["a", "z"]
    assert list(call("jsondecode", '{"b": 1, "a": {"d": 1, "c": 2}}')) == ["a", "b"]
    assert list(call("jsondecode", '{"b": 1, "a": {"d": 1, "c": 2}}')["a"]) == ["c", "d"]
    assert list(call("yamldecode", "b: 1\na: 2\n")) == ["a", "b"]
    assert list(call("tomap", {"b": 1, "a": 2})) == ["a", "b"]


# --- OpenTofu's own functions (terraform has none of them; the examples are OpenTofu's documentation's) ----


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello+World%21", "Hello World!"),
        ("%E2%98%83", "\u2603"),
        ("foo%3Abar%40localhost%3Ffoo%3Dbar%26bar%3Dbaz", "foo:bar@localhost?foo=bar&bar=baz"),
    ],
)
def test_urldecode_undoes_urlencode(text: str, expected: str) -> None:
    assert call("urldecode", text) == expected
    assert call("urldecode", call("urlencode", expected)) == expected


def test_urldecode_refuses_a_broken_escape() -> None:
    with pytest.raises(FunctionError, match="invalid URL escape"):
        call("urldecode", "100%")


@pytest.mark.parametrize(
    "prefix, candidate, expected",
    [
        ("192.168.2.0/20", "192.168.2.1", True),
        ("192.168.2.0/20", "192.168.2.0/22", True),
        ("192.168.2.0/20", "192.126.2.1", False),
        ("192.168.2.0/20", "192.126.2.0/18", False),
        ("fe80::/48", "fe80::1", True),
        ("fe80::/48", "fe81::1", False),
    ],
)
def test_cidrcontains_tells_whether_an_address_or_prefix_lies_inside(prefix, candidate, expected) -> None:
    assert call("cidrcontains", prefix, candidate) is expected


def test_cidrcontains_refuses_two_address_families() -> None:
    with pytest.raises(FunctionError, match="same address family"):
        call("cidrcontains", "10.0.0.0/8", "fe80::1")


def test_base64gunzip_undoes_base64gzip() -> None:
    assert call("base64gunzip", call("base64gzip", "h\u00e9llo")) == "h\u00e9llo"
    with pytest.raises(FunctionError, match="gunzip"):
        call("base64gunzip", "aGVsbG8=")


def test_an_unknown_result_is_not_null_unless_terraform_says_it_may_be() -> None:
    # cty's refineNonNull, as terraform 1.11 plans it (iac_corpus/template_refinements).
    assert call("upper", UNKNOWN).not_null
    assert not call("lookup", {"a": UNKNOWN}, "a").not_null
    assert not call("tostring", call("upper", UNKNOWN)).not_null  # to* keeps nothing of its argument


def test_startswith_is_decided_by_an_unknown_strings_known_beginning() -> None:
    from policies_app.iac.values import UnknownValue

    prefixed = UnknownValue(None, True, prefix="https:")
    assert call("startswith", prefixed, "ht") is True
    assert call("startswith", prefixed, "https-") is False
    assert is_unknown(call("startswith", prefixed, "https://"))
    assert call("startswith", UNKNOWN, "") is True
