"""Provider resources with and without the provider's schema (issue 11, defects 7 to 9).

Without a schema, what a provider computes cannot be known: an attribute the configuration leaves
null or unset, and anything inside a nested block it does not set, reads as unknown and is never an
error. With a schema (``terraform providers schema -json``, as providers-schema.json in the template or
handed over with it), attributes, their types and what is computed come from it, as in terraform. The
built-in provider's schema is the one terraform can produce here: that path is compared with terraform.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies_app.iac.configuration import evaluate_configuration
from policies_app.iac.provider_schemas import ProviderSchemaError, parse_provider_schemas
from tests.engine.plan_compare import TERRAFORM, compare_plan, provider_schema, terraform_plan
from tests.engine.test_iac_eval_support import errors, evaluate_files, outputs, write_config

# --- without a schema ------------------------------------------------------------------------------------


def test_an_attribute_left_null_reads_as_unknown_not_as_null(tmp_path):
    # terraform-aws-modules' VPC: cidrsubnet(aws_vpc.this[0].ipv6_cidr_block, ...) failed with "prefix
    # must not be null" when the configuration leaves the optional, computed attribute null.
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            resource "aws_vpc" "this" {
              count           = 1
              cidr_block      = "10.0.0.0/16"
              ipv6_cidr_block = null
            }
            resource "aws_launch_template" "this" {
              count = 1
              name  = "lt"
            }
            output "subnet" { value = cidrsubnet(aws_vpc.this[0].ipv6_cidr_block, 8, 1) }
            output "version" {
              value = coalesce(null, try(aws_launch_template.this[0].default_version, "$Default"))
            }
            output "cidr" { value = aws_vpc.this[0].cidr_block }
        """
        },
    )
    assert errors(document) == []
    assert document["outputs"]["subnet"]["unknown"] is True
    assert document["outputs"]["version"]["unknown"] is True
    assert outputs(document)["cidr"] == "10.0.0.0/16"
    # The plan shows what the configuration says; only what others read of it is unknown.
    [vpc, _] = [r for r in document["resources"] if r["type"] == "aws_vpc"] + [None]
    assert vpc["values"]["ipv6_cidr_block"] is None


def test_attributes_inside_a_configured_nested_block_are_computed_too(tmp_path):
    # terraform-aws-modules' EKS: vpc_config[0].cluster_security_group_id was "Unsupported attribute",
    # and try(...kubernetes_network_config[0].service_ipv4_cidr, "") a known "" tripping a precondition.
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            resource "aws_eks_cluster" "this" {
              name = "c"
              vpc_config {
                subnet_ids = ["a", "b"]
              }
              kubernetes_network_config {
                ip_family = "ipv4"
              }
            }
            locals {
              cidr = try(aws_eks_cluster.this.kubernetes_network_config[0].service_ipv4_cidr, "")
            }
            resource "terraform_data" "check" {
              input = local.cidr
              lifecycle {
                precondition {
                  condition     = local.cidr != ""
                  error_message = "no service CIDR"
                }
              }
            }
            output "sg" { value = aws_eks_cluster.this.vpc_config[0].cluster_security_group_id }
            output "subnets" { value = aws_eks_cluster.this.vpc_config[0].subnet_ids }
            output "unset_block" { value = aws_eks_cluster.this.access_config[0].authentication_mode }
        """
        },
    )
    assert errors(document) == []
    assert document["outputs"]["sg"]["unknown"] is True
    assert document["outputs"]["unset_block"]["unknown"] is True
    assert outputs(document)["subnets"] == ["a", "b"]


def test_a_data_source_stays_unknown_as_a_whole_without_a_schema(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            data "aws_availability_zones" "available" {
              state = "available"
            }
            output "state" { value = data.aws_availability_zones.available.state }
            output "count" { value = length(data.aws_availability_zones.available.names) }
        """
        },
    )
    assert errors(document) == []
    assert all(output["unknown"] is True for output in document["outputs"].values())


# --- with a schema -----------------------------------------------------------------------------------------

_EXAMPLE_SCHEMA = {
    "format_version": "1.0",
    "provider_schemas": {
        "registry.terraform.io/example/example": {
            "provider": {"version": 0, "block": {}},
            "resource_schemas": {
                "example_server": {
                    "version": 0,
                    "block": {
                        "attributes": {
                            "id": {"type": "string", "computed": True},
                            "name": {"type": "string", "required": True},
                            "port": {"type": "number", "optional": True},
                            "zone": {"type": "string", "optional": True, "computed": True},
                            "note": {"type": "string", "optional": True},
                            "password": {"type": "string", "optional": True, "sensitive": True},
                            "tags": {"type": ["map", "string"], "optional": True},
                        },
                        "block_types": {
                            "disk": {
                                "nesting_mode": "list",
                                "block": {
                                    "attributes": {
                                        "size": {"type": "number", "required": True},
                                        "device": {"type": "string", "computed": True},
                                    }
                                },
                            },
                            "network": {
                                "nesting_mode": "list",
                                "block": {"attributes": {"name": {"type": "string", "optional": True}}},
                            },
                        },
                    },
                }
            },
            "data_source_schemas": {
                "example_image": {
                    "version": 0,
                    "block": {
                        "attributes": {
                            "name": {"type": "string", "required": True},
                            "id": {"type": "string", "computed": True},
                            "owner": {"type": "string", "optional": True},
                        }
                    },
                }
            },
        }
    },
}

_SERVER = """
resource "example_server" "web" {
  name     = "web"
  port     = "8080"
  password = "hunter2"
  tags     = { tier = 1 }
  disk {
    size = 10
  }
}
data "example_image" "base" {
  name = "ubuntu"
}
output "zone" { value = example_server.web.zone }
output "note" { value = example_server.web.note }
output "device" { value = example_server.web.disk[0].device }
output "image_name" { value = data.example_image.base.name }
output "image_id" { value = data.example_image.base.id }
output "image_owner" { value = data.example_image.base.owner }
"""


def _server(document: dict) -> dict:
    return next(r for r in document["resources"] if r["type"] == "example_server")


def test_a_schema_file_in_the_template_makes_attributes_typed_computed_or_null(tmp_path):
    write_config(tmp_path, {"main.tf": _SERVER, "providers-schema.json": json.dumps(_EXAMPLE_SCHEMA)})
    document = evaluate_configuration(str(tmp_path))
    assert errors(document) == []
    server = _server(document)
    assert server["values"]["port"] == 8080  # converted to the attribute's type
    assert server["values"]["tags"] == {"tier": "1"}
    assert server["values"]["network"] == []  # a list block not written
    assert server["unknown"] == {"id": True, "zone": True, "disk": [{"device": True}]}
    assert server["sensitive"] == {"password": True}
    assert document["outputs"]["zone"]["unknown"] is True  # optional and computed
    assert outputs(document)["note"] is None  # optional, not computed: null
    assert document["outputs"]["device"]["unknown"] is True
    # A data source's configured arguments are known; what it computes is not.
    assert outputs(document)["image_name"] == "ubuntu"
    assert document["outputs"]["image_id"]["unknown"] is True
    assert outputs(document)["image_owner"] is None


def test_a_schema_handed_over_with_the_template_wins_over_none_in_its_files(tmp_path):
    write_config(tmp_path, {"main.tf": _SERVER})
    without = evaluate_configuration(str(tmp_path))
    assert _server(without)["values"]["port"] == "8080"
    document = evaluate_configuration(str(tmp_path), provider_schema=_EXAMPLE_SCHEMA)
    assert _server(document)["values"]["port"] == 8080


def test_with_a_schema_unknown_names_and_missing_arguments_are_errors(tmp_path):
    write_config(
        tmp_path,
        {
            "main.tf": """
            resource "example_server" "web" {
              colour = "blue"
              disk {
                size = 1
              }
            }
            output "x" { value = example_server.web.nonexistent }
            """,
            "providers-schema.json": json.dumps(_EXAMPLE_SCHEMA),
        },
    )
    found = {(e["summary"], e["line"]) for e in errors(evaluate_configuration(str(tmp_path)))}
    assert ("Unsupported argument", 3) in found
    assert ("Missing required argument", None) in found
    assert ("Unsupported attribute", 8) in found


def test_a_schema_that_is_no_schema_is_an_error_naming_the_file_and_the_rest_is_evaluated(tmp_path):
    write_config(tmp_path, {"main.tf": _SERVER, "providers-schema.json": '{"provider_schemas": []}'})
    document = evaluate_configuration(str(tmp_path))
    [problem] = errors(document)
    assert problem["summary"] == "Invalid provider schema" and "providers-schema.json" in problem["detail"]
    assert _server(document)["values"]["name"] == "web"
    with pytest.raises(ProviderSchemaError, match="is not a type"):
        parse_provider_schemas(
            {
                "provider_schemas": {
                    "p": {"resource_schemas": {"t": {"block": {"attributes": {"a": {"type": 5}}}}}}
                }
            }
        )


# --- the built-in provider's schema, against terraform -------------------------------------------------------

_REMOTE_STATE = """
resource "terraform_data" "first" {
  input = "x"
}

data "terraform_remote_state" "network" {
  backend = "local"
  config = {
    path = "${path.module}/network.tfstate"
  }
  # Read once terraform_data.first exists: during the plan, only the configuration is known.
  depends_on = [terraform_data.first]
}

resource "terraform_data" "uses" {
  input = {
    backend   = data.terraform_remote_state.network.backend
    workspace = data.terraform_remote_state.network.workspace
    defaults  = data.terraform_remote_state.network.defaults
    outputs   = data.terraform_remote_state.network.outputs
  }
}

output "backend" {
  value = data.terraform_remote_state.network.backend
}
"""

_STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 1,
    "lineage": "00000000-0000-0000-0000-000000000000",
    "outputs": {"vpc_id": {"value": "vpc-1", "type": "string"}},
    "resources": [],
}


@pytest.mark.terraform
@pytest.mark.skipif(TERRAFORM is None, reason="terraform is not on PATH: the oracle cannot run")
def test_the_schema_terraform_prints_plans_a_data_source_as_terraform_does(tmp_path):
    write_config(tmp_path, {"main.tf": _REMOTE_STATE, "network.tfstate": json.dumps(_STATE)})
    plan = terraform_plan(tmp_path)
    assert "error" not in plan, plan.get("error")
    schema = provider_schema(tmp_path)
    (tmp_path / "providers-schema.json").write_text(json.dumps(schema))
    assert compare_plan(plan, evaluate_configuration(str(tmp_path))).differences == []
    (tmp_path / "providers-schema.json").unlink()
    assert compare_plan(plan, evaluate_configuration(str(tmp_path), provider_schema=schema)).differences == []


@pytest.mark.terraform
@pytest.mark.skipif(TERRAFORM is None, reason="terraform is not on PATH: the oracle cannot run")
def test_an_attribute_the_schema_does_not_have_is_an_error_as_in_terraform(tmp_path: Path):
    write_config(
        tmp_path,
        {
            "main.tf": 'resource "terraform_data" "a" {\n  input = 1\n}\noutput "x" {\n  value = terraform_data.a.nope\n}\n'
        },
    )
    plan = terraform_plan(tmp_path)
    assert "Unsupported attribute" in plan["error"]
    [problem] = errors(evaluate_configuration(str(tmp_path)))
    assert (problem["summary"], problem["line"]) == ("Unsupported attribute", 5)
