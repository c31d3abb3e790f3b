"""The shipped Rego library (policies_app/rego/library) and the examples in docs/rego-library.md.

Every function is evaluated with both engines the platform offers, regorus (in v1 and in v0 mode) and
OPA, from a policy written in v1 syntax and from one written in v0 syntax (given to OPA as
policies_app/rego/v1_syntax.py converts it). The examples are read
from the markdown itself, so a documented policy that stops working fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from policies_app.iac.state_view import tfstate_view
from policies_app.rego.syntax_tree import parse_module
from policies_app.rego.v1_syntax import to_rego_v1

regorus = pytest.importorskip("regorus")
opa_bindings = pytest.importorskip("opa_bindings")

PROJECT = Path(__file__).resolve().parents[2]
LIBRARY = PROJECT / "policies_app" / "rego" / "library"
DOC = PROJECT / "docs" / "rego-library.md"
UNDEFINED = object()

# (engine, v0 mode, syntax of the policy under test). OPA has no mode switch: it reads v1 only.
CONFIGURATIONS = [
    ("regorus", False, "v1"),
    ("regorus", True, "v1"),
    ("regorus", True, "v0"),
    ("opa", None, "v1"),
    ("opa", None, "v0"),
]
CONFIGURATION_IDS = [
    f"{engine}-{'v0mode' if v0 else 'v1mode'}-{syntax}policy"
    if engine == "regorus"
    else f"{engine}-{syntax}policy"
    for engine, v0, syntax in CONFIGURATIONS
]


def library_modules() -> dict[str, str]:
    return {f"library/{path.name}": path.read_text() for path in sorted(LIBRARY.glob("*.rego"))}


class Evaluator:
    """One engine loaded with the library, a policy and an input; answers queries as plain values."""

    def __init__(self, engine: str, v0_mode: bool | None, policy: str, input_document: dict):
        self.engine = engine
        modules = {**library_modules(), "policy.rego": policy}
        if engine == "regorus":
            self.impl = regorus.Engine()
            self.impl.set_rego_v0(bool(v0_mode))
            for name, source in modules.items():
                self.impl.add_policy(name, source)
            self.impl.set_input_json(json.dumps(input_document))
        else:
            self.impl = opa_bindings.OpaEngine()
            self.input = input_document
            for name, source in modules.items():
                try:
                    self.impl.add_policy(name, source)
                except opa_bindings.OpaError:  # a v0 policy: OPA reads it as the platform gives it
                    self.impl.add_policy(name, to_rego_v1(parse_module(name, source, True)))

    def query(self, query: str):
        if self.engine == "regorus":
            results = json.loads(self.impl.eval_query_as_json(query)).get("result", [])
            return results[0]["expressions"][0]["value"] if results else UNDEFINED
        results = self.impl.eval_query(f"value := {query}", self.input)
        return results[0]["value"] if results else UNDEFINED

    def set_of(self, query: str) -> set:
        """A set rule's members."""
        value = self.query(query)
        if value is UNDEFINED:
            return set()
        return {member if isinstance(member, str) else canonical(member) for member in value}


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


# ------------------------------------------------------------------------------------------- input

RAW_STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 7,
    "lineage": "l",
    "outputs": {},
    "resources": [
        {
            "mode": "managed",
            "type": "aws_db_instance",
            "name": "main",
            "instances": [{"attributes": {"id": "db-1", "deletion_protection": False}}],
        },
        {
            "mode": "data",
            "type": "terraform_remote_state",
            "name": "shared",
            "instances": [{"attributes": {"id": "x", "backend": "local"}}],
        },
        {
            "module": "module.network",
            "mode": "managed",
            "type": "aws_vpc",
            "name": "main",
            "instances": [{"attributes": {"id": "vpc-1"}, "status": "tainted"}],
        },
        {
            "module": "module.db[1]",
            "mode": "managed",
            "type": "aws_db_instance",
            "name": "replica",
            "instances": [{"index_key": 0, "attributes": {"id": "db-2", "deletion_protection": True}}],
        },
    ],
}


def change(address: str, actions: list[str], after: dict | None = None) -> dict:
    resource_type, resource_name = address.split("[")[0].split(".")[-2:]
    return {
        "address": address,
        "mode": "managed",
        "type": resource_type,
        "name": resource_name,
        "change": {"actions": actions, "before": None, "after": after or {}},
    }


SINGLE_PLAN = {
    "format_version": "1.2",
    "resource_changes": [
        change("aws_s3_bucket.logs", ["create"], {"acl": "public-read"}),
        change("aws_instance.web", ["update"]),
        change("aws_db_instance.main", ["delete"]),
        change("aws_instance.api", ["delete", "create"]),
        change("aws_lb.front", ["create", "delete"]),
        change("aws_iam_role.ci", ["no-op"]),
    ],
}
RUN_ALL_PLAN = {
    "is_run_all": True,
    "modules": {
        "vpc": {"format_version": "1.2", "resource_changes": [change("aws_vpc.main", ["create"])]},
        "eks": {"format_version": "1.2", "resource_changes": [change("aws_vpc.main", ["delete"])]},
    },
}
PEOPLE = {
    "deployerUser": {
        "name": "Alice",
        "email": "Alice@Example.com",
        "teams": [{"id": "t1", "name": "platform"}],
    },
    "approvers": [
        {"name": "Alice", "email": "alice@example.com", "teams": [{"id": "t1", "name": "platform"}]},
        {"name": "Bob", "email": "BOB@example.com", "teams": [{"id": "t2", "name": "security"}]},
        {"name": "Bob again", "email": "bob@example.com", "teams": [{"id": "t2", "name": "security"}]},
        {
            "name": "Charlie",
            "email": "charlie@example.com",
            "teams": [{"id": "t1", "name": "platform"}, {"id": "t2", "name": "security"}],
        },
        {"name": "No mail", "teams": [{"id": "t2", "name": "security"}]},
    ],
}


def full_input(plan=SINGLE_PLAN, **overrides) -> dict:
    document = {"state": tfstate_view(RAW_STATE), "plan": plan, **PEOPLE}
    document.update(overrides)
    return document


# ------------------------------------------------------------------------------ library functions

LIBRARY_POLICY_V1 = """package t

import rego.v1

import data.lib.approvals
import data.lib.tfplan
import data.lib.tfstate

network := tfstate.module(["network"])
root_path := tfstate.module([]).path
db_module_replica_id := tfstate.module(["db[1]"]).resources.aws_db_instance.replica[0].id
db_modules := {concat("/", d.module_path) | d := tfstate.resources_of_type("aws_db_instance")[_]}
missing := tfstate.module(["nope"])
dbs := tfstate.resources_of_type("aws_db_instance")
remote := tfstate.data_of_type("terraform_remote_state")
nothing := tfstate.resources_of_type("nothing")
all_instances := tfstate.resources_of_type("aws_instance")
changes := tfplan.resource_changes
deleting := tfplan.changes_by_action("delete")
creating := tfplan.changes_by_action("create")
creates := tfplan.creates
updates := tfplan.updates
deletes := tfplan.deletes
replacements := tfplan.replacements
destroyed_or_replaced := tfplan.destroyed_or_replaced
security := approvals.in_team("security")
security_count := approvals.count_in_team("security")
platform_count := approvals.count_in_team("platform")
others := approvals.distinct_approvers_other_than_deployer
"""
# The same queries from a v0 module (no `import rego.v1`, v0 rule bodies), as env0's examples are written.
LIBRARY_POLICY_V0 = (
    LIBRARY_POLICY_V1.replace("import rego.v1\n", "")
    + """
v0_deletes[address] {
	tfplan.deletes[address]
}
"""
)


def policy_for(syntax: str) -> str:
    return LIBRARY_POLICY_V1 if syntax == "v1" else LIBRARY_POLICY_V0


@pytest.fixture(params=CONFIGURATIONS, ids=CONFIGURATION_IDS)
def configuration(request):
    return request.param


def evaluator(configuration, input_document: dict) -> Evaluator:
    engine, v0_mode, syntax = configuration
    return Evaluator(engine, v0_mode, policy_for(syntax), input_document)


def test_tfstate_module_finds_a_module_by_path(configuration):
    rego = evaluator(configuration, full_input())

    network = rego.query("data.t.network")
    assert network["path"] == ["network"]
    assert network["resources"]["aws_vpc"]["main"][0]["tainted"] is True
    assert rego.query("data.t.root_path") == []
    assert rego.query("data.t.db_module_replica_id") == "db-2"
    assert rego.query("data.t.missing") is UNDEFINED


@pytest.mark.parametrize(("engine", "v0_mode"), [("regorus", False), ("regorus", True), ("opa", None)])
def test_tfstate_module_finds_a_for_each_module_whose_key_holds_a_dot(engine, v0_mode):
    state = tfstate_view(
        {
            "version": 4,
            "resources": [
                {
                    "module": 'module.svc["a.b"]',
                    "mode": "managed",
                    "type": "t",
                    "name": "n",
                    "instances": [{"attributes": {"id": "in-a.b"}}],
                },
                {
                    "module": 'module.svc["a"].module.b',
                    "mode": "managed",
                    "type": "t",
                    "name": "n",
                    "instances": [{"attributes": {"id": "in-a-b"}}],
                },
            ],
        }
    )
    policy = """package t
import rego.v1
import data.lib.tfstate
dotted := tfstate.module(["svc[\\"a.b\\"]"]).resources.t.n[0].id
nested := tfstate.module(["svc[\\"a\\"]", "b"]).resources.t.n[0].id
"""
    rego = Evaluator(engine, v0_mode, policy, {"state": state})
    assert rego.query("data.t.dotted") == "in-a.b"
    assert rego.query("data.t.nested") == "in-a-b"


def test_tfstate_resources_and_data_of_type_cover_every_module(configuration):
    rego = evaluator(configuration, full_input())

    assert rego.set_of("data.t.db_modules") == {"", "db[1]"}
    if configuration[0] == "regorus":
        dbs = {
            tuple(json.loads(entry)["module_path"]): json.loads(entry) for entry in rego.set_of("data.t.dbs")
        }
        assert set(dbs) == {(), ("db[1]",)}
        assert dbs[()]["name"] == "main" and dbs[()]["key"] == 0 and dbs[()]["type"] == "aws_db_instance"
        assert dbs[()]["instance"]["attr"]["deletion_protection"] is False
        assert dbs[("db[1]",)]["instance"]["id"] == "db-2"
    remote = [json.loads(entry) for entry in rego.set_of("data.t.remote")]
    assert [(r["name"], r["instance"]["attr"]["backend"]) for r in remote] == [("shared", "local")]
    assert rego.set_of("data.t.nothing") == set()


def test_tfstate_resources_of_type_keys_counted_instances_by_index_and_skips_gaps(configuration):
    # web[1] was destroyed with -target: the view holds null there, the helper leaves it out.
    state = tfstate_view(
        {
            "version": 4,
            "resources": [
                {
                    "mode": "managed",
                    "type": "aws_instance",
                    "name": "web",
                    "instances": [
                        {"index_key": 2, "attributes": {"id": "w2"}},
                        {"index_key": 0, "attributes": {"id": "w0"}},
                    ],
                },
                {
                    "mode": "managed",
                    "type": "aws_instance",
                    "name": "api",
                    "instances": [
                        {"index_key": "prod", "attributes": {"id": "a-prod"}},
                        {"index_key": "10", "attributes": {"id": "a-10"}},
                    ],
                },
            ],
        }
    )
    policy = (
        policy_for(configuration[2])
        + """
gap_is_null := input.state.resources.aws_instance.web[1] == null
third := input.state.resources.aws_instance.web[2].id
prod := input.state.resources.aws_instance.api.prod.id
"""
    )
    rego = Evaluator(configuration[0], configuration[1], policy, {"state": state})

    instances = {
        (entry["name"], entry["key"]): entry["instance"]["id"]
        for entry in map(json.loads, rego.set_of("data.t.all_instances"))
    }
    assert instances == {("web", 0): "w0", ("web", 2): "w2", ("api", "prod"): "a-prod", ("api", "10"): "a-10"}
    assert rego.query("data.t.gap_is_null") is True
    assert rego.query("data.t.third") == "w2"
    assert rego.query("data.t.prod") == "a-prod"


TWELVE_TF = """
resource "terraform_data" "x" {
  count = 12
  input = "item-${count.index}"
}
"""
TWELVE_POLICY = """package t

import rego.v1

tenth := input.state.resources.terraform_data.x[10].attr.input
order := [i | input.state.resources.terraform_data.x[i]]
"""


@pytest.mark.terraform
@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_a_terraform_applied_count_of_twelve_is_in_index_order_and_indexable_by_number(tmp_path):
    (tmp_path / "main.tf").write_text(TWELVE_TF)
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": "/dev/null",
        "TF_IN_AUTOMATION": "1",
        "CHECKPOINT_DISABLE": "1",
    }

    def terraform(*arguments: str) -> str:
        return subprocess.run(
            ["terraform", *arguments],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout

    terraform("init", "-input=false", "-no-color")
    terraform("apply", "-auto-approve", "-input=false", "-no-color")
    raw = tfstate_view(json.loads((tmp_path / "terraform.tfstate").read_text()))
    shown = tfstate_view(json.loads(terraform("show", "-json", "-no-color")))

    assert raw == shown
    instances = raw["resources"]["terraform_data"]["x"]
    # In index order, not the string order "0", "1", "10", "11", "2"... of object keys.
    assert [instance["attr"]["input"] for instance in instances] == [f"item-{i}" for i in range(12)]
    # Through JSON, as the engines receive it.
    document = json.loads(json.dumps({"state": raw}))
    for engine, v0_mode in (("regorus", False), ("regorus", True), ("opa", None)):
        rego = Evaluator(engine, v0_mode, TWELVE_POLICY, document)
        assert rego.query("data.t.tenth") == "item-10", engine
        assert rego.query("data.t.order") == list(range(12)), engine


def test_tfplan_sorts_changes_by_action(configuration):
    rego = evaluator(configuration, full_input())

    assert rego.set_of("data.t.creates") == {"aws_s3_bucket.logs"}
    assert rego.set_of("data.t.updates") == {"aws_instance.web"}
    assert rego.set_of("data.t.deletes") == {"aws_db_instance.main"}
    assert rego.set_of("data.t.replacements") == {"aws_instance.api", "aws_lb.front"}
    assert rego.set_of("data.t.destroyed_or_replaced") == {
        "aws_db_instance.main",
        "aws_instance.api",
        "aws_lb.front",
    }
    assert rego.set_of("data.t.deleting") == {"aws_db_instance.main", "aws_instance.api", "aws_lb.front"}
    assert rego.set_of("data.t.creating") == {"aws_s3_bucket.logs", "aws_instance.api", "aws_lb.front"}
    changes = {json.loads(entry)["address"]: json.loads(entry) for entry in rego.set_of("data.t.changes")}
    assert len(changes) == 6
    assert changes["aws_s3_bucket.logs"]["change"]["after"]["acl"] == "public-read"
    assert (
        changes["aws_s3_bucket.logs"]["module"] == "" and changes["aws_s3_bucket.logs"]["mode"] == "managed"
    )
    if configuration[2] == "v0":
        assert rego.set_of("data.t.v0_deletes") == {"aws_db_instance.main"}


def test_tfplan_reads_every_module_of_a_run_all_plan_with_prefixed_addresses(configuration):
    rego = evaluator(configuration, full_input(plan=RUN_ALL_PLAN))

    assert rego.set_of("data.t.creates") == {"vpc:aws_vpc.main"}
    assert rego.set_of("data.t.destroyed_or_replaced") == {"eks:aws_vpc.main"}
    modules = {json.loads(entry)["module"] for entry in rego.set_of("data.t.changes")}
    assert modules == {"vpc", "eks"}


def test_tfplan_sets_are_empty_without_a_plan(configuration):
    rego = evaluator(configuration, full_input(plan=None))
    for rule in ("changes", "creates", "deletes", "destroyed_or_replaced", "deleting"):
        assert rego.set_of(f"data.t.{rule}") == set(), rule


def test_approvals_count_people_by_email_once_and_leave_out_the_deployer(configuration):
    rego = evaluator(configuration, full_input())

    # One spelling per person (the smallest), taken from the input as it is.
    assert rego.set_of("data.t.security") == {"BOB@example.com", "charlie@example.com"}
    assert rego.query("data.t.security_count") == 2
    assert rego.query("data.t.platform_count") == 2
    assert rego.set_of("data.t.others") == {"BOB@example.com", "charlie@example.com"}


def test_approvals_count_every_approver_when_there_is_no_deployer(configuration):
    document = full_input()
    del document["deployerUser"]
    rego = evaluator(configuration, document)
    assert rego.set_of("data.t.others") == {"alice@example.com", "BOB@example.com", "charlie@example.com"}
    assert evaluator(configuration, full_input(approvers=[])).query("data.t.security_count") == 0


def test_every_library_module_declares_import_rego_v1_and_a_lib_package():
    modules = library_modules()
    assert set(modules) == {"library/approvals.rego", "library/tfplan.rego", "library/tfstate.rego"}
    for name, source in modules.items():
        assert re.search(r"^import rego\.v1$", source, re.MULTILINE), name
        assert re.search(r"^package lib\.\w+$", source, re.MULTILINE), name


# --------------------------------------------------------------------------------- doc examples


def doc_examples() -> dict[str, tuple[str, str]]:
    """{name: (syntax, policy)} for every ```rego block of docs/rego-library.md that is a policy."""
    examples = {}
    for block in re.findall(r"```rego\n(.*?)```", DOC.read_text(), re.DOTALL):
        name = re.match(r"# example: ([\w-]+)\n", block)
        assert name, f"a rego block in the doc has no '# example: NAME' first line:\n{block}"
        syntax = "v0" if "\n# syntax: v0\n" in block else "v1"
        assert name.group(1) not in examples, f"duplicate example name {name.group(1)}"
        examples[name.group(1)] = (syntax, block)
    return examples


def state_with(*resources: dict) -> dict:
    return tfstate_view({"version": 4, "serial": 1, "lineage": "l", "resources": list(resources)})


def instance_of(type_: str, name: str, attributes: dict, module: str = "", **instance) -> dict:
    resource = {
        "mode": "managed",
        "type": type_,
        "name": name,
        "instances": [{"attributes": attributes, **instance}],
    }
    if module:
        resource["module"] = module
    return resource


HEALTHY = state_with(instance_of("aws_vpc", "main", {"id": "v"}, module="module.network"))
TAINTED = state_with(
    instance_of("aws_vpc", "main", {"id": "v"}, module="module.network", status="tainted"),
    instance_of("aws_subnet", "a", {"id": "s"}, status="tainted"),
)
UNPROTECTED_DB = state_with(
    instance_of("aws_db_instance", "main", {"id": "d", "deletion_protection": True}),
    instance_of("aws_db_instance", "orders", {"id": "o", "deletion_protection": False}, module="module.shop"),
)
LOCAL_REMOTE_STATE = state_with(
    {
        "mode": "data",
        "type": "terraform_remote_state",
        "name": "shared",
        "instances": [{"attributes": {"id": "x", "backend": "local"}}],
    }
)
S3_STATE = state_with(
    {
        "mode": "data",
        "type": "terraform_remote_state",
        "name": "shared",
        "instances": [{"attributes": {"id": "x", "backend": "s3"}}],
    }
)


def plan_of(*changes: dict) -> dict:
    return {"format_version": "1.2", "resource_changes": list(changes)}


def people(*approvers: tuple[str, list[str]], deployer: str = "dana@example.com") -> dict:
    return {
        "deployerUser": {"name": "Dana", "email": deployer, "teams": []},
        "approvers": [
            {"name": email, "email": email, "teams": [{"id": t, "name": t} for t in teams]}
            for email, teams in approvers
        ],
    }


# For each example: cases of (input, {decision rule: expected messages}); unlisted rules must be empty.
def counted(type_: str, name: str, by_index: dict, module: str = "") -> dict:
    """A resource with count (int keys) or for_each (string keys): {key: attributes}."""
    resource = {
        "mode": "managed",
        "type": type_,
        "name": name,
        "instances": [{"index_key": key, "attributes": attributes} for key, attributes in by_index.items()],
    }
    if module:
        resource["module"] = module
    return resource


EXAMPLE_CASES: dict[str, list[tuple[dict, dict[str, set[str]]]]] = {
    "tfstate-sentinel-index": [
        (
            {
                "state": state_with(
                    instance_of(
                        "null_resource", "foo", {"id": "n", "triggers": {"foo": "bar"}}, module="module.foo"
                    )
                )
            },
            {"allow": {"module foo's null_resource.foo[0] has triggers.foo = bar"}},
        ),
        (
            {
                "state": state_with(
                    instance_of(
                        "null_resource", "foo", {"id": "n", "triggers": {"foo": "baz"}}, module="module.foo"
                    )
                )
            },
            {},
        ),
        # foo[0] was destroyed on its own: the gap is null, so the rule simply does not match.
        (
            {
                "state": state_with(
                    counted(
                        "null_resource",
                        "foo",
                        {1: {"id": "n", "triggers": {"foo": "bar"}}},
                        module="module.foo",
                    )
                )
            },
            {},
        ),
        (
            {
                "state": state_with(
                    instance_of("null_resource", "foo", {"id": "n", "triggers": {"foo": "bar"}})
                )
            },
            {},
        ),
    ],
    "tfstate-instances": [
        (
            {
                "state": state_with(
                    counted(
                        "aws_instance",
                        "web",
                        {
                            0: {"id": "w0", "instance_type": "t3.micro"},
                            2: {"id": "w2", "instance_type": "x1.32xlarge"},
                        },
                    ),
                    counted(
                        "aws_instance",
                        "api",
                        {
                            "prod": {"id": "p", "instance_type": "x1.32xlarge"},
                            "dev": {"id": "d", "instance_type": "t3.micro"},
                        },
                    ),
                )
            },
            {"deny": {"aws_instance.web[2] is too large", "aws_instance.api[prod] is too large"}},
        ),
        (
            {
                "state": state_with(
                    counted(
                        "aws_instance",
                        "web",
                        {i: {"id": f"w{i}", "instance_type": "t3.micro"} for i in range(12)},
                    )
                )
            },
            {},
        ),
    ],
    "tfstate-module": [
        ({"state": HEALTHY}, {}),
        ({"state": TAINTED}, {"deny": {"aws_vpc.main[0] in module network is tainted: repair it first"}}),
        (
            {
                "state": state_with(
                    {
                        "module": "module.network",
                        "mode": "managed",
                        "type": "aws_subnet",
                        "name": "edge",
                        "instances": [
                            {"index_key": "west", "attributes": {"id": "w"}, "status": "tainted"},
                            {"index_key": "east", "attributes": {"id": "e"}},
                        ],
                    },
                    counted("aws_vpc", "main", {3: {"id": "v3"}}, module="module.network"),
                )
            },
            {"deny": {"aws_subnet.edge[west] in module network is tainted: repair it first"}},
        ),
        ({"state": state_with()}, {}),
    ],
    "tfstate-resources-of-type": [
        (
            {"state": UNPROTECTED_DB},
            {
                "pending": {
                    'database orders in module ["shop"] has no deletion protection: a person must look'
                }
            },
        ),
        ({"state": HEALTHY}, {}),
    ],
    "tfstate-data-of-type": [
        ({"state": LOCAL_REMOTE_STATE}, {"warn": {"shared reads a local state file"}}),
        ({"state": S3_STATE}, {}),
    ],
    "tfplan-resource-changes": [
        (
            {"plan": plan_of(change("aws_s3_bucket.logs", ["create"], {"acl": "public-read"}))},
            {"deny": {"aws_s3_bucket.logs would be a public bucket"}},
        ),
        (
            {
                "plan": {
                    "is_run_all": True,
                    "modules": {
                        "live/media": plan_of(
                            change("aws_s3_bucket.media", ["update"], {"acl": "public-read"})
                        )
                    },
                }
            },
            {"deny": {"live/media:aws_s3_bucket.media would be a public bucket"}},
        ),
        ({"plan": plan_of(change("aws_s3_bucket.logs", ["create"], {"acl": "private"}))}, {}),
    ],
    "tfplan-changes-by-action": [
        (
            {"plan": plan_of(change("aws_instance.web", ["update"]), change("aws_instance.api", ["create"]))},
            {"warn": {"aws_instance.web will be updated in place"}},
        ),
        ({"plan": None}, {}),
    ],
    "tfplan-additive-only": [
        (
            {"plan": plan_of(change("aws_instance.web", ["create"]), change("aws_iam_role.ci", ["no-op"]))},
            {"allow": {"the plan only adds resources"}},
        ),
        (
            {
                "plan": plan_of(
                    change("aws_instance.web", ["create"]), change("aws_instance.api", ["create", "delete"])
                )
            },
            {},
        ),
        (
            {"plan": plan_of(change("aws_instance.web", ["create"]), change("aws_instance.api", ["update"]))},
            {},
        ),
    ],
    "tfplan-destruction": [
        (
            {
                "plan": plan_of(
                    change("aws_instance.web", ["delete"]),
                    change("aws_db_instance.main", ["delete", "create"]),
                )
            },
            {
                "pending": {
                    "aws_instance.web will be destroyed",
                    "aws_db_instance.main will be replaced (destroyed and created again)",
                },
                "deny": {"aws_db_instance.main: databases are never destroyed by a deployment"},
            },
        ),
        ({"plan": plan_of(change("aws_instance.web", ["create"]))}, {}),
    ],
    "approvals-in-team": [
        (
            people(("Sec@Example.com", ["security"]), ("pat@example.com", ["platform"])),
            {"allow": {"approved by Sec@Example.com from the security team"}},
        ),
        (people(("pat@example.com", ["platform"])), {}),
    ],
    "approvals-count-in-team": [
        (
            people(("pat@example.com", ["platform"])),
            {"pending": {"two approvers from the platform team are needed"}},
        ),
        (
            people(("pat@example.com", ["platform"]), ("PAT@example.com", ["platform"])),
            {"pending": {"two approvers from the platform team are needed"}},
        ),
        (
            people(("pat@example.com", ["platform"]), ("quinn@example.com", ["platform"])),
            {"allow": {"two platform approvers agreed"}},
        ),
    ],
    "approvals-four-eyes-v0": [
        (
            people(("DANA@example.com", []), ("erin@example.com", [])),
            {"pending": {"waiting for two approvers other than the deployer"}},
        ),
        (
            people(("erin@example.com", []), ("frank@example.com", [])),
            {"allow": {"two people other than the deployer approved"}},
        ),
    ],
}
DECISIONS = ("deny", "pending", "warn", "allow")


def test_every_documented_example_has_cases_and_every_case_an_example():
    assert set(doc_examples()) == set(EXAMPLE_CASES)


def _example_configurations():
    for name, (syntax, _policy) in sorted(doc_examples().items()):
        for engine, v0_mode, _ in CONFIGURATIONS[:2] + CONFIGURATIONS[3:4]:
            if syntax == "v0" and engine == "regorus" and not v0_mode:
                continue  # a v0 policy needs an engine in v0 mode, as the platform configures it
            yield pytest.param(
                name, engine, v0_mode, id=f"{name}-{engine}-{'v0mode' if v0_mode else 'default'}"
            )


@pytest.mark.parametrize(("name", "engine", "v0_mode"), list(_example_configurations()))
def test_documented_example_policies_decide_as_described(name, engine, v0_mode):
    _syntax, policy = doc_examples()[name]
    assert "package env0" in policy
    for number, (input_document, expected) in enumerate(EXAMPLE_CASES[name]):
        rego = Evaluator(engine, v0_mode, policy, input_document)
        for decision in DECISIONS:
            # Each decision rule is queried on its own (regorus mis-evaluates some whole-package queries).
            assert rego.set_of(f"data.env0.{decision}") == expected.get(decision, set()), (number, decision)
