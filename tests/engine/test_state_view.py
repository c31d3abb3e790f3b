"""The Sentinel tfstate/v1 view of a Terraform state (policies_app.iac.state_view)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from policies_app.iac.state_view import (
    MAX_STATE_GAPS,
    StateFormatError,
    normalise_state,
    parse_module_address,
    state_identity,
    tfstate_view,
)

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "plans-and-states"
GENERATED = SHARED / "generated-terraform-1.11.4"
OPENTOFU_STATES = SHARED / "opentofu" / "show-json-state"

needs_fixtures = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason="third-party fixtures not present (../shared/fixtures is absent in this clone)",
)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def raw_state(**overrides) -> dict:
    """A small raw v4 state written by hand: one counted resource, one data source, one module."""
    state = {
        "version": 4,
        "terraform_version": "1.11.4",
        "serial": 3,
        "lineage": "lin-1",
        "outputs": {},
        "resources": [
            {
                "mode": "managed",
                "type": "terraform_data",
                "name": "web",
                "instances": [
                    {"index_key": 0, "attributes": {"id": "w0", "input": "a"}},
                    {"index_key": 1, "attributes": {"id": "w1", "input": "b"}, "dependencies": ["x.y"]},
                ],
            },
            {
                "mode": "data",
                "type": "terraform_remote_state",
                "name": "net",
                "instances": [{"attributes": {"id": "d", "backend": "local"}}],
            },
            {
                "module": "module.a[0].module.b",
                "mode": "managed",
                "type": "terraform_data",
                "name": "deep",
                "instances": [{"attributes": {"id": "deep-1"}}],
            },
        ],
    }
    state.update(overrides)
    return state


# ------------------------------------------------------------------------------------- the shape


def test_it_builds_the_sentinel_namespace_with_root_aliases_and_counted_instances_as_arrays():
    view = tfstate_view(raw_state())

    assert view["terraform_version"] == "1.11.4"
    assert view["path"] == []
    assert view["resources"] is view["modules"][""]["resources"]
    assert view["data"] is view["modules"][""]["data"]
    web = view["resources"]["terraform_data"]["web"]
    assert [instance["id"] for instance in web] == ["w0", "w1"]
    assert web[1] == {"attr": {"id": "w1", "input": "b"}, "depends_on": ["x.y"], "id": "w1", "tainted": False}
    # A resource without count is still reached with index 0, as in Sentinel.
    assert view["data"]["terraform_remote_state"]["net"] == [
        {"attr": {"id": "d", "backend": "local"}, "depends_on": [], "id": "d", "tainted": False}
    ]
    assert "terraform_remote_state" not in view["resources"]


def test_it_lists_every_module_path_including_ancestors_that_hold_no_resources():
    view = tfstate_view(raw_state())

    assert view["module_paths"] == [[], ["a[0]"], ["a[0]", "b"]]
    assert view["modules"]["a[0]"] == {"path": ["a[0]"], "resources": {}, "data": {}, "outputs": {}}
    assert view["modules"]["a[0].b"]["resources"]["terraform_data"]["deep"][0]["id"] == "deep-1"


def test_it_gives_each_instance_exactly_the_sentinel_keys():
    # The shape of HashiCorp's tfstate/v1 mocks (terraform-guides, second-generation/*/mock-tfstate-*).
    view = tfstate_view(raw_state())
    for namespace in view["modules"].values():
        assert set(namespace) == {"path", "resources", "data", "outputs"}
        for section in ("resources", "data"):
            for by_name in namespace[section].values():
                for instances in by_name.values():
                    for instance in instances if isinstance(instances, list) else instances.values():
                        assert set(instance) == {"attr", "depends_on", "id", "tainted"}
                        assert isinstance(instance["id"], str)
                        assert isinstance(instance["tainted"], bool)


def test_it_maps_output_types_to_sentinels_string_list_and_map_but_keeps_values():
    outputs = {
        "text": {"value": "hi", "type": "string"},
        "number": {"value": 42, "type": "number"},
        "flag": {"value": True, "type": "bool"},
        "tuple": {"value": ["a", 1], "type": ["tuple", ["string", "number"]]},
        "set": {"value": ["a"], "type": ["set", "string"]},
        "object": {"value": {"k": 1}, "type": ["object", {"k": "number"}]},
        "map": {"value": {"k": "v"}, "type": ["map", "string"], "sensitive": True},
    }
    view = tfstate_view(raw_state(outputs=outputs))

    types = {name: output["type"] for name, output in view["outputs"].items()}
    assert types == {
        "text": "string",
        "number": "string",
        "flag": "string",
        "tuple": "list",
        "set": "list",
        "object": "map",
        "map": "map",
    }
    assert view["outputs"]["number"]["value"] == 42  # not "42": Rego compares numbers directly
    assert view["outputs"]["flag"]["value"] is True
    assert view["outputs"]["map"]["sensitive"] is True
    assert view["outputs"]["text"]["sensitive"] is False
    assert view["outputs"]["number"]["terraform_type"] == "number"


def test_it_infers_the_output_type_from_the_value_when_the_state_recorded_none():
    document = {
        "format_version": "0.1",
        "values": {"outputs": {"m": {"value": {"a": 1}}, "l": {"value": [1]}}},
    }
    view = tfstate_view(document)
    assert view["outputs"]["m"]["type"] == "map"
    assert view["outputs"]["l"]["type"] == "list"


def test_it_unwraps_dynamically_typed_attributes_of_a_raw_state_only_when_value_fits_type():
    instances = [
        {
            "attributes": {
                "id": "x",
                "input": {"value": {"idx": 0}, "type": ["object", {"idx": "number"}]},
                "not_a_type": {"value": 1, "type": "integer"},
                "wrong_value": {"value": "one", "type": "number"},
            }
        }
    ]
    state = raw_state(resources=[{"mode": "managed", "type": "t", "name": "n", "instances": instances}])
    attr = tfstate_view(state)["resources"]["t"]["n"][0]["attr"]

    assert attr["input"] == {"idx": 0}
    assert attr["not_a_type"] == {"value": 1, "type": "integer"}
    assert attr["wrong_value"] == {"value": "one", "type": "number"}


def test_it_parses_module_addresses_with_instance_keys_holding_dots_and_brackets():
    assert parse_module_address("") == []
    assert parse_module_address('module.a["x.y"].module.b[3]') == ['a["x.y"]', "b[3]"]
    assert parse_module_address('module.a["]\\"."]') == ['a["]\\"."]']
    with pytest.raises(StateFormatError, match="malformed module address"):
        parse_module_address("module.a.b")


def test_it_keys_for_each_instances_by_their_key_and_keeps_module_paths_apart_by_instance():
    resources = [
        {
            "module": 'module.svc["x.y"]',
            "mode": "managed",
            "type": "t",
            "name": "n",
            "instances": [{"index_key": "k.1", "attributes": {"id": "1"}}],
        },
        {
            "module": 'module.svc["z"]',
            "mode": "managed",
            "type": "t",
            "name": "n",
            "instances": [{"index_key": "k.1", "attributes": {"id": "2"}}],
        },
    ]
    view = tfstate_view(raw_state(resources=resources))

    assert view["module_paths"] == [[], ['svc["x.y"]'], ['svc["z"]']]
    assert view["modules"]['svc["x.y"]']["resources"]["t"]["n"]["k.1"]["id"] == "1"
    assert view["modules"]['svc["z"]']["resources"]["t"]["n"]["k.1"]["id"] == "2"


def counted_resource(keys: list, name: str = "n") -> dict:
    return {
        "mode": "managed",
        "type": "t",
        "name": name,
        "instances": [{"index_key": key, "attributes": {"id": f"id-{key}"}} for key in keys],
    }


def show_json_of(resources: list[dict]) -> dict:
    """The show -json form of root-module resources written in raw-state form."""
    shown = []
    for resource in resources:
        for instance in resource["instances"]:
            entry = {
                "address": "",
                "mode": resource["mode"],
                "type": resource["type"],
                "name": resource["name"],
                "values": instance["attributes"],
            }
            if "index_key" in instance:
                entry["index"] = instance["index_key"]
            shown.append(entry)
    return {"format_version": "1.0", "values": {"root_module": {"resources": shown}}}


def test_it_orders_counted_instances_by_index_whatever_the_order_in_the_state():
    keys = [10, 2, 0, 11, 1, 3, 4, 5, 6, 7, 8, 9]
    view = tfstate_view(raw_state(resources=[counted_resource(keys)]))

    assert [instance["id"] for instance in view["resources"]["t"]["n"]] == [f"id-{i}" for i in range(12)]


def test_it_keeps_each_counted_instance_at_its_index_with_null_in_the_gaps():
    # x[1] and x[3] were destroyed with -target: x[4] must stay x[4], not move to x[2].
    resources = [counted_resource([4, 0, 2])]
    view = tfstate_view(raw_state(resources=resources))

    instances = view["resources"]["t"]["n"]
    assert [None if i is None else i["id"] for i in instances] == ["id-0", None, "id-2", None, "id-4"]
    assert tfstate_view(show_json_of(resources)) == {**view, "terraform_version": ""}


def test_it_keys_for_each_instances_by_string_even_when_they_look_like_numbers():
    view = tfstate_view(raw_state(resources=[counted_resource(["10", "2", "b"])]))

    instances = view["resources"]["t"]["n"]
    assert isinstance(instances, dict)
    assert list(instances) == ["10", "2", "b"]
    assert instances["2"]["id"] == "id-2"


def test_it_refuses_count_and_for_each_keys_mixed_in_one_resource():
    with pytest.raises(
        StateFormatError, match=r"t\.n\[0\]: one resource mixes count indexes and for_each keys"
    ):
        normalise_state(raw_state(resources=[counted_resource([0, "a"])]))


def test_it_refuses_a_resource_both_without_key_and_with_index_zero():
    resource = counted_resource([0])
    resource["instances"].append({"attributes": {"id": "other"}})
    with pytest.raises(StateFormatError, match=r"duplicate resource instance t\.n$"):
        normalise_state(raw_state(resources=[resource]))


def test_it_refuses_negative_indexes_and_gaps_that_would_blow_up_the_view():
    with pytest.raises(StateFormatError, match="count index cannot be negative"):
        normalise_state(raw_state(resources=[counted_resource([-1])]))
    # Two resources whose gaps each stay under the limit but together go over it.
    half = MAX_STATE_GAPS // 2 + 1
    too_sparse = [counted_resource([half], name="a"), counted_resource([half], name="b")]
    with pytest.raises(StateFormatError, match=f"leave {2 * half} gaps"):
        normalise_state(raw_state(resources=too_sparse))
    assert len(tfstate_view(raw_state(resources=too_sparse[:1]))["resources"]["t"]["a"]) == half + 1


def test_it_keeps_serial_and_lineage_of_a_raw_state_and_has_none_for_show_json():
    assert state_identity(raw_state()) == (3, "lin-1")
    assert state_identity(normalise_state(raw_state())) == (3, "lin-1")
    assert state_identity({"format_version": "1.0"}) == (None, None)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda s: s["resources"][2].update(instances={"a": 1}),
            r"resources\[2\]\.instances: expected a list",
        ),
        (lambda s: s.update(version=3), "only state format version 4"),
        (
            lambda s: s["resources"][0].update(mode="weird"),
            r"resources\[0\]\.mode: expected 'managed' or 'data'",
        ),
        (lambda s: s["resources"][0].pop("type"), r"resources\[0\]\.type: missing"),
        (lambda s: s["resources"][0]["instances"][0].update(index_key=[1]), r"instances\[0\]\.index_key"),
        (
            lambda s: s["resources"][1]["instances"][0].update(dependencies="x"),
            r"dependencies: expected a list",
        ),
        (lambda s: s["resources"][2].update(module="modules.a"), "malformed module address"),
        (lambda s: s["resources"].append(copy.deepcopy(s["resources"][0])), "duplicate resource instance"),
        (lambda s: s.update(serial="3"), "serial: expected a number"),
    ],
)
def test_it_rejects_a_broken_raw_state_naming_the_key(mutate, message):
    state = raw_state()
    mutate(state)
    with pytest.raises(StateFormatError, match=message):
        normalise_state(state)


def test_it_rejects_documents_that_are_not_states():
    with pytest.raises(StateFormatError, match="must be a JSON object, got null"):
        normalise_state(None)
    with pytest.raises(StateFormatError, match="this is a plan"):
        normalise_state({"format_version": "1.2", "planned_values": {}, "resource_changes": []})
    with pytest.raises(StateFormatError, match="not a state"):
        normalise_state({"hello": 1})
    broken_show = {"format_version": "1.0", "values": {"root_module": {"child_modules": [{"address": 5}]}}}
    with pytest.raises(StateFormatError, match=r"child_modules\[0\]\.address: expected a string"):
        normalise_state(broken_show)


def test_an_empty_show_json_state_gives_an_empty_root_module():
    view = tfstate_view({"format_version": "1.0"})
    assert view["module_paths"] == [[]]
    assert view["resources"] == {} and view["data"] == {} and view["outputs"] == {}


# --------------------------------------------------------------------------- third-party fixtures


@needs_fixtures
def test_a_raw_state_and_its_show_json_form_give_the_same_view():
    raw = tfstate_view(load(GENERATED / "terraform.tfstate.raw-v4.json"))
    shown = tfstate_view(load(GENERATED / "state.show.json"))

    assert raw == shown
    assert raw["module_paths"] == [[], ['app["dev"]'], ['app["prod"]']]
    prod = tfstate_view(load(GENERATED / "state.show.json"))["modules"]['app["prod"]']
    nodes = prod["resources"]["terraform_data"]["node"]
    assert [node["tainted"] for node in nodes] == [False, False, True]
    assert raw["resources"]["terraform_data"]["after"][0]["depends_on"] == [
        "module.app.terraform_data.node",
        "terraform_data.root",
    ]
    # terraform_data.input is dynamically typed: wrapped with its type in the raw file, not in show -json.
    assert raw["resources"]["terraform_data"]["root"][1]["attr"]["input"] == {"idx": 1, "secret": "s3cr3t"}
    assert raw["outputs"]["secret_out"] == {
        "sensitive": True,
        "type": "string",
        "value": "s3cr3t",
        "terraform_type": "string",
    }
    assert raw["outputs"]["app_ids"]["type"] == "map"
    assert state_identity(load(GENERATED / "terraform.tfstate.raw-v4.json")) == (
        9,
        "0ae9b0da-95aa-30f3-d743-fceec287b5c5",
    )


@needs_fixtures
@pytest.mark.parametrize("case", ["basic", "modules", "sensitive-variables"])
def test_opentofu_raw_states_and_show_json_agree_on_modules_instances_and_ids(case):
    raw = tfstate_view(load(OPENTOFU_STATES / case / "terraform.tfstate"))
    shown = tfstate_view(load(OPENTOFU_STATES / case / "output.json"))

    def skeleton(view: dict) -> dict:
        # show -json fills attributes the raw file left out with null; compare what both recorded.
        return {
            key: {
                section: {
                    type_: {
                        name: [(i["id"], i["tainted"]) for i in instances]
                        if isinstance(instances, list)
                        else {k: (i["id"], i["tainted"]) for k, i in instances.items()}
                        for name, instances in by_name.items()
                    }
                    for type_, by_name in namespace[section].items()
                }
                for section in ("resources", "data")
            }
            for key, namespace in view["modules"].items()
        }

    assert raw["module_paths"] == shown["module_paths"]
    assert skeleton(raw) == skeleton(shown)
    assert raw["outputs"] == shown["outputs"]


@needs_fixtures
def test_opentofu_modules_state_has_one_module_path_per_module_call():
    view = tfstate_view(load(OPENTOFU_STATES / "modules" / "output.json"))
    assert view["module_paths"] == [[], ["module_test_bar"], ["module_test_foo"]]
    assert (
        view["modules"]["module_test_foo"]["resources"]["test_instance"]["example"][0]["attr"]["ami"]
        == "foo-var"
    )
    assert view["outputs"]["test"]["value"] == "baz"


@needs_fixtures
def test_the_corrupted_checkov_plan_is_a_show_json_state_and_reads_as_one():
    view = tfstate_view(load(SHARED / "checkov" / "plan" / "corrupted-tfplan.json"))
    assert view["resources"]["test_instance"]["test"][0]["id"] == "621124146446964903"


# --------------------------------------------------------------------------------- real terraform

MAIN_TF = """
resource "terraform_data" "counted" {
  count = 2
  input = { idx = count.index }
}
resource "terraform_data" "each" {
  for_each = toset(["a.b", "c"])
  input    = each.key
}
module "svc" {
  source   = "./mod"
  for_each = { "blue" = 1, "green.x" = 2 }
  n        = each.value
}
output "num" { value = 42 }
output "items" { value = ["x", "y"] }
output "secret" {
  value     = "s"
  sensitive = true
}
"""
MODULE_TF = """
variable "n" { type = number }
resource "terraform_data" "node" {
  count      = var.n
  input      = "node-${count.index}"
  depends_on = [terraform_data.first]
}
resource "terraform_data" "first" {}
module "inner" { source = "./inner" }
"""
INNER_TF = 'resource "terraform_data" "leaf" { input = "leaf" }\n'


@pytest.mark.terraform
@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_a_state_applied_by_terraform_reads_the_same_raw_and_through_show_json(tmp_path):
    (tmp_path / "mod" / "inner").mkdir(parents=True)
    (tmp_path / "main.tf").write_text(MAIN_TF)
    (tmp_path / "mod" / "main.tf").write_text(MODULE_TF)
    (tmp_path / "mod" / "inner" / "main.tf").write_text(INNER_TF)
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
    terraform("taint", "-no-color", 'module.svc["blue"].terraform_data.node[0]')
    raw = tfstate_view(json.loads((tmp_path / "terraform.tfstate").read_text()))
    shown = tfstate_view(json.loads(terraform("show", "-json", "-no-color")))

    assert raw == shown
    assert raw["module_paths"] == [
        [],
        ['svc["blue"]'],
        ['svc["blue"]', "inner"],
        ['svc["green.x"]'],
        ['svc["green.x"]', "inner"],
    ]
    each = raw["resources"]["terraform_data"]["each"]
    assert list(each) == ["a.b", "c"] and each["a.b"]["attr"]["input"] == "a.b"
    assert [i["attr"]["input"] for i in raw["resources"]["terraform_data"]["counted"]] == [
        {"idx": 0},
        {"idx": 1},
    ]
    blue = raw["modules"]['svc["blue"]']["resources"]["terraform_data"]
    assert [n["tainted"] for n in blue["node"]] == [True]
    assert blue["node"][0]["depends_on"] == ["module.svc.terraform_data.first"]
    green_nodes = raw["modules"]['svc["green.x"]']["resources"]["terraform_data"]["node"]
    assert [n["attr"]["input"] for n in green_nodes] == ["node-0", "node-1"]
    assert not any(n["tainted"] for n in green_nodes)
    assert (
        raw["modules"]['svc["green.x"].inner']["resources"]["terraform_data"]["leaf"][0]["attr"]["input"]
        == "leaf"
    )
    assert raw["outputs"]["num"] == {
        "sensitive": False,
        "type": "string",
        "value": 42,
        "terraform_type": "number",
    }
    assert raw["outputs"]["items"]["type"] == "list"
    assert raw["outputs"]["secret"]["sensitive"] is True
    serial, lineage = state_identity(json.loads((tmp_path / "terraform.tfstate").read_text()))
    assert serial is not None and serial >= 1 and lineage
