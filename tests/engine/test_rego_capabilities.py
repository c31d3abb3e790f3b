"""The one list of Rego builtins the platform runs (policies_app/rego/capabilities.py), without Django:
every OPA 1.20 builtin reviewed, refused ones found on the syntax tree wherever they stand (a call, a
``with`` target or value, a rule head, an import alias), and a policy's tests never running one."""

import json
import re
from pathlib import Path

import pytest

from policies_app.rego import (
    ENGINES,
    PolicyCompileError,
    PolicyModule,
    PolicySource,
    check_policy,
    evaluate_policies,
    run_policy_tests,
)
from policies_app.rego.capabilities import (
    ALLOWED_BUILTINS,
    OPA_VERSION,
    REFUSED_BUILTINS,
    RefusedBuiltin,
    refused_in_tokens,
    refused_in_tree,
)
from policies_app.rego.syntax_tree import parse_module
from tests.receiver import Receiver

POLICY = 'package env0\n\nimport rego.v1\n\nf(x) := x\n\nallow contains "ok" if input.size < 10\n'


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def policy(source=POLICY, version="v1"):
    return PolicySource("caps@1", "caps", version, (PolicyModule("main.rego", source),), None)


def opa_builtins() -> set[str]:
    """The builtins of the OPA inside opa-golib-python-bindings: the newest capabilities document that
    OPA embeds (one per release; ``opa capabilities --current`` prints the same list)."""
    import opa_bindings

    data = (Path(opa_bindings.__path__[0]) / "libopabridge.so").read_bytes()
    decoder = json.JSONDecoder()
    lists = []
    for match in re.finditer(rb'\{\s*"builtins"\s*:\s*\[', data):
        document, _ = decoder.raw_decode(
            data[match.start() : match.start() + 4_000_000].decode("utf-8", "replace")
        )
        lists.append({builtin["name"] for builtin in document["builtins"]})
    assert len(lists) > 40, "OPA embeds one capabilities document per release"
    return max(lists, key=len)


def test_every_builtin_of_opa_is_reviewed_allowed_or_refused():
    builtins = opa_builtins()
    assert "strings.split_n" in builtins and OPA_VERSION == "1.20"  # added in 1.19: the list is current
    assert not ALLOWED_BUILTINS & REFUSED_BUILTINS.keys()
    assert builtins - ALLOWED_BUILTINS - REFUSED_BUILTINS.keys() == set(), "review the new builtins"
    assert ALLOWED_BUILTINS | REFUSED_BUILTINS.keys() == builtins


def test_every_builtin_of_regorus_is_one_of_opas_that_we_reviewed():
    import regorus

    engine = regorus.Engine()
    engine.add_policy("r.rego", "package r\n\nx := opa.runtime().builtins\n")
    [row] = json.loads(engine.eval_query_as_json("data.r.x"))["result"]
    internal = {"__builtin_sets.intersection", "__builtin_sets.union"}  # how regorus spells & and |
    assert set(row["expressions"][0]["value"]) - internal <= ALLOWED_BUILTINS | REFUSED_BUILTINS.keys()


# Each way of naming a refused builtin, and where it is (line, column). Both readings must find it.
NAMED = {
    "call": ('x := http.send({"method": "get", "url": "u"})', "http.send", 5, 6),
    "string index": ('x := http["send"]({"url": "u"})', "http.send", 5, 6),
    "with value": ("x := y if { y := f(1) with f as http.send }", "http.send", 5, 33),
    "with builtin": ("x := y if { y := count([]) with count as http.send }", "http.send", 5, 42),
    "with target": ("x := y if { y := f(1) with http.send as f }", "http.send", 5, 28),
    "function head": ("http.send(r) := r", "http.send", 5, 1),
    "import alias": ("import data.helpers as http\n\nx := http.send(1)", "http.send", 7, 6),
    "dns": ('x := net.lookup_ip_addr("example.com")', "net.lookup_ip_addr", 5, 6),
    "runtime": ("x := opa.runtime().env", "opa.runtime", 5, 6),
    "schema": ('x := json.match_schema({}, {"$ref": "u"})', "json.match_schema", 5, 6),
    "schema check": ('x := json.verify_schema({"$ref": "u"})', "json.verify_schema", 5, 6),
    "comprehension": ('x := [r | some u in ["a"]; r := http.send({"url": u})]', "http.send", 5, 33),
    "every": ('x if { every u in ["a"] { http.send({"url": u}) } }', "http.send", 5, 27),
}


@pytest.mark.parametrize("reading", ["tree", "tokens"])
@pytest.mark.parametrize("case", sorted(NAMED))
def test_both_readings_find_a_refused_builtin_wherever_it_is_named(case, reading):
    text, builtin, line, column = NAMED[case]
    source = f"package env0\n\nimport rego.v1\n\n{text}\n"
    found = (
        refused_in_tree(parse_module("t.rego", source, False))
        if reading == "tree"
        else refused_in_tokens("t.rego", source)
    )
    assert found == RefusedBuiltin(builtin, "t.rego", line, column)


def test_names_that_only_look_like_a_refused_builtin_are_allowed():
    source = (
        "package env0\n\nimport rego.v1\n\n"
        "# http.send is only mentioned\n"
        'a := "http.send"\n'
        "b := input.http.send\n"
        'c := net.cidr_contains("10.0.0.0/8", "10.1.2.3")\n'
        "d := json.marshal({})\n"
        "e := opa\n"
        "opa := 1\n"
    )
    module = parse_module("t.rego", source, False)
    assert refused_in_tree(module) is None and refused_in_tokens("t.rego", source) is None


def test_a_column_counts_characters_not_bytes():
    source = 'package env0\n\nimport rego.v1\n\nx := ["é", http.send({"url": "u"})]\n'
    assert refused_in_tree(parse_module("t.rego", source, False)).column == 12


@pytest.mark.parametrize("engine", ENGINES)
def test_a_policy_that_names_a_refused_builtin_is_refused_with_its_position_and_fails_closed(engine):
    source = 'package env0\n\nimport rego.v1\n\nallow contains "x" if {\n  count(opa.runtime()) >= 0\n}\n'
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy(source), engine)
    assert (caught.value.file, caught.value.line, caught.value.column) == ("main.rego", 6, 9)
    assert caught.value.message.startswith("opa.runtime exposes the server")
    result = evaluate_policies([policy(source)], "{}", engine)
    assert result.decision == "error" and "opa.runtime" in str(result.error)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_builtin_replaced_by_http_send_is_refused_before_opa_would_send_the_request(engine, receiver):
    # OPA sends this request (tried with opa-golib-python-bindings 0.4.4): `count` becomes http.send.
    source = (
        "package env0\n\nimport rego.v1\n\n"
        f'deny contains "sent" if {{\n  r := count({{"method": "post", "url": "{receiver.url}"}}) '
        "with count as http.send\n  r.status_code == 200\n}\n"
    )
    result = evaluate_policies([policy(source)], "{}", engine)
    assert result.decision == "error"
    assert (result.error.file, result.error.line) == ("main.rego", 6)
    assert receiver.received == []


TEST_SENDING = """package env0_test

import rego.v1

test_reaches_out if {{
	r := http.send({{"method": "post", "url": "{url}", "raw_body": "from a test"}})
	r.status_code == 200
}}
"""


@pytest.mark.parametrize("version", ["v1", "v0"])
def test_a_test_module_that_calls_http_send_never_runs(receiver, version):
    tests = TEST_SENDING.format(url=receiver.url)
    if version == "v0":
        tests = tests.replace("import rego.v1\n", "").replace(" if {", " {")
    source = POLICY if version == "v1" else 'package env0\n\nallow["ok"] { input.size < 10 }\n'
    report = run_policy_tests(policy(source, version), [PolicyModule("main_test.rego", tests)])
    assert report.results == () and not report.passed
    line = 6 if version == "v1" else 5
    assert (report.error.file, report.error.line, report.error.column) == ("main_test.rego", line, 7)
    assert report.error.message.startswith("http.send reaches the network")
    assert receiver.received == []


def test_a_test_that_mocks_a_function_with_http_send_never_runs(receiver):
    tests = (
        "package env0_test\n\nimport rego.v1\n\n"
        "test_mocked if {\n"
        f'\tdata.env0.f({{"method": "post", "url": "{receiver.url}"}}) with data.env0.f as http.send\n'
        "}\n"
    )
    report = run_policy_tests(policy(), [PolicyModule("main_test.rego", tests)])
    assert report.results == ()
    assert (report.error.file, report.error.line) == ("main_test.rego", 6)
    assert receiver.received == []


def test_a_schema_whose_ref_points_at_the_server_never_runs_in_a_test(receiver):
    tests = (
        "package env0_test\n\nimport rego.v1\n\n"
        f'test_schema if json.match_schema({{}}, {{"$ref": "{receiver.url}"}})[0]\n'
    )
    report = run_policy_tests(policy(), [PolicyModule("main_test.rego", tests)])
    assert report.results == ()
    assert report.error.message.startswith("json.match_schema reaches the network and the server's files")
    assert receiver.received == []


def test_checking_a_policy_checks_its_tests_against_the_list_but_leaves_other_problems_to_the_run():
    sending = [PolicyModule("main_test.rego", TEST_SENDING.format(url="http://127.0.0.1:9/"))]
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy(), "regorus", tests=sending)
    assert (caught.value.file, caught.value.line, caught.value.column) == ("main_test.rego", 6, 7)
    broken = [PolicyModule("main_test.rego", "package env0_test\n\ntest_x if {\n")]
    check_policy(policy(), "regorus", tests=broken)  # its test run reports the syntax error, as before
