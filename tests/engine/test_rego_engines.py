"""Policies evaluated end to end through the public interface (supervised worker), with both engines.

The env0-style examples are our own, written in the style of env0's published approval policies.
"""

import json

import pytest

from policies_app.rego import (
    ENGINES,
    PolicyCompileError,
    PolicyModule,
    PolicySource,
    check_policy,
    evaluate_policies,
)

pytestmark = pytest.mark.parametrize("engine", ENGINES)


def policy(name, source, *, version="v1", data=None, filename="policy.rego", key=None):
    return PolicySource(key or f"{name}@1", name, version, (PolicyModule(filename, source),), data)


def deployment(**overrides):
    document = {
        "deploymentRequest": {"type": "deploy", "triggerName": "user", "revision": "main"},
        "template": {"id": "t-1", "name": "network", "type": "terraform"},
        "costEstimation": {"totalMonthlyCost": 120.5, "monthlyCostDiff": 15.0},
        "plan": {"format_version": "1.2", "resource_changes": []},
        "deployerUser": {
            "name": "Alice",
            "email": "alice@example.com",
            "teams": [{"id": "t", "name": "dev"}],
        },
        "approvers": [],
        "variables": {"environment": {}, "terraform": {}, "env0": {}},
    }
    document.update(overrides)
    return json.dumps(document)


def approver(name, *teams):
    return {
        "name": name,
        "email": f"{name.lower()}@example.com",
        "teams": [{"id": t, "name": t} for t in teams],
    }


TWO_APPROVERS = policy(
    "two approvers",
    """package env0

pending contains "waiting for a second approver" if { count(input.approvers) < 2 }

allow contains "approved by two people" if { count(input.approvers) >= 2 }
""",
)

SECURITY_TEAM = policy(
    "security approval",
    """package env0

security_approved if {
  some person in input.approvers
  some team in person.teams
  team.name == "security team"
}

pending contains "a member of the security team must approve" if { not security_approved }

allow contains "approved by security" if { security_approved }
""",
)

COST_LIMIT = policy(
    "cost limit",
    """package env0

deny contains msg if {
  input.costEstimation.monthlyCostDiff > data.limits.deny
  msg := sprintf("monthly cost rises by %v, over the limit of %v", [input.costEstimation.monthlyCostDiff, data.limits.deny])
}

warn contains "monthly cost rises noticeably" if {
  input.costEstimation.monthlyCostDiff > data.limits.warn
  input.costEstimation.monthlyCostDiff <= data.limits.deny
}
""",
    data={"limits": {"warn": 50, "deny": 100}},
)

PROTECTED_RESOURCES = policy(
    "protected resources",
    """package env0

deny contains msg if {
  some change in input.plan.resource_changes
  "delete" in change.change.actions
  change.type in {"aws_db_instance", "aws_s3_bucket"}
  msg := sprintf("%s would be destroyed", [change.address])
}
""",
)

MAIN_ONLY = policy(
    "main branch only",
    """package env0

deny contains msg if {
  input.deploymentRequest.revision != "main"
  msg := sprintf("only main may be deployed, not %s", [input.deploymentRequest.revision])
}
""",
)


def evaluate(engine, policies, input_json=None, **kwargs):
    return evaluate_policies(policies, input_json or deployment(), engine, **kwargs)


def test_it_waits_for_a_second_approver(engine):
    result = evaluate(engine, [TWO_APPROVERS], deployment(approvers=[approver("Bob")]))
    assert result.decision == "pending"
    assert result.messages["pending"] == ["waiting for a second approver"]
    assert result.engine == engine
    assert result.error is None


def test_it_allows_with_two_approvers(engine):
    result = evaluate(engine, [TWO_APPROVERS], deployment(approvers=[approver("Bob"), approver("Carol")]))
    assert result.decision == "allow"
    assert result.messages == {"deny": [], "pending": [], "warn": [], "allow": ["approved by two people"]}


def test_it_needs_an_approver_from_the_security_team(engine):
    without = evaluate(engine, [SECURITY_TEAM], deployment(approvers=[approver("Bob", "dev")]))
    with_security = evaluate(
        engine,
        [SECURITY_TEAM],
        deployment(approvers=[approver("Bob", "dev"), approver("Eve", "ops", "security team")]),
    )
    assert without.decision == "pending"
    assert with_security.decision == "allow"


@pytest.mark.parametrize(("cost_diff", "decision"), [(10, None), (75, "warn"), (150, "deny")])
def test_it_applies_the_cost_limits_from_the_policys_data(engine, cost_diff, decision):
    input_json = deployment(costEstimation={"totalMonthlyCost": 500, "monthlyCostDiff": cost_diff})
    result = evaluate(engine, [COST_LIMIT], input_json)
    assert result.outcomes[0].decision == decision
    assert result.decision == (decision or "pending")
    if decision == "deny":
        assert result.messages["deny"] == ["monthly cost rises by 150, over the limit of 100"]


def test_it_denies_destroying_a_protected_resource(engine):
    plan = {
        "resource_changes": [
            {"address": "aws_instance.web", "type": "aws_instance", "change": {"actions": ["delete"]}},
            {
                "address": "aws_db_instance.main",
                "type": "aws_db_instance",
                "change": {"actions": ["delete", "create"]},
            },
            {"address": "aws_s3_bucket.logs", "type": "aws_s3_bucket", "change": {"actions": ["update"]}},
        ]
    }
    result = evaluate(engine, [PROTECTED_RESOURCES], deployment(plan=plan))
    assert result.decision == "deny"
    assert result.messages["deny"] == ["aws_db_instance.main would be destroyed"]


def test_it_denies_revisions_other_than_main(engine):
    branch = evaluate(
        engine, [MAIN_ONLY], deployment(deploymentRequest={"type": "deploy", "revision": "feature/x"})
    )
    main = evaluate(engine, [MAIN_ONLY], deployment())
    assert branch.decision == "deny"
    assert branch.messages["deny"] == ["only main may be deployed, not feature/x"]
    assert main.decision == "pending"  # nothing fired anywhere: env0 waits for a human


def test_it_lets_the_strictest_policy_win_and_merges_messages(engine):
    input_json = deployment(
        approvers=[approver("Bob"), approver("Carol")],
        costEstimation={"totalMonthlyCost": 500, "monthlyCostDiff": 75},
    )
    result = evaluate(engine, [TWO_APPROVERS, COST_LIMIT, SECURITY_TEAM], input_json)
    assert [o.decision for o in result.outcomes] == ["allow", "warn", "pending"]
    assert result.decision == "pending"
    assert result.messages == {
        "deny": [],
        "pending": ["a member of the security team must approve"],
        "warn": ["monthly cost rises noticeably"],
        "allow": ["approved by two people"],
    }
    assert [o.key for o in result.outcomes] == [TWO_APPROVERS.key, COST_LIMIT.key, SECURITY_TEAM.key]


def test_it_waits_for_approval_when_there_is_no_policy(engine):
    result = evaluate_policies([], deployment(), engine)
    assert result.decision == "pending"
    assert result.outcomes == []
    assert result.messages == {"deny": [], "pending": [], "warn": [], "allow": []}


def test_it_gives_each_policy_its_own_namespace_and_data(engine):
    # Both say package env0 and define the same helper and data path differently.
    first = policy(
        "first",
        'package env0\n\nlimit := data.threshold\n\nwarn contains sprintf("first %v", [limit]) if { true }\n',
        data={"threshold": 1},
    )
    second = policy(
        "second",
        'package env0\n\nlimit := data.threshold\n\nallow contains sprintf("second %v", [limit]) if { true }\n',
        data={"threshold": 2},
    )
    result = evaluate(engine, [first, second])
    assert result.messages["warn"] == ["first 1"]
    assert result.messages["allow"] == ["second 2"]
    assert result.decision == "warn"


def test_it_denies_when_a_module_imports_its_own_package(engine):
    # regorus returned deny empty for this shape when the whole package was queried (PITFALLS).
    helper = PolicyModule(
        "helpers.rego", 'package env0\n\nhelper if { input.deploymentRequest.type == "destroy" }\n'
    )
    rules = PolicyModule(
        "rules.rego",
        'package env0\n\nimport data.env0\n\ndeny contains "destroy is blocked" if {\n  env0.helper\n}\n\nallow contains "ok" if { true }\n',
    )
    self_importing = PolicySource("self@1", "self import", "v1", (helper, rules))
    result = evaluate(engine, [self_importing], deployment(deploymentRequest={"type": "destroy"}))
    assert result.decision == "deny"
    assert result.messages["deny"] == ["destroy is blocked"]


V0_POLICY = """package env0

deny["no destroy on fridays"] {
  input.deploymentRequest.type == "destroy"
}

pending[msg] {
  count(input.approvers) == 0
  msg := "nobody approved yet"
}

allow["approved"] {
  count(input.approvers) > 0
}
"""


def test_it_evaluates_v0_policies(engine):
    v0 = policy("legacy", V0_POLICY, version="v0")
    check_policy(v0, engine)
    assert evaluate(engine, [v0]).messages["pending"] == ["nobody approved yet"]
    assert evaluate(engine, [v0], deployment(approvers=[approver("Bob")])).decision == "allow"
    destroy = evaluate(engine, [v0], deployment(deploymentRequest={"type": "destroy"}))
    assert destroy.messages["deny"] == [
        "no destroy on fridays"
    ]  # a v0 partial set, normalised from regopy's object


def test_it_refuses_v0_rule_bodies_in_a_v1_policy(engine):
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy("legacy as v1", V0_POLICY), engine)
    assert (caught.value.file, caught.value.line) == ("policy.rego", 3)
    assert "`if` keyword is required" in caught.value.message


@pytest.mark.parametrize(
    ("rule_source", "expected"),
    [
        ('deny if { input.template.type == "terraform" }', {"deny": ["deny"]}),
        ('warn := "one message"', {"warn": ["one message"]}),
        ('allow := ["b", "a"]', {"allow": ["b", "a"]}),
        ('pending contains "z" if { true }\npending contains "y" if { true }', {"pending": ["y", "z"]}),
        ('deny[msg] := true if { msg := "as object key" }', {"deny": ["as object key"]}),
        (
            'warn contains {"resource": "a", "level": 2} if { true }',
            {"warn": ['{"level": 2, "resource": "a"}']},
        ),
        ("allow := false", {}),
    ],
)
def test_it_normalises_every_rule_shape_the_same_way(engine, rule_source, expected):
    result = evaluate(engine, [policy("shapes", f"package env0\n\n{rule_source}\n")])
    assert result.error is None
    assert {rule: messages for rule, messages in result.messages.items() if messages} == expected


ENV0_STYLE_METADATA_V0 = """package env0

# METADATA
# title: Two approvals
# description: approved by at least two people

allow[format(rego.metadata.rule())] {
\tcount(input.approvers) > 1
}

# METADATA
# title: Waiting
# description: a second approval is needed
pending[format(rego.metadata.rule())] {
\tcount(input.approvers) < 2
}

format(meta) := meta.description
"""


def test_it_resolves_rego_metadata_rule_in_an_env0_style_policy(engine):
    metadata = policy("metadata", ENV0_STYLE_METADATA_V0, version="v0")
    check_policy(metadata, engine)
    allowed = evaluate(engine, [metadata], deployment(approvers=[approver("Bob"), approver("Carol")]))
    waiting = evaluate(engine, [metadata], deployment(approvers=[approver("Bob")]))
    assert allowed.decision == "allow"
    assert allowed.messages["allow"] == ["approved by at least two people"]
    assert waiting.messages["pending"] == ["a second approval is needed"]


def test_it_resolves_rego_metadata_chain_in_a_v1_policy(engine):
    source = """# METADATA
# title: Release rules
# custom:
#   owner: platform
package env0

# METADATA
# title: Freeze
# custom:
#   severity: high
deny contains msg if {
  input.deploymentRequest.revision == "frozen"
  chain := rego.metadata.chain()
  msg := sprintf("%s (%s, owner %s)", [chain[0].annotations.title, chain[0].annotations.custom.severity, chain[1].annotations.custom.owner])
}
"""
    result = evaluate(engine, [policy("chain", source)], deployment(deploymentRequest={"revision": "frozen"}))
    assert result.messages["deny"] == ["Freeze (high, owner platform)"]


def test_it_rejects_http_send_when_the_policy_is_saved(engine):
    source = 'package env0\n\ndeny contains "service down" if {\n  response := http.send({"method": "get", "url": "https://status.example.com"})\n  response.status_code != 200\n}\n'
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy("network", source), engine)
    assert (caught.value.file, caught.value.line, caught.value.column) == ("policy.rego", 4, 15)
    assert caught.value.policy == "network"


def test_it_fails_closed_when_a_policy_uses_http_send(engine):
    source = 'package env0\n\ndeny contains "service down" if {\n  response := http.send({"method": "get", "url": "https://status.example.com"})\n  response.status_code != 200\n}\n'
    result = evaluate(
        engine,
        [TWO_APPROVERS, policy("network", source)],
        deployment(approvers=[approver("B"), approver("C")]),
    )
    assert result.decision == "error"
    assert result.outcomes[0].decision == "allow"
    assert result.outcomes[1].decision == "error"
    assert result.error.policy == "network"
    assert (result.error.file, result.error.line) == ("policy.rego", 4)
    assert "http.send" in str(result.error)


def test_it_reports_a_syntax_error_with_file_line_and_column(engine):
    source = 'package env0\n\nallow contains "ok" if { true }\n\ndeny contains msg if {\n  count(input.approvers) >== 2\n  msg := "x"\n}\n'
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy("typo", source, filename="typo.rego"), engine)
    error = caught.value
    assert (error.file, error.line) == ("typo.rego", 6)
    assert error.column in (26, 28)  # the engines point at the two halves of ">=="
    assert str(error).startswith(f"typo.rego:6:{error.column}: ")
    assert "Stack backtrace" not in error.message


def test_it_reports_an_unknown_function_where_it_is_called(engine):
    source = 'package env0\n\ndeny contains msg if {\n  msg := upperr("x")\n}\n'
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(policy("unknown function", source), engine)
    assert (caught.value.file, caught.value.line) == ("policy.rego", 4)
    assert "upperr" in caught.value.message


def test_it_rejects_an_unsafe_variable_that_would_make_a_rule_silently_undefined(engine):
    with pytest.raises(PolicyCompileError, match="unsafe"):
        check_policy(policy("unsafe", "package env0\n\ndeny contains msg if {\n  msg := y\n}\n"), engine)


def test_it_fails_closed_on_a_runtime_error(engine):
    source = 'package env0\n\ndeny contains msg if {\n  msg := sprintf("%v", [input.costEstimation.monthlyCostDiff / 0])\n}\n'
    result = evaluate(
        engine,
        [TWO_APPROVERS, policy("divides by zero", source)],
        deployment(approvers=[approver("B"), approver("C")]),
    )
    assert result.decision == "error"
    assert result.outcomes[1].decision == "error"
    assert result.error.policy == "divides by zero"


def test_it_fails_closed_on_input_that_is_not_json(engine):
    result = evaluate_policies([TWO_APPROVERS], "{not json", engine)
    assert result.decision == "error"
    assert "not valid JSON" in result.error.message
    assert result.outcomes[0].decision == "error"


def test_it_reads_a_terragrunt_run_all_plan(engine):
    source = """package env0

deny contains msg if {
  input.plan.is_run_all
  some path, module_plan in input.plan.modules
  some change in module_plan.resource_changes
  change.type == "aws_s3_bucket"
  change.change.after.acl == "public-read"
  msg := sprintf("public bucket %s in %s", [change.address, path])
}
"""
    plan = {
        "is_run_all": True,
        "modules": {
            "vpc": {
                "resource_changes": [{"address": "aws_vpc.main", "type": "aws_vpc", "change": {"after": {}}}]
            },
            "web": {
                "resource_changes": [
                    {
                        "address": "aws_s3_bucket.site",
                        "type": "aws_s3_bucket",
                        "change": {"after": {"acl": "public-read"}},
                    }
                ]
            },
        },
    }
    result = evaluate(engine, [policy("run-all", source)], deployment(plan=plan))
    assert result.messages["deny"] == ["public bucket aws_s3_bucket.site in web"]


def test_it_compares_input_strings_with_quotes_newlines_and_accents_exactly(engine):
    # regopy.Input() keeps quotes unescaped and rego-cpp does not decode \u escapes: both made these
    # comparisons silently false. The caller serialises with json.dumps defaults (\u escapes).
    source = """package env0

deny contains "quoted" if { input.variables.terraform.key == "db[\\"eu.west\\"]" }
deny contains "multi-line" if { input.variables.terraform.note == "line 1\\nline 2" }
deny contains "accented" if { input.deployerUser.name == "Zoë Müller" }
deny contains input.variables.terraform.key if { true }
"""
    input_json = deployment(
        variables={
            "environment": {},
            "env0": {},
            "terraform": {"key": 'db["eu.west"]', "note": "line 1\nline 2"},
        },
        deployerUser={"name": "Zoë Müller", "email": "zoe@example.com", "teams": []},
    )
    assert "\\u00eb" in input_json
    result = evaluate(engine, [policy("strings", source)], input_json)
    assert result.error is None
    assert sorted(result.messages["deny"]) == sorted(["quoted", "multi-line", "accented", 'db["eu.west"]'])


def test_it_passes_non_ascii_policy_data_intact(engine):
    source = (
        'package env0\n\nallow contains sprintf("owned by %s", [data.owner]) if { data.owner == "Zoë" }\n'
    )
    result = evaluate(engine, [policy("owner", source, data={"owner": "Zoë"})])
    assert result.messages["allow"] == ["owned by Zoë"]


SELF_IMPORT = """package env0

import data.env0{alias}

deny contains "blocked" if {{ {name}.protected }}

protected if input.deploymentRequest.type == "destroy"

allow contains "ok" if true
"""


@pytest.mark.parametrize(("alias", "name"), [("", "env0"), (" as e", "e")])
def test_it_denies_when_a_single_module_imports_its_own_package(engine, alias, name):
    # regorus left deny empty (so the policy allowed) for this shape even with one query per rule.
    self_importing = policy("self import", SELF_IMPORT.format(alias=alias, name=name))
    check_policy(self_importing, engine)
    result = evaluate(engine, [self_importing], deployment(deploymentRequest={"type": "destroy"}))
    assert result.decision == "deny"
    assert result.messages["deny"] == ["blocked"]
    assert evaluate(engine, [self_importing]).decision == "allow"


def test_it_refuses_a_rule_that_reads_the_whole_document_of_its_own_package(engine):
    # regorus evaluated `x := data.env0; x.protected` to undefined inside package env0 (fail-open).
    source = (
        "package env0\n\n"
        'deny contains "blocked" if {\n  x := data.env0\n  x.protected\n}\n\n'
        'protected if input.deploymentRequest.type == "destroy"\n'
    )
    whole = policy("whole package", source)
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(whole, engine)
    assert (caught.value.file, caught.value.line, caught.value.column) == ("policy.rego", 4, 8)
    assert "whole document of this policy's package env0" in caught.value.message
    result = evaluate(engine, [whole], deployment(deploymentRequest={"type": "destroy"}))
    assert result.decision == "error"


@pytest.mark.parametrize(
    ("call", "builtin"),
    [
        ('http["send"]({"method": "get", "url": "https://x"})', "http.send"),
        ('net["lookup_ip_addr"]("example.com")', "net.lookup_ip_addr"),
    ],
)
def test_it_rejects_a_network_builtin_named_with_a_string_index(engine, call, builtin):
    # regorus resolves http["send"](...) to the builtin, which then evaluates to undefined.
    source = f'package env0\n\ndeny contains "down" if {{\n  not {call}\n}}\n\nallow contains "ok" if true\n'
    network = policy("network", source)
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(network, engine)
    assert (caught.value.file, caught.value.line, caught.value.column) == ("policy.rego", 4, 7)
    assert f"{builtin} reaches the network" in caught.value.message
    assert evaluate(engine, [network]).decision == "error"


def test_it_resolves_rego_metadata_rule_when_the_rule_body_starts_on_the_next_line(engine):
    # The body line used to be taken for a rule of its own, so the call resolved to {} and never denied.
    source = (
        "package env0\n\n"
        "# METADATA\n# custom:\n#   max_cost: 100\n"
        'deny contains "over budget" if\n'
        "\tinput.costEstimation.monthlyCostDiff > rego.metadata.rule().custom.max_cost\n"
    )
    budget = policy("budget", source)
    check_policy(budget, engine)
    over = evaluate(engine, [budget], deployment(costEstimation={"monthlyCostDiff": 5000}))
    under = evaluate(engine, [budget], deployment(costEstimation={"monthlyCostDiff": 50}))
    assert over.decision == "deny"
    assert over.messages["deny"] == ["over budget"]
    assert under.decision == "pending"


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"env0": {"deny": []}}, "'env0': it would override the rules of package env0"),
        ({"lib": {"approvals": {"count_in_team": 5}}}, "'lib': data.lib is the shared library"),
    ],
)
def test_it_refuses_policy_data_that_would_override_rules(engine, data, named):
    source = 'package env0\n\ndeny contains "destroying" if input.deploymentRequest.type == "destroy"\n'
    overriding = policy("overriding data", source, data=data)
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(overriding, engine)
    assert named in caught.value.message
    result = evaluate(engine, [overriding], deployment(deploymentRequest={"type": "destroy"}))
    assert result.decision == "error"
    assert named in result.error.message
