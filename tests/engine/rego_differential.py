"""Differential testing against OPA: a written corpus of env0-style policies and a random generator.

Each case is a policy (one or more modules, v0 or v1) and inputs. ``compare`` runs a case on an
engine and on OPA through the public interface and returns the disagreements. Used by
tests/engine/test_rego_differential.py (bounded) and bench/bench_rego_differential.py (many cases).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from policies_app.rego import PolicyCompileError, PolicyModule, PolicySource, check_policy, evaluate_policies

REFERENCE = "opa"


@dataclass
class Case:
    name: str
    modules: tuple[tuple[str, str], ...]
    inputs: list[dict]
    version: str = "v1"
    data: dict | None = None

    def source(self) -> PolicySource:
        modules = tuple(PolicyModule(filename, text) for filename, text in self.modules)
        return PolicySource(f"{self.name}@1", self.name, self.version, modules, self.data)


@dataclass
class Verdict:
    decision: str
    messages: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None


def verdict(case: Case, input_document: dict, engine: str) -> Verdict:
    result = evaluate_policies([case.source()], json.dumps(input_document), engine, timeout_s=30)
    messages = {rule: sorted(found) for rule, found in result.messages.items() if found}
    return Verdict(result.decision, messages, str(result.error) if result.error else None)


@dataclass
class Comparison:
    differences: list[str] = field(default_factory=list)  # decided otherwise than OPA: defects
    failed_closed: list[str] = field(default_factory=list)  # an error where OPA decided: known, stricter
    refused: bool = False  # OPA refuses the policy, so it is refused on save on every engine


def compare(case: Case, engine: str) -> Comparison:
    """How ``engine`` decides against OPA on this case.

    A policy OPA refuses is refused on save on every engine (check_policy asks OPA first), so only
    policies OPA compiles are evaluated; refusing one of them on save is a difference. An evaluation
    error where OPA decided is counted apart (failing closed, still a defect: the suite wants none).
    Messages are compared exactly: their text is what users read.
    """
    comparison = Comparison()
    try:
        check_policy(case.source(), REFERENCE, timeout_s=30)
    except PolicyCompileError:
        comparison.refused = True
        return comparison
    try:
        check_policy(case.source(), engine, timeout_s=30)
    except PolicyCompileError as error:  # OPA compiles it: refusing it on save is a defect
        comparison.differences.append(f"{case.name}: OPA compiles it, {engine} refuses it: {error}")
        return comparison
    for number, input_document in enumerate(case.inputs):
        expected = verdict(case, input_document, REFERENCE)
        found = verdict(case, input_document, engine)
        if expected.error and found.decision == "error":
            continue  # both fail closed; the engines word their errors differently
        described = f"{case.name} input {number}: OPA {expected} / {engine} {found}"
        if found.decision == "error":
            comparison.failed_closed.append(described)
        elif (found.decision, found.messages) != (expected.decision, expected.messages):
            comparison.differences.append(described)  # message text included: it is what users read
    return comparison


@dataclass
class Tally:
    """How an engine decided against OPA over many cases (the benches print it)."""

    cases: int = 0
    refused: int = 0  # by OPA: refused on save everywhere, not evaluated
    evaluations: int = 0
    differences: list[str] = field(default_factory=list)
    failed_closed: list[str] = field(default_factory=list)

    @property
    def agreed(self) -> int:
        return self.evaluations - len(self.differences) - len(self.failed_closed)


def tally(cases: Iterable[Case], engine: str) -> Tally:
    """``compare`` over every case, added up."""
    total = Tally()
    for case in cases:
        total.cases += 1
        comparison = compare(case, engine)
        if comparison.refused:
            total.refused += 1
            continue
        total.evaluations += len(case.inputs)
        total.differences.extend(comparison.differences)
        total.failed_closed.extend(comparison.failed_closed)
    return total


# ------------------------------------------------------------------------------------------- corpus

COST = {"costEstimation": {"totalMonthlyCost": 120.5, "monthlyCostDiff": 15.0}}
APPROVERS = {"approvers": [{"name": "a", "teams": [{"name": "security"}]}, {"name": "b", "teams": []}]}
DEPLOY = {"deploymentRequest": {"type": "deploy", "triggerName": "user", "revision": "main"}}
INPUTS = [
    {},
    {**COST, **APPROVERS, **DEPLOY},
    {
        "costEstimation": {"totalMonthlyCost": "n/a"},
        "approvers": [],
        "deploymentRequest": {"type": "destroy"},
    },
    {"costEstimation": {"totalMonthlyCost": None, "monthlyCostDiff": 900}, "approvers": [{}]},
    {"plan": {"resource_changes": [{"address": "aws_db_instance.main", "change": {"actions": ["delete"]}}]}},
]


def _change(rtype: str, name: str, actions: list[str], after: dict) -> dict:
    return {
        "address": f"{rtype}.{name}",
        "type": rtype,
        "name": name,
        "mode": "managed",
        "change": {"actions": actions, "before": None, "after": after},
    }


_CONTAINER = {"name": "app", "image": "docker.io/library/nginx:latest"}
_LIMITED = {**_CONTAINER, "image": "registry.example.com/app:1", "resources": {"limits": {"cpu": "1"}}}
_RISKY_PLAN = {
    "resource_changes": [
        _change("aws_s3_bucket", "logs", ["create"], {"bucket": "logs", "acl": "public-read"}),
        _change(
            "aws_s3_bucket_public_access_block",
            "logs",
            ["create"],
            {
                "block_public_acls": False,
                "block_public_policy": False,
                "ignore_public_acls": False,
                "restrict_public_buckets": False,
            },
        ),
        _change("aws_instance", "big", ["create"], {"instance_type": "p4d.24xlarge", "subnet_id": None}),
        _change("aws_db_instance", "main", ["delete"], {"publicly_accessible": True}),
        _change("aws_ebs_volume", "data", ["create"], {"encrypted": False, "size": 100}),
        _change("aws_efs_file_system", "shared", ["create"], {"encrypted": False}),
        _change(
            "aws_security_group",
            "ssh",
            ["create"],
            {"ingress": [{"from_port": 22, "to_port": 22, "protocol": "tcp", "cidr_blocks": ["0.0.0.0/0"]}]},
        ),
        _change(
            "aws_security_group_rule",
            "ssh",
            ["create"],
            {"type": "ingress", "from_port": 0, "to_port": 65535, "cidr_blocks": ["0.0.0.0/0"]},
        ),
        _change("aws_lb_listener", "http", ["create"], {"protocol": "HTTP", "port": 80, "ssl_policy": None}),
        _change("aws_lb", "front", ["create"], {"load_balancer_type": "application", "internal": False}),
        _change(
            "aws_iam_policy",
            "admin",
            ["create"],
            {"policy": '{"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'},
        ),
        _change("aws_iam_access_key", "ci", ["create"], {"user": "ci"}),
        _change(
            "aws_iam_account_password_policy",
            "strict",
            ["update"],
            {
                "minimum_password_length": 8,
                "require_symbols": False,
                "require_numbers": True,
                "require_uppercase_characters": True,
                "require_lowercase_characters": False,
                "password_reuse_prevention": 1,
                "max_password_age": 400,
                "allow_users_to_change_password": False,
            },
        ),
        _change("aws_default_vpc", "default", ["create"], {"cidr_block": "172.31.0.0/16"}),
        _change(
            "google_project_iam_member", "owner", ["create"], {"role": "roles/owner", "member": "user:a"}
        ),
        _change(
            "kubernetes_deployment",
            "web",
            ["create"],
            {"spec": [{"template": [{"spec": [{"container": [_CONTAINER]}]}]}]},
        ),
        _change(
            "kubernetes_manifest",
            "pod",
            ["create"],
            {
                "manifest": {
                    "kind": "Deployment",
                    "spec": {"template": {"spec": {"containers": [_CONTAINER]}}},
                }
            },
        ),
        _change("null_resource", "x", ["create"], {}),
    ]
}
_SAFE_PLAN = {
    "resource_changes": [
        _change("aws_s3_bucket", "logs", ["no-op"], {"bucket": "logs", "acl": "private"}),
        _change("aws_instance", "small", ["update"], {"instance_type": "t3.micro", "subnet_id": "subnet-1"}),
        _change("aws_db_instance", "main", ["create"], {"publicly_accessible": False}),
        _change("aws_ebs_volume", "data", ["create"], {"encrypted": True, "size": 10}),
        _change(
            "aws_lb_listener",
            "https",
            ["create"],
            {"protocol": "HTTPS", "port": 443, "ssl_policy": "ELBSecurityPolicy-TLS13-1-2-2021-06"},
        ),
        _change(
            "aws_iam_account_password_policy",
            "strict",
            ["create"],
            {
                "minimum_password_length": 16,
                "require_symbols": True,
                "require_numbers": True,
                "require_uppercase_characters": True,
                "require_lowercase_characters": True,
                "password_reuse_prevention": 24,
                "max_password_age": 90,
                "allow_users_to_change_password": True,
            },
        ),
        _change(
            "kubernetes_deployment",
            "web",
            ["create"],
            {"spec": [{"template": [{"spec": [{"container": [_LIMITED]}]}]}]},
        ),
    ]
}
_CONFIGURATION = {
    "maxCostIncrease": 100,
    "min_length": 14,
    "min_password_reuse_prevention": 5,
    "max_password_age": 90,
    "require_user_password_changes": True,
    "allowed_registries": ["registry.example.com"],
    "allowed_instance_types": ["t3.micro", "t3.small"],
    "allowed_ssh_cidrs": ["10.0.0.0/8"],
    "min_tls_policy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "disallowed_patterns": ["*"],
}
_APPROVERS = [
    {
        "id": "u1",
        "name": "Ann",
        "email": "ann@example.com",
        "teams": [{"id": "t1", "name": "data-warehouse"}],
    },
    {"id": "u2", "name": "Bob", "email": "bob@example.com", "teams": [{"id": "t2", "name": "security"}]},
]
# env0's input document (docs: "Input by env zero") with plans that trip, and do not trip, the rules
# env0's published policies are about; also empty and half-filled documents, where they read nothing.
ENV0_INPUTS = [
    {},
    {
        "deploymentRequest": {"type": "deploy", "triggerName": "user"},
        "costEstimation": {"totalMonthlyCost": 1500, "monthlyCostDiff": 250},
        "plan": _RISKY_PLAN,
        "approvers": _APPROVERS[:1],
        "deployerUser": {"name": "Ann", "email": "ann@example.com", "teams": []},
        "policyConfiguration": _CONFIGURATION,
        "policyData": _CONFIGURATION,
    },
    {
        "deploymentRequest": {"type": "destroy", "triggerName": "cd"},
        "costEstimation": {"totalMonthlyCost": 20.5, "monthlyCostDiff": -4.25},
        "plan": _SAFE_PLAN,
        "approvers": _APPROVERS,
        "policyConfiguration": {**_CONFIGURATION, "maxCostIncrease": 10.5},
        "policyData": {**_CONFIGURATION, "min_length": 8},
    },
    {
        "deploymentRequest": {"type": "deployResume", "triggerName": "ttl"},
        "costEstimation": {"totalMonthlyCost": None, "monthlyCostDiff": "n/a"},
        "plan": {"resource_changes": []},
        "approvers": [],
        "policyConfiguration": {},
    },
    {"deploymentRequest": {"type": "destroyResume"}, "plan": None, "costEstimation": None, "approvers": [{}]},
]


def _case(name: str, *modules: tuple[str, str], version: str = "v1", data: dict | None = None) -> Case:
    return Case(name, modules, INPUTS, version, data)


CORPUS = [
    _case(
        "split function",
        ("a.rego", 'package env0\nallow[format(m)] { m := "ok" }\nformat(meta) := sprintf("[%s]", [meta])\n'),
        (
            "b.rego",
            'package env0\ndeny[format(m)] { input.deploymentRequest.type == "destroy"; m := "no" }\n'
            'format(meta) := sprintf("[%s]", [meta])\n',
        ),
        version="v0",
    ),
    _case(
        "function with several definitions",
        (
            "p.rego",
            'package env0\nsize(x) := "big" if { x > 100 }\nsize(x) := "small" if { x <= 100 }\n'
            "warn contains size(input.costEstimation.totalMonthlyCost) if { true }\n",
        ),
    ),
    _case(
        "has_key negation",
        (
            "p.rego",
            "package env0\nhas_key(x, k) { _ = x[k] }\n"
            'allow["no cost"] { not has_key(input.costEstimation, "totalMonthlyCost") }\n',
        ),
        version="v0",
    ),
    _case(
        "revision negation",
        (
            "p.rego",
            'package env0\ndeny["not main"] { allowed = {"main"}; not allowed[input.deploymentRequest.revision] }\n',
        ),
        version="v0",
    ),
    _case(
        "builtin negation",
        ("p.rego", 'package env0\nallow["a"] { not startswith(input.deploymentRequest.type, "de") }\n'),
        version="v0",
    ),
    _case(
        "negations kept whole",
        (
            "p.rego",
            'package env0\npending contains "no approvers" if { not input.approvers[0] }\n'
            'warn contains "not deploy" if { not input.deploymentRequest.type == "deploy" }\n'
            'allow contains "x" if { not count(input.approvers) > 5 }\n',
        ),
    ),
    _case(
        "undefined function",
        ("p.rego", "package env0\npending[nosuch(1)] { count(input.approvers) < 1 }\n"),
        version="v0",
    ),
    _case(
        "some and every",
        (
            "p.rego",
            'package env0\nsecurity if { some a in input.approvers; some t in a.teams; t.name == "security" }\n'
            'allow contains "security approved" if { security }\n'
            'pending contains "all need teams" if { every a in input.approvers { count(a.teams) > 0 } }\n',
        ),
    ),
    _case(
        "comprehensions",
        (
            "p.rego",
            'package env0\ndeletes := [rc.address | some rc in input.plan.resource_changes; "delete" in rc.change.actions]\n'
            "names := {a.name | some a in input.approvers}\n"
            "by_name := {a.name: count(a.teams) | some a in input.approvers}\n"
            'deny contains sprintf("deletes %v", [deletes]) if { count(deletes) > 0 }\n'
            'warn contains sprintf("%d names, %v", [count(names), by_name]) if { count(names) > 0 }\n',
        ),
    ),
    _case(
        "else and default",
        (
            "p.rego",
            'package env0\ndefault level := "low"\nlevel := "high" if { input.costEstimation.monthlyCostDiff > 100 }'
            ' else := "mid" if { input.costEstimation.monthlyCostDiff > 10 }\n'
            'warn contains level if { level != "low" }\nallow contains "low" if { level == "low" }\n',
        ),
    ),
    _case(
        "partial object",
        (
            "p.rego",
            "package env0\nteams[a.name] := count(a.teams) if { some a in input.approvers }\n"
            "pending contains name if { some name, n in teams; n == 0 }\n",
        ),
    ),
    _case(
        "with",
        (
            "p.rego",
            "package env0\nexpensive if { input.costEstimation.monthlyCostDiff > 100 }\n"
            'warn contains "would be expensive" if { expensive with input.costEstimation.monthlyCostDiff as 500 }\n'
            'deny contains "expensive" if { expensive }\n',
        ),
    ),
    Case(
        # regorus reads the four rules in one query (engines.py): a helper they share is evaluated once,
        # and the one read under `with` must not leak its value into the others, nor theirs into it.
        "helper shared by the four rules",
        (
            (
                "p.rego",
                "package env0\nchanged contains rc.address if {\n"
                '  some rc in input.plan.resource_changes\n  rc.change.actions != ["no-op"]\n}\n'
                'deny contains sprintf("%d changed", [count(changed)]) if count(changed) > 1\n'
                'pending contains "one changed" if count(changed) == 1\n'
                'warn contains a if { some a in changed with input.plan.resource_changes as [{"address": "x", '
                '"change": {"actions": ["create"]}}] }\n'
                'allow contains "nothing changed" if count(changed) == 0\n',
            ),
        ),
        INPUTS + ENV0_INPUTS,
    ),
    _case(
        "cross-type comparisons",
        (
            "p.rego",
            'package env0\ndeny contains "over 100" if { input.costEstimation.totalMonthlyCost > 100 }\n'
            'warn contains "null is small" if { null < 1; input.costEstimation.totalMonthlyCost == null }\n'
            'allow contains "string over number" if { "a" > 1; true < 1 }\n',
        ),
    ),
    _case(
        "sprintf",
        (
            "p.rego",
            'package env0\nwarn contains sprintf("cost %v diff %.2f %s %d", [input.costEstimation.totalMonthlyCost,'
            " input.costEstimation.monthlyCostDiff, input.deploymentRequest.type, count(input.approvers)]) if { true }\n",
        ),
    ),
    _case(
        "metadata",
        (
            "p.rego",
            "package env0\n# METADATA\n# title: Two approvers\n# custom:\n#   minimum: 2\n"
            "allow contains rego.metadata.rule().title if { count(input.approvers) >= rego.metadata.rule().custom.minimum }\n",
        ),
    ),
    _case(
        "env0 package only",
        (
            "p.rego",
            'package env0.multipleApprovals\npending["At least 2 approvals must be given."] { count(input.approvers) < 2 }\n',
        ),
        version="v0",
    ),
    _case(
        "helper package",
        ("h.rego", "package env0.helpers\nfew if { count(input.approvers) < 2 }\n"),
        ("p.rego", 'package env0\nimport data.env0.helpers\npending contains "few" if { helpers.few }\n'),
    ),
    _case(
        "library and data",
        (
            "p.rego",
            'package env0\nimport data.lib.tfplan\ndeny contains "too many" if { count(input.plan.resource_changes) > data.settings.max }\n',
        ),
        data={"settings": {"max": 0}},
    ),
    _case(
        "bodies without braces",
        (
            "p.rego",
            'package env0\nis_prod if not input.deploymentRequest.type != "deploy"\n'
            'main if not input.deploymentRequest.revision in {"main"}\n'
            'level := 1 if { input.x } else := 2 if not startswith(input.deploymentRequest.type, "de") else := 3\n'
            'quoted if not startswith(input.deploymentRequest.type, "de") with input.deploymentRequest.type as "x"\n'
            'listed if count([1 | not startswith(input.deploymentRequest.type, "de")]) > 0\n'
            "all_teams if every a in input.approvers { not count(a.teams) > input.maxTeams }\n"
            'deny contains sprintf("%v %v %v %v %v %v", [is_prod, main, level, quoted, listed, all_teams]) if true\n',
        ),
    ),
    _case(
        "errors OPA never reaches",
        (
            "p.rego",
            "package env0\nconflict(x) := 1 if { x > 0 }\nconflict(x) := 2 if x > 100\n"
            'deny contains "destroy" if input.deploymentRequest.type == "destroy"\n'
            'deny contains "never" if { input.deploymentRequest.type == "never"; conflict(500) == 1 }\n'
            'warn contains "type" if not startswith(input.approvers, "a")\n'
            'pending contains "sum" if { input.deploymentRequest.type == "deploy"; sum(input.deploymentRequest.type) > 1 }\n',
        ),
    ),
    _case(
        "sprintf as Go formats",
        (
            "p.rego",
            'package env0\nwarn contains sprintf("%.2f %s %d %v", [input.costEstimation.monthlyCostDiff,'
            " count(input.approvers), -3, 1234567.5]) if true\n"
            'warn contains sprintf("%v %v %v %v%%", [{"b", "a"}, {2.5, 1}, {"k": [1, null, true]}, 0.00001]) if true\n'
            'warn contains sprintf("%s %d", [input.approvers, input.costEstimation.totalMonthlyCost]) if true\n',
        ),
    ),
    _case(
        # A case of its own: a message regorus's formatting leaves to OPA sends the whole policy there.
        "sprintf of whole numbers under a precision",
        (
            "p.rego",
            # Go names a whole number given to %.Nf with N digits at least (%!f(int64=01)), and with
            # no digit at all for 0 under %.0f.
            'package env0\nwarn contains sprintf("%.2f %.0f %.0f %.3f %.1f", [count(input.approvers), 0, 7, 3, 12])'
            " if true\n",
        ),
    ),
    _case(
        "sprintf of a set holding arrays and objects",
        (
            "p.rego",
            # regorus cannot hand such a set to the formatting extension: OPA formats it.
            'package env0\nwarn contains sprintf("%v", [{1, "a", null, [1], {"k": 1}}]) if true\n',
        ),
    ),
    _case(
        "floor and ceil between -1 and 0",
        (
            "p.rego",
            # OPA 1.20: floor(-0.5) is 0 and ceil(-0.5) is 1 (it steps by the sign of the truncated
            # number); a decision may hang on it.
            'package env0\ndeny contains "rounds up" if ceil(input.costEstimation.monthlyCostDiff / -100) > 0\n'
            'warn contains sprintf("%v %v %v %v", [floor(-0.5), ceil(-0.25), floor(-1.5), ceil(2.5)]) if true\n',
        ),
    ),
    _case(
        "with reaching an evaluation error",
        (
            "p.rego",
            # The empty input the engine is checked on reaches these errors through ``with``: errors of
            # evaluating, not of compiling; OPA compiles the policy.
            "package env0\nbig if sum(input.costEstimation.totalMonthlyCost) > 1\n"
            "conflict(x) := 1 if x > 0\nconflict(x) := 2 if x > 100\n"
            'deny contains "big" if big with input.costEstimation.totalMonthlyCost as 100\n'
            'warn contains "conflict" if conflict(input.n) == 1 with input.n as 500\n'
            'allow contains "ok" if true\n',
        ),
    ),
    _case(
        "upper and lower one character for one",
        (
            "p.rego",
            # Go keeps ß under upper (regorus wrote SS) and has no final sigma under lower.
            'package env0\ndeny contains "street" if upper(input.deploymentRequest.revision) == "STRASSE"\n'
            'warn contains concat(" ", [upper("straße"), lower("ΟΔΟΣ"), upper("ᾳ")]) if true\n',
        ),
    ),
    _case(
        "v0: if is a name without its import",
        (
            "p.rego",
            # v0 reads ``if`` as a rule's name: the function has no body and that rule an unsafe
            # variable (refused everywhere); v1 would read one function with a body.
            'package env0\nis_delete(actions) = true\n\nif {\n\tactions[_] == "delete"\n}\n'
            'deny[msg] { is_delete(input.plan.resource_changes[_].change.actions); msg := "delete" }\n',
        ),
        version="v0",
    ),
    _case(
        "v0 partial sets and functions",
        (
            "p.rego",
            'package env0\nimport future.keywords.in\ndeny[msg] { some rc in input.plan.resource_changes; "delete" in rc.change.actions;'
            ' msg := sprintf("%s deleted", [rc.address]) }\nf(x) = y { y := x * 2 } else = 0 { true }\n'
            'warn[sprintf("%v", [f(count(input.approvers))])] { true }\n',
        ),
        version="v0",
    ),
]


# ---------------------------------------------------------------------------------------- generator

_PATHS = [
    "input.costEstimation.totalMonthlyCost",
    "input.costEstimation.monthlyCostDiff",
    "input.deploymentRequest.type",
    "input.deploymentRequest.revision",
    "input.a",
    "input.b.c",
]
_CONSTANTS = ["1", "100", '"main"', '"deploy"', "null", "true", '"x"', "0.5"]
_OPERATORS = ["==", "!=", "<", ">", "<=", ">="]
_VALUES = [None, True, False, 0, 1, 50, 150, 0.5, "main", "deploy", "x", "xa", [], [1, 2], {"k": 1}]
# Edge values (issue 20): between -1 and 0 (floor and ceil), negative zero, an integer beyond
# float64's exact range, and text beyond ASCII.
_EDGE_VALUES = [-0.5, -0.25, -1.5, -0.0, 12345678901234567890, "héllo", "日本", -3, "straße"]


_SETS = ['{"main", "x"}', "{1, 100, null}", '{"deploy", 0.5}']
_MESSAGES = [
    'sprintf("%v", [{path}])',
    'sprintf("%.2f over", [{path}])',
    'sprintf("%d / %s", [{path}, {path}])',
    'sprintf("%v and %v", [{{{path}, "k"}}, {{"k": {path}}}])',
    'sprintf("%v", [[{path}, 0.25, -3]])',
    'sprintf("%.3f and %.0f", [{path}, {path}])',
]


def _condition(rng: random.Random, *, in_flag: bool = False) -> str:
    """One expression of a rule body (a single literal, so that it can also be a body without braces)."""
    path = rng.choice(_PATHS)
    choice = rng.randrange(25)
    if in_flag and choice in (8, 21, 24):
        choice = 0  # flag's and level's own bodies read neither
    if choice == 0:
        return f"{path} {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)}"
    if choice == 1:
        return f'not startswith({path}, "x")'
    if choice == 2:
        return f"not count({path}) > 1"
    if choice == 3:
        return f"not helper({path})"
    if choice == 4:
        return f"helper({path})"
    if choice == 5:
        return f"not {path}"
    if choice == 6:
        return f"not {path} == {rng.choice(_CONSTANTS)}"
    if choice == 7:
        return f"not allowed_values[{path}]"
    if choice == 8:
        return "flag"
    if choice == 9:
        return f"not {path} {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)}"
    if choice == 10:
        return f"not {path} in {rng.choice(_SETS)}"
    if choice == 11:
        return f"{path} in {rng.choice(_SETS)}"
    if choice == 12:
        # conflict(x) has two outputs for x > 100: an error only where OPA's evaluation reaches it
        return f"conflict({path}) == {rng.choice(['1', '2'])}"
    if choice == 13:
        return f"sum({path}) > 1"  # a type error where the path is no collection, if OPA gets there
    if choice == 14:
        return f"not sum({path}) > 1"
    if choice == 15:
        return f'{path} == "never"; conflict(500) == 1'  # a conflict behind a condition that fails
    if choice == 16:
        return f"every v in input.list {{ v {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)} }}"
    if choice == 17:
        return (
            f"{rng.choice(['ceil', 'floor'])}({path}) {rng.choice(_OPERATORS)} {rng.choice(['0', '1', '-1'])}"
        )
    if choice == 18:
        return f'every k, v in input.obj {{ k != "z"; v {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)} }}'
    if choice == 19:
        n = rng.getrandbits(32)  # a body may hold two of these: each its own variables
        return f'some k{n}, v{n} in input.obj; k{n} != "z"; v{n} {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)}'
    if choice == 20:
        return (
            f"not count([x | some x in input.list; x {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)}]) > 0"
        )
    if choice == 21 and not in_flag:
        return f"flag with {path} as {rng.choice(_CONSTANTS)}"
    if choice == 22:
        return f"not {{x | some x in input.obj}}[{path}]"
    if choice == 23:
        return f'contains(upper(sprintf("%v", [{path}])), "SS")'
    return f"level {rng.choice(['==', '!='])} {rng.choice(['1', '2', '3'])}"


def _body(rng: random.Random, conditions: list[str]) -> str:
    """``if { a; b }``, or for one literal sometimes ``if a`` (no braces), as people write it."""
    if len(conditions) == 1 and ";" not in conditions[0] and rng.random() < 0.5:
        return f"if {conditions[0]}"
    return f"if {{ {'; '.join(conditions)} }}"


def _input(rng: random.Random) -> dict:
    document: dict = {}
    for path in _PATHS:
        if rng.random() < 0.6:
            parts = path.split(".")[1:]
            node = document
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = rng.choice(_VALUES)
    if rng.random() < 0.6:
        document["list"] = rng.sample([1, 2, 5, "x", None, -0.5], rng.randrange(4))
    if rng.random() < 0.6:
        document["obj"] = dict(
            rng.sample([("k", 1), ("j", -0.5), ("m", "main"), ("n", None)], rng.randrange(4))
        )
    for path in _PATHS:
        if rng.random() < 0.15:
            parts = path.split(".")[1:]
            node = document
            for part in parts[:-1]:
                node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
            node[parts[-1]] = rng.choice(_EDGE_VALUES)
    return document


def generated_case(seed: int) -> Case:
    """A random env0-style policy: decision rules over comparisons, negations, membership, a helper
    function with several definitions (split over two modules or not), a function whose definitions
    conflict for some inputs, bodies with and without braces, a default rule and else chains,
    ``every`` and ``some k, v`` over arrays and objects, ``with`` on input paths, comprehensions
    inside ``not``, ``floor``/``ceil``, messages formatting numbers, sets and objects, and inputs with
    edge values (between -1 and 0, negative zero, big integers, text beyond ASCII)."""
    rng = random.Random(seed)
    rules = []
    for rule in rng.sample(["deny", "pending", "warn", "allow"], rng.randrange(1, 4)):
        conditions = [_condition(rng) for _ in range(rng.randrange(1, 4))]
        message = rng.choice([f'"{rule} {seed}"', rng.choice(_MESSAGES).format(path=rng.choice(_PATHS))])
        rules.append(f"{rule} contains {message} {_body(rng, conditions)}")
    helper_a = f"helper(x) if {{ x {rng.choice(_OPERATORS)} {rng.choice(_CONSTANTS)} }}"
    helper_b = f"helper(x) if {{ x == {rng.choice(_CONSTANTS)} }}"
    conflict = "conflict(x) := 1 if { x > 0 }\nconflict(x) := 2 if x > 100"
    flag = (
        f"default flag := false\nflag {_body(rng, [_condition(rng, in_flag=True)])} "
        f"else := true {_body(rng, [_condition(rng, in_flag=True)])}"
        if rng.random() < 0.5
        else f"flag {_body(rng, [_condition(rng, in_flag=True)])}"
    )
    allowed = 'allowed_values := {"main": true, "x": true}'
    level = (
        f"level := 1 {_body(rng, [_condition(rng, in_flag=True)])} "
        f"else := 2 {_body(rng, [_condition(rng, in_flag=True)])} else := 3"
    )
    main = "package env0\n\n" + "\n".join([*rules, helper_a, conflict, flag, allowed, level]) + "\n"
    if rng.random() < 0.5:
        modules = (("main.rego", main), ("helpers.rego", f"package env0\n\n{helper_b}\n"))
    else:
        modules = (("main.rego", main + helper_b + "\n"),)
    return Case(f"generated {seed}", modules, [_input(rng) for _ in range(4)])
