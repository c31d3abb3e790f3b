"""What we check and rewrite before an engine sees a policy (pure Python, no engine process)."""

import json

import pytest

from policies_app.rego import PolicyCompileError, PolicyModule, PolicySource
from policies_app.rego.annotations import resolve_metadata_calls
from policies_app.rego.errors import parse_opa_error, parse_regorus_error
from policies_app.rego.lexer import code_tokens, find_calls, statements, tokenize
from policies_app.rego.prepare import library_modules, policy_payload, prepare_policy, rule_ref


def prepare(*modules, version="v1", data=None):
    policy = PolicySource("k@1", "policy", version, tuple(PolicyModule(f, s) for f, s in modules), data)
    return prepare_policy(policy_payload(policy))


def test_it_finds_a_builtin_call_but_not_the_same_words_in_strings_comments_or_fields():
    source = (
        "package env0\n"
        "# http.send is not called here\n"
        'msg := "http.send"\n'
        "field := input.http.send\n"
        'raw := `net.lookup_ip_addr("x")`\n'
        'deny contains "x" if { r := http.send({"url": "u"}); r.status_code == 200 }\n'
    )
    code = code_tokens(tokenize(source))
    found = [
        (name, code[first].line, code[first].column) for name, first, _ in find_calls(code, {"http.send"})
    ]
    assert found == [("http.send", 6, 29)]


def test_it_splits_a_module_into_package_imports_and_rules():
    source = (
        "package env0.sub\n\nimport rego.v1\n\n"
        "default allow := false\n"
        'deny contains msg if {\n  msg := concat(",", [\n    "a",\n  ])\n}\n'
        "f(x) := 1 if { x == 1 } else := 2\n"
        "allow if {\n  true\n} else := false\n"
    )
    found = [(s.kind, s.path, s.line) for s in statements(code_tokens(tokenize(source)))]
    assert found == [
        ("package", ("env0", "sub"), 1),
        ("import", ("rego", "v1"), 3),
        ("rule", ("allow",), 5),
        ("rule", ("deny",), 6),
        ("rule", ("f",), 11),
        ("rule", ("allow",), 12),
    ]


def test_it_rejects_http_send_with_its_position():
    source = 'package env0\n\ndeny contains "down" if {\n  resp := http.send({"method": "get", "url": "https://x"})\n  resp.status_code != 200\n}\n'
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("net.rego", source))
    error = caught.value
    assert (error.file, error.line, error.column) == ("net.rego", 4, 11)
    assert "http.send reaches the network" in error.message
    assert str(error).startswith("net.rego:4:11: http.send")


def test_it_rejects_net_lookup_ip_addr():
    source = 'package env0\n\nwarn contains "dns" if { count(net.lookup_ip_addr("example.com")) > 0 }\n'
    with pytest.raises(PolicyCompileError, match="net.lookup_ip_addr reaches the network"):
        prepare(("dns.rego", source))


def test_it_refuses_opa_runtime():
    # Allowed until issue 16: OPA fills it with the environment (secrets) whenever the host sets it.
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("rt.rego", 'package env0\n\nwarn contains "x" if { opa.runtime() }\n'))
    assert (caught.value.file, caught.value.line, caught.value.column) == ("rt.rego", 3, 24)
    assert caught.value.message.startswith("opa.runtime exposes the server")


def test_it_reads_decisions_from_env0_when_a_module_says_env0():
    prepared = prepare(
        ("a.rego", "package helpers\n\nx := 1\n"), ("b.rego", "package env0\n\nallow := true\n")
    )
    assert prepared.package == ("env0",)
    assert rule_ref(prepared.package, "deny") == "data.env0.deny"


def test_it_refuses_a_policy_whose_only_package_is_not_env0():
    # env0 reads data.env0 only: this policy would never decide there (issue 7, deviation 4).
    source = 'package env0.multipleApprovals\n\npending["At least 2 approvals must be given."] { count(input.approvers) < 2 }\n'
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("a.rego", source), version="v0")
    assert (caught.value.file, caught.value.line) == ("a.rego", 1)
    assert "use `package env0`" in caught.value.message
    assert "package env0.multipleApprovals" in caught.value.message


def test_it_refuses_modules_in_other_packages_when_none_is_env0():
    with pytest.raises(PolicyCompileError, match="use `package env0`"):
        prepare(("a.rego", "package a\n\nx := 1\n"), ("b.rego", "package b\n\ny := 1\n"))


def test_it_rejects_a_module_without_package():
    with pytest.raises(PolicyCompileError, match="no package declaration"):
        prepare(("a.rego", "allow := true\n"))


def test_it_reserves_library_module_names():
    with pytest.raises(PolicyCompileError, match="are reserved"):
        prepare(("library/x.rego", "package env0\n\nallow := true\n"))


def test_it_rejects_policy_data_that_is_not_an_object():
    with pytest.raises(PolicyCompileError, match="must be a JSON object"):
        prepare(("a.rego", "package env0\n\nallow := true\n"), data=[1, 2])


def test_it_rejects_policy_data_that_is_not_json():
    with pytest.raises(PolicyCompileError, match="not JSON-compatible"):
        prepare(("a.rego", "package env0\n\nallow := true\n"), data={"when": object()})


def test_it_hashes_everything_that_changes_compilation():
    def digest(version="v1", source="package env0\n", data=None):
        return policy_payload(PolicySource("k", "n", version, (PolicyModule("a.rego", source),), data))[
            "hash"
        ]

    base = digest()
    assert base == digest()
    assert len({base, digest(version="v0"), digest(source="package env0\n\n"), digest(data={"a": 1})}) == 4


METADATA_POLICY = """# METADATA
# title: Deployments
# description: approval rules
package env0

# METADATA
# title: Two approvals
# description: at least two people approved
# authors:
# - Alice Example <alice@example.com>
# related_resources:
# - https://example.com/runbook
# custom:
#   severity: high

allow contains format(rego.metadata.rule()) if {
\tcount(input.approvers) > 1
}

# METADATA
# description: the deny document
# scope: document
deny contains sprintf("%d", [count(rego.metadata.chain())]) if { false }

pending contains rego.metadata.rule().title if { true }

format(meta) := meta.description
"""


def test_it_replaces_rego_metadata_rule_with_the_rules_annotations_on_the_same_line():
    [(_, rewritten)] = resolve_metadata_calls([("p.rego", METADATA_POLICY)])
    lines = rewritten.splitlines()
    assert len(lines) == len(METADATA_POLICY.splitlines())
    allow_line = lines[15]
    assert allow_line.startswith("allow contains format({") and allow_line.endswith(") if {")
    literal = json.loads(allow_line[len("allow contains format(") : -len(") if {")])
    assert literal == {
        "scope": "rule",
        "title": "Two approvals",
        "description": "at least two people approved",
        "authors": [{"name": "Alice Example", "email": "alice@example.com"}],
        "related_resources": [{"ref": "https://example.com/runbook"}],
        "custom": {"severity": "high"},
    }
    # a rule without a rule-scope block gets an empty object, as in OPA
    assert lines[24] == "pending contains {}.title if { true }"


def test_it_builds_the_metadata_chain_from_rule_to_package():
    [(_, rewritten)] = resolve_metadata_calls([("p.rego", METADATA_POLICY)])
    deny_line = rewritten.splitlines()[22]
    literal = json.loads(deny_line[len('deny contains sprintf("%d", [count(') : -len(")]) if { false }")])
    assert literal == [
        {"path": ["env0", "deny"]},
        {"path": ["env0", "deny"], "annotations": {"scope": "document", "description": "the deny document"}},
        {
            "path": ["env0"],
            "annotations": {"scope": "package", "title": "Deployments", "description": "approval rules"},
        },
    ]


def test_it_leaves_modules_without_metadata_calls_untouched():
    source = "package env0\n\n# METADATA\n# title: [unclosed\nallow := true\n"
    assert resolve_metadata_calls([("p.rego", source)]) == [("p.rego", source)]


def test_it_reports_invalid_metadata_yaml_with_its_line():
    source = "package env0\n\n# METADATA\n# title: ok\n# description: [unclosed\nallow contains rego.metadata.rule().title if { true }\n"
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("p.rego", source))
    assert caught.value.file == "p.rego"
    assert caught.value.line in (5, 6)
    assert "invalid METADATA block" in caught.value.message


def test_it_rejects_a_package_scope_on_a_rule():
    source = "package env0\n\n# METADATA\n# scope: package\nallow contains rego.metadata.rule().title if { true }\n"
    with pytest.raises(PolicyCompileError, match="must be applied to a package"):
        prepare(("p.rego", source))


def test_it_rejects_other_rego_metadata_references():
    source = "package env0\n\nallow contains x if { x := rego.metadata.rules() }\n"
    with pytest.raises(PolicyCompileError, match="only rego.metadata.rule"):
        prepare(("p.rego", source))


REGORUS_ERROR = """
--> policy.rego:6:1
  |
6 | }
  | ^
error: expecting expression

Stack backtrace:
   0: <unknown>
  22: method_vectorcall_FASTCALL_KEYWORDS
             at ./python-build/Objects/descrobject.c:426:24
"""


def test_it_keeps_only_the_position_and_error_line_of_a_regorus_error():
    parsed = parse_regorus_error(REGORUS_ERROR)
    assert (parsed.file, parsed.line, parsed.column, parsed.message) == (
        "policy.rego",
        6,
        1,
        "expecting expression",
    )


def test_it_reads_a_regorus_error_without_position():
    parsed = parse_regorus_error("not a valid rule path\n\nStack backtrace:\n   0: <unknown>\n")
    assert (parsed.file, parsed.line, parsed.message) == (None, None, "not a valid rule path")


def test_it_reads_the_first_of_opas_errors_with_its_position():
    text = (
        "bundle activation failed: 2 errors occurred:\n"
        "p.rego:3: rego_type_error: undefined function nosuch\n"
        "p.rego:4: rego_unsafe_var_error: var x is unsafe"
    )
    parsed = parse_opa_error(text)
    assert (parsed.file, parsed.line, parsed.column, parsed.message) == (
        "p.rego",
        3,
        None,
        "undefined function nosuch",
    )


def test_it_reads_an_opa_error_without_position():
    parsed = parse_opa_error("1 error occurred: something went wrong")
    assert (parsed.file, parsed.line, parsed.message) == (None, None, "something went wrong")


def test_it_loads_every_library_module_except_tests(tmp_path):
    (tmp_path / "tfstate.rego").write_text("package lib.tfstate\n\nimport rego.v1\n\nx := 1\n")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "plan.rego").write_text("package lib.plan\n\nimport rego.v1\n\ny := 2\n")
    (tmp_path / "tfstate_test.rego").write_text("package lib.tfstate_test\n\ntest_x if { true }\n")
    modules = library_modules(tmp_path)
    assert [name for name, _ in modules] == ["library/nested/plan.rego", "library/tfstate.rego"]


def test_it_has_no_library_when_the_folder_is_missing(tmp_path):
    assert library_modules(tmp_path / "absent") == ()


def test_it_prints_errors_as_policy_file_line_column_message():
    from policies_app.rego import PolicyError

    assert (
        str(PolicyError("cost limit", "policy.rego", 4, 11, "boom")) == "cost limit: policy.rego:4:11: boom"
    )
    assert (
        str(PolicyError("cost limit", "policy.rego", None, None, "boom")) == "cost limit: policy.rego: boom"
    )
    assert str(PolicyError("cost limit", None, None, None, "boom")) == "cost limit: boom"
    error = PolicyCompileError("boom", policy="p", file="a.rego", line=2, column=5)
    assert str(error) == "a.rego:2:5: boom"
    assert (error.policy, error.file, error.line, error.column, error.message) == (
        "p",
        "a.rego",
        2,
        5,
        "boom",
    )


def test_it_refuses_an_unknown_engine():
    from policies_app.rego import check_policy, evaluate_policies

    with pytest.raises(ValueError, match="unknown Rego engine 'regopy'"):
        evaluate_policies([], "{}", "regopy")
    with pytest.raises(ValueError, match="unknown Rego engine 'regopy'"):
        check_policy(PolicySource("k", "n", "v1", ()), "regopy")


def test_it_takes_package_and_subpackages_annotations_from_other_modules_into_the_chain():
    parent = "# METADATA\n# scope: subpackages\n# title: All deployments\npackage deploy\n"
    sibling = "# METADATA\n# title: Production\npackage deploy.prod\n"
    rules = "package deploy.prod\n\ndeny contains x if { x := json.marshal(rego.metadata.chain()) }\n"
    rewritten = dict(resolve_metadata_calls([("a.rego", parent), ("b.rego", sibling), ("c.rego", rules)]))
    line = rewritten["c.rego"].splitlines()[2]
    literal = json.loads(line[len("deny contains x if { x := json.marshal(") : -len(") }")])
    assert literal == [
        {"path": ["deploy", "prod", "deny"]},
        {"path": ["deploy", "prod"], "annotations": {"scope": "package", "title": "Production"}},
        {"path": ["deploy"], "annotations": {"scope": "subpackages", "title": "All deployments"}},
    ]
    assert rewritten["a.rego"] == parent


def test_it_sends_plain_strings_to_the_worker_whatever_str_subclass_the_caller_uses():
    class Marked(str):  # like Django's SafeString or a TextChoices member
        pass

    policy = PolicySource(
        Marked("k@1"), Marked("n"), Marked("v1"), (PolicyModule(Marked("a.rego"), Marked("package env0\n")),)
    )
    payload = policy_payload(policy)
    values = [payload["key"], payload["name"], payload["rego_version"], *payload["modules"][0]]
    assert [type(value) for value in values] == [str] * 5


def test_it_finds_a_network_call_inside_a_template_string_expression():
    source = 'package env0\n\nwarn contains $"status {http.send({"url": "u"}).status_code}" if { true }\n'
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("t.rego", source))
    assert (caught.value.line, caught.value.column) == (3, 25)


def test_it_finds_a_builtin_named_with_string_index_steps():
    source = (
        "package env0\n"
        'a := http["send"]({"url": "u"})\n'
        'b := net[`lookup_ip_addr`]("x")\n'
        'c := input.http["send"]\n'
        "d := http[input.name]\n"
    )
    code = code_tokens(tokenize(source))
    found = [
        (name, code[first].line, code[first].column)
        for name, first, _ in find_calls(code, {"http.send", "net.lookup_ip_addr"})
    ]
    assert found == [("http.send", 2, 6), ("net.lookup_ip_addr", 3, 6)]


def test_it_keeps_a_rule_body_that_starts_on_the_line_after_a_keyword_in_the_rule():
    source = (
        "package env0\n"
        "import future.keywords.if\n"
        'deny contains "x" if\n'
        "  input.cost > 1\n"
        "pending contains\n"
        '  "y" if true\n'
        "warn contains msg if {\n  true\n} else :=\n  3\n"
        "allow if some x in\n  input.xs\n"
    )
    found = [(s.kind, s.path, s.line) for s in statements(code_tokens(tokenize(source)))]
    assert found == [
        ("package", ("env0",), 1),
        ("import", ("future", "keywords", "if"), 2),
        ("rule", ("deny",), 3),
        ("rule", ("pending",), 5),
        ("rule", ("warn",), 7),
        ("rule", ("allow",), 11),
    ]


def test_it_refuses_a_metadata_call_it_cannot_attribute_to_a_rule():
    # An expression read as the start of a statement must not get {} as "its" annotations.
    source = (
        "package env0\n\n# METADATA\n# custom:\n#   max: 1\n"
        'deny contains "over" if input.costs[0]\n'
        "input.cost > rego.metadata.rule().custom.max\n"
    )
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("p.rego", source))
    assert (caught.value.file, caught.value.line, caught.value.column) == ("p.rego", 7, 14)
    assert "cannot tell which rule this rego.metadata.rule() call belongs to" in caught.value.message


def test_it_rewrites_uses_of_an_import_of_its_own_package_to_full_references_on_the_same_lines():
    source = (
        "package env0\n"
        "import data.env0 as e\n"
        "import data.lib.tfplan\n"
        'deny contains "x" if {\n  e.protected\n  e["other"]\n  tfplan.deletes\n}\n'
        "protected := true\nother := true\n"
    )
    [(_, rewritten)] = prepare(("p.rego", source)).modules
    assert rewritten.count("\n") == source.count("\n")
    assert rewritten.splitlines()[4:7] == [
        "  data.env0.protected",
        '  data.env0["other"]',
        "  tfplan.deletes",
    ]


def test_it_refuses_a_local_variable_that_shadows_an_import_of_its_own_package():
    source = (
        "package env0\nimport data.env0.protected\n"
        'deny contains "x" if {\n  protected := 1\n  protected == 1\n}\nprotected := true\n'
    )
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("p.rego", source))
    assert (caught.value.file, caught.value.line, caught.value.column) == ("p.rego", 4, 3)
    assert "shadows the import of data.env0.protected" in caught.value.message


@pytest.mark.parametrize("reference", ["data.env0", "data", "data.env0[k]", "e", "e[k]"])
def test_it_refuses_a_reference_to_the_whole_document_of_its_own_package(reference):
    source = (
        "package env0.rules\nimport data.env0 as e\n"
        f'deny contains "x" if {{\n  some k\n  v := {reference}\n  v == k\n}}\n'
    )
    with pytest.raises(PolicyCompileError) as caught:
        prepare(("main.rego", "package env0\nallow := true\n"), ("p.rego", source))
    assert (caught.value.file, caught.value.line, caught.value.column) == ("p.rego", 5, 8)
    assert "whole document of this policy's package" in caught.value.message


def test_it_accepts_references_to_other_packages_and_to_rules_of_its_own():
    source = (
        "package env0\nimport data.lib.approvals\n"
        'deny contains "x" if {\n  data.env0.helper\n  data.settings.limit > 1\n  approvals.count_in_team("ops") < 2\n}\n'
        "helper := true\n"
    )
    [(_, rewritten)] = prepare(("p.rego", source), data={"settings": {"limit": 2}}).modules
    assert rewritten == source


@pytest.mark.parametrize("key", ["env0", "lib", "team"])
def test_it_refuses_policy_data_keys_that_name_its_packages_or_the_library(key):
    modules = [("a.rego", "package env0\nallow := true\n"), ("b.rego", "package team.rules\nx := 1\n")]
    with pytest.raises(PolicyCompileError) as caught:
        prepare(*modules, data={key: {"x": 1}, "settings": 1})
    assert f"top-level key {key!r}" in caught.value.message
    assert prepare(*modules, data={"settings": {"env0": 1}}).data_json == '{"settings":{"env0":1}}'
