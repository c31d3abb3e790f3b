"""Whole configurations: the graph, resources, count/for_each, modules, the output document."""

from __future__ import annotations

import json
import time

from .test_iac_eval_support import (
    error_text,
    errors,
    evaluate_files,
    evaluator_for,
    outputs,
    resources_by_address,
)

# -- the graph ------------------------------------------------------------------------------------------


def test_locals_are_evaluated_across_files_and_out_of_order(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "b.tf": 'output "c" { value = local.c }\nlocals { c = local.b * 10 }',
            "a.tf": "locals {\n  b = local.a + 1\n  a = 1\n}",
        },
    )
    assert outputs(document) == {"c": 20}
    assert document["diagnostics"] == []


def test_each_node_is_evaluated_once_even_when_many_nodes_use_it(tmp_path):
    evaluator = evaluator_for(
        tmp_path,
        {
            "main.tf": """
        locals {
          base = 1
          a = local.base + 1
          b = local.base + local.a
          c = local.a + local.b + local.base
        }
        output "c" { value = local.c }
        output "b" { value = local.b }
    """
        },
    )
    document = evaluator.document()
    assert outputs(document) == {"c": 6, "b": 3}
    assert evaluator.evaluation_count == len(evaluator.graph) == 6


def test_a_lazy_request_evaluates_only_what_the_value_needs(tmp_path):
    evaluator = evaluator_for(
        tmp_path,
        {
            "main.tf": """
        locals {
          a = 1
          b = local.a + 1
          unrelated = 5
        }
        resource "terraform_data" "x" { input = local.unrelated }
        output "b" { value = local.b }
    """
        },
    )
    assert evaluator.output_value("b") == 2
    assert evaluator.evaluation_count == 3  # local.a, local.b, output.b
    assert evaluator.local_value("unrelated") == 5
    assert evaluator.evaluation_count == 4
    evaluator.document()
    assert evaluator.evaluation_count == len(evaluator.graph)


def test_a_cycle_is_an_error_naming_every_block_on_it(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          a = local.b
          b = local.c
          c = local.a
          ok = 1
        }
        output "ok" { value = local.ok }
    """
        },
    )
    assert "local.a -> local.b -> local.c -> local.a" in error_text(document)
    cycle = next(d for d in errors(document) if d["summary"] == "Cycle in the configuration")
    assert cycle["file"].endswith("main.tf") and cycle["line"] == 3
    assert outputs(document)["ok"] == 1


def test_a_chain_of_four_thousand_locals_does_not_hit_the_recursion_limit(tmp_path):
    lines = ["locals {", "  l0 = 0"] + [f"  l{i} = local.l{i - 1} + 1" for i in range(1, 4000)] + ["}"]
    lines.append('output "last" { value = local.l3999 }')
    evaluator = evaluator_for(tmp_path, {"main.tf": "\n".join(lines)})
    started = time.perf_counter()
    assert evaluator.output_value("last") == 3999  # lazy request through the whole chain
    assert outputs(evaluator.document())["last"] == 3999
    assert time.perf_counter() - started < 5


# -- resources -------------------------------------------------------------------------------------------


def test_resource_attributes_not_in_configuration_are_unknown_after_apply(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "a" { input = "x" }
        resource "aws_instance" "web" {
          ami = "ami-1"
          tags = { Name = "web" }
          ebs_block_device {
            device_name = "/dev/sdb"
          }
          ebs_block_device {
            device_name = "/dev/sdc"
          }
          lifecycle {
            create_before_destroy = true
          }
          depends_on = [terraform_data.a]
        }
        output "arn" { value = aws_instance.web.arn }
        output "ami" { value = aws_instance.web.ami }
        output "id_in_list" { value = [terraform_data.a.id, 1] }
        output "devices" { value = aws_instance.web.ebs_block_device[*].device_name }
    """
        },
    )
    assert document["outputs"]["arn"] == {"value": None, "sensitive": False, "unknown": True}
    assert document["outputs"]["ami"]["value"] == "ami-1"
    assert document["outputs"]["id_in_list"] == {
        "value": [None, 1],
        "sensitive": False,
        "unknown": [True, False],
    }
    assert outputs(document)["devices"] == ["/dev/sdb", "/dev/sdc"]
    web = resources_by_address(document)["aws_instance.web"]
    assert web["values"] == {
        "ami": "ami-1",
        "tags": {"Name": "web"},
        "ebs_block_device": [{"device_name": "/dev/sdb"}, {"device_name": "/dev/sdc"}],
    }
    assert web["mode"] == "managed" and web["module"] == "" and web["index"] is None
    assert web["expansion"] == "none"
    data = resources_by_address(document)["terraform_data.a"]
    assert data["values"] == {"id": None, "input": "x", "output": None, "triggers_replace": None}
    assert data["unknown"] == {"id": True, "output": True}


def test_count_expands_with_count_index_and_references_give_a_list(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "n" {
          count = 3
          input = "n-${count.index}"
        }
        output "inputs" { value = terraform_data.n[*].input }
        output "second" { value = terraform_data.n[1].input }
    """
        },
    )
    assert outputs(document) == {"inputs": ["n-0", "n-1", "n-2"], "second": "n-1"}
    by_address = resources_by_address(document)
    assert list(by_address) == ["terraform_data.n[0]", "terraform_data.n[1]", "terraform_data.n[2]"]
    assert by_address["terraform_data.n[2]"]["index"] == 2
    assert by_address["terraform_data.n[2]"]["expansion"] == "count"


def test_for_each_over_a_map_and_a_set_of_strings_binds_each_key_and_value(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        variable "names" {
          type    = set(string)
          default = ["b", "a"]
        }
        resource "terraform_data" "m" {
          for_each = { x = 1, y = 2 }
          input    = "${each.key}=${each.value}"
        }
        resource "terraform_data" "s" {
          for_each = var.names
          input    = "${each.key}/${each.value}"
        }
        output "m" { value = { for k, r in terraform_data.m : k => r.input } }
        output "s" { value = terraform_data.s["a"].input }
    """
        },
    )
    assert outputs(document) == {"m": {"x": "x=1", "y": "y=2"}, "s": "a/a"}
    assert set(resources_by_address(document)) == {
        'terraform_data.m["x"]',
        'terraform_data.m["y"]',
        'terraform_data.s["a"]',
        'terraform_data.s["b"]',
    }
    assert resources_by_address(document)['terraform_data.m["y"]']["index"] == "y"


def test_for_each_over_a_list_is_an_error_naming_the_block(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "bad" {
          for_each = ["a", "b"]
          input    = each.key
        }
    """
        },
    )
    [error] = errors(document)
    assert error["summary"] == "Invalid for_each argument"
    assert "terraform_data.bad" in error["detail"] and "tuple" in error["detail"]
    assert error["line"] == 3


def test_for_each_over_a_set_of_numbers_is_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        variable "numbers" {
          type    = set(number)
          default = [1, 2]
        }
        resource "terraform_data" "bad" {
          for_each = var.numbers
        }
    """
        },
    )
    assert "set containing type number" in error_text(document)
    assert "terraform_data.bad" in error_text(document)


def test_count_must_be_a_whole_non_negative_number(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "neg" { count = -1 }
        resource "terraform_data" "half" { count = 1.5 }
        resource "terraform_data" "text" { count = "two" }
        resource "terraform_data" "ok" { count = "2" }
    """
        },
    )
    text = error_text(document)
    assert text.count("Invalid count argument") == 3
    assert "terraform_data.neg" in text and "terraform_data.half" in text and "terraform_data.text" in text
    assert {"terraform_data.ok[0]", "terraform_data.ok[1]"} <= set(resources_by_address(document))


def test_an_unknown_count_is_not_expanded_and_is_reported_once(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "a" { input = 1 }
        resource "terraform_data" "c" {
          count = terraform_data.a.output
          input = count.index
        }
        resource "terraform_data" "f" {
          for_each = { (terraform_data.a.id) = 1 }
        }
        output "c" { value = terraform_data.c }
        output "first" { value = terraform_data.c[0].input }
        output "keys" { value = [for k, v in terraform_data.f : k] }
    """
        },
    )
    by_address = resources_by_address(document)
    assert by_address["terraform_data.c"]["index"] is None
    assert by_address["terraform_data.c"]["expansion"] == "unknown"
    assert by_address["terraform_data.f"]["expansion"] == "unknown"
    assert not [a for a in by_address if a.startswith("terraform_data.c[")]
    assert all(output["unknown"] is True for output in document["outputs"].values())
    assert errors(document) == []


def test_dynamic_blocks_expand_and_meta_arguments_are_not_values(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          rules = { http = 80, https = 443 }
        }
        resource "aws_security_group" "sg" {
          name = "sg"
          dynamic "ingress" {
            for_each = local.rules
            content {
              from_port = ingress.value
              description = ingress.key
            }
          }
          dynamic "egress" {
            for_each = [1]
            iterator = rule
            content {
              to_port = rule.value
            }
          }
          provisioner "local-exec" {
            command = "echo ${self.name}"
          }
        }
        output "ports" { value = aws_security_group.sg.ingress[*].from_port }
    """
        },
    )
    sg = resources_by_address(document)["aws_security_group.sg"]["values"]
    assert sg == {
        "name": "sg",
        "ingress": [{"from_port": 80, "description": "http"}, {"from_port": 443, "description": "https"}],
        "egress": [{"to_port": 1}],
    }
    assert outputs(document)["ports"] == [80, 443]
    assert errors(document) == []


def test_self_is_available_in_provisioners_and_postconditions_only(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "a" {
          input = 5
          lifecycle {
            postcondition {
              condition     = self.input < 3
              error_message = "input is ${self.input}, too big"
            }
          }
          provisioner "local-exec" {
            command = "echo ${self.nope_not_there}"
          }
        }
        resource "terraform_data" "b" { input = self.input }
    """
        },
    )
    text = error_text(document)
    assert "Resource postcondition failed: terraform_data.a: input is 5, too big" in text
    assert "self can only be used" in text  # in terraform_data.b's input
    # terraform_data has no such attribute: terraform refuses the provisioner's reference too.
    assert "Unsupported attribute: this object does not have an attribute named 'nope_not_there'" in text
    assert len(errors(document)) == 3


def test_data_sources_are_unknown_until_read(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        data "aws_ami" "ubuntu" {
          most_recent = true
        }
        output "id" { value = data.aws_ami.ubuntu.id }
        output "flag" { value = data.aws_ami.ubuntu.most_recent }
    """
        },
    )
    assert all(o["unknown"] is True for o in document["outputs"].values())
    entry = resources_by_address(document)["data.aws_ami.ubuntu"]
    assert entry["mode"] == "data" and entry["values"] == {"most_recent": True}


def test_path_and_terraform_workspace_are_relative_like_terraform(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "child" { source = "./modules/child" }
            output "root" { value = [path.module, path.root, terraform.workspace] }
            output "child" { value = module.child.where }
        """,
            "modules/child/main.tf": 'output "where" { value = path.module }',
        },
    )
    assert outputs(document) == {"root": [".", ".", "default"], "child": "modules/child"}


# -- what other evaluators get wrong ----------------------------------------------------------------------


def test_count_and_for_each_taken_from_a_child_modules_outputs_are_expanded(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "sizes" { source = "./sizes" }
            resource "terraform_data" "c" {
              count = module.sizes.count
              input = count.index
            }
            resource "terraform_data" "f" {
              for_each = module.sizes.names
              input    = each.value
            }
        """,
            "sizes/main.tf": """
            output "count" { value = 2 }
            output "names" { value = { a = "x", b = "y" } }
        """,
        },
    )
    assert set(resources_by_address(document)) == {
        "terraform_data.c[0]",
        "terraform_data.c[1]",
        'terraform_data.f["a"]',
        'terraform_data.f["b"]',
    }


def test_a_local_using_try_on_a_counted_resource_sees_it_expanded(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          first_input = try(terraform_data.n[0].input, "none")
          missing     = try(terraform_data.n[5].input, "none")
        }
        resource "terraform_data" "n" {
          count = 2
          input = "value-${count.index}"
        }
        output "first" { value = local.first_input }
        output "missing" { value = local.missing }
    """
        },
    )
    assert outputs(document) == {"first": "value-0", "missing": "none"}


def test_for_each_over_a_for_each_resource_or_a_local_built_from_it_gives_one_instance_per_key(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "bucket" {
          for_each = { logs = 1, data = 2 }
          input    = each.value
        }
        locals {
          buckets = { for k, b in terraform_data.bucket : k => b }
        }
        resource "terraform_data" "policy" {
          for_each = terraform_data.bucket
          input    = each.value.input
        }
        resource "terraform_data" "via_local" {
          for_each = local.buckets
          input    = each.key
        }
    """
        },
    )
    addresses = set(resources_by_address(document))
    assert {a for a in addresses if a.startswith("terraform_data.policy")} == {
        'terraform_data.policy["data"]',
        'terraform_data.policy["logs"]',
    }
    assert {a for a in addresses if a.startswith("terraform_data.via_local")} == {
        'terraform_data.via_local["data"]',
        'terraform_data.via_local["logs"]',
    }
    assert resources_by_address(document)['terraform_data.policy["logs"]']["values"]["input"] == 1


# -- modules ------------------------------------------------------------------------------------------------


def test_nested_local_modules_with_count_get_terraform_addresses(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "app" {
              source = "./app"
              count  = 2
              name   = "app${count.index}"
            }
            output "names" { value = module.app[*].name }
            output "inner" { value = module.app[1].inner }
        """,
            "app/main.tf": """
            variable "name" { type = string }
            module "db" {
              source = "../db"
              prefix = var.name
            }
            resource "terraform_data" "x" { input = var.name }
            output "name" { value = var.name }
            output "inner" { value = module.db.full }
        """,
            "db/main.tf": """
            variable "prefix" {}
            resource "terraform_data" "db" { input = "${var.prefix}-db" }
            output "full" { value = terraform_data.db.input }
        """,
        },
    )
    assert outputs(document) == {"names": ["app0", "app1"], "inner": "app1-db"}
    by_address = resources_by_address(document)
    assert by_address["module.app[1].module.db.terraform_data.db"]["values"]["input"] == "app1-db"
    assert by_address["module.app[1].module.db.terraform_data.db"]["module"] == "module.app[1].module.db"
    assert by_address["module.app[0].terraform_data.x"]["values"]["input"] == "app0"
    assert errors(document) == []


def test_module_for_each_binds_each_in_its_arguments(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "svc" {
              source   = "./svc"
              for_each = { a = 1, b = 2 }
              n        = each.value * 10
            }
            output "all" { value = { for k, m in module.svc : k => m.n } }
        """,
            "svc/main.tf": 'variable "n" {}\noutput "n" { value = var.n }',
        },
    )
    assert outputs(document) == {"all": {"a": 10, "b": 20}}


def test_a_module_with_unknown_count_reports_its_resources_as_unknown_expansion(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            resource "terraform_data" "seed" { input = 1 }
            module "m" {
              source = "./m"
              count  = terraform_data.seed.output
            }
            output "o" { value = module.m }
        """,
            "m/main.tf": 'resource "terraform_data" "r" { input = 1 }\noutput "x" { value = 1 }',
        },
    )
    entry = resources_by_address(document)["module.m.terraform_data.r"]
    assert entry["expansion"] == "unknown"
    assert document["outputs"]["o"]["unknown"] is True


def test_remote_modules_resolve_through_modules_json_and_unresolved_ones_are_unknown(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "vpc" { source = "terraform-aws-modules/vpc/aws" }
            module "gone" { source = "git::https://example.com/x.git" }
            output "vpc" { value = module.vpc.id }
            output "gone" { value = module.gone.anything }
            output "nested" { value = module.vpc.inner }
        """,
            ".terraform/modules/vpc/main.tf": """
            module "sub" { source = "hashicorp/sub/aws" }
            output "id" { value = "vpc-1" }
            output "inner" { value = module.sub.v }
        """,
            ".terraform/modules/vpc.sub/main.tf": 'output "v" { value = "sub" }',
            ".terraform/modules/modules.json": json.dumps(
                {
                    "Modules": [
                        {"Key": "", "Source": "", "Dir": "."},
                        {
                            "Key": "vpc",
                            "Source": "registry.terraform.io/terraform-aws-modules/vpc/aws",
                            "Dir": ".terraform/modules/vpc",
                        },
                        {
                            "Key": "vpc.sub",
                            "Source": "registry.terraform.io/hashicorp/sub/aws",
                            "Dir": ".terraform/modules/vpc.sub",
                        },
                    ]
                }
            ),
        },
    )
    assert outputs(document)["vpc"] == "vpc-1"
    assert outputs(document)["nested"] == "sub"
    assert document["outputs"]["gone"]["unknown"] is True
    [warning] = [d for d in document["diagnostics"] if d["severity"] == "warning"]
    assert "module gone: source git::https://example.com/x.git not resolved" in warning["detail"]
    assert errors(document) == []


def test_a_module_argument_that_is_not_a_variable_is_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": 'module "m" {\n  source = "./m"\n  nope = 1\n}',
            "m/main.tf": 'variable "x" {\n  default = 1\n}',
        },
    )
    assert "'nope'" in error_text(document)


def test_a_required_module_variable_without_a_value_is_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": 'module "m" { source = "./m" }',
            "m/main.tf": 'variable "needed" {}',
        },
    )
    assert "No value for required variable: module.m: the variable 'needed'" in error_text(document)


def test_errors_in_one_expression_leave_the_rest_evaluated_and_carry_file_and_line(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          bad  = local.missing
          good = 2
        }
        output "good" { value = local.good }
        output "bad" { value = local.bad }
    """
        },
    )
    [error] = errors(document)
    assert error["summary"] == "Reference to undeclared local value"
    assert error["file"].endswith("main.tf") and error["line"] == 3
    assert outputs(document) == {"good": 2, "bad": None}
    assert document["outputs"]["bad"]["unknown"] is True


def test_functions_work_inside_configurations(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "s" {
          for_each = toset(["b", "a"])
          input    = upper(each.key)
        }
        output "n" { value = length(terraform_data.s) }
        output "when" { value = timestamp() }
    """
        },
    )
    assert outputs(document)["n"] == 2
    assert resources_by_address(document)['terraform_data.s["a"]']["values"]["input"] == "A"
    assert document["outputs"]["when"]["unknown"] is True


def test_unknown_sentinel_never_leaks_into_the_document(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "a" { input = { x = 1 } }
        output "o" { value = { a = terraform_data.a.id, b = [terraform_data.a.output] } }
    """
        },
    )
    json.dumps(document)  # no UNKNOWN object anywhere
    assert document["outputs"]["o"] == {
        "value": {"a": None, "b": [None]},
        "sensitive": False,
        "unknown": {"a": True, "b": [True]},
    }


def test_templatefile_renders_with_the_evaluator_and_paths_resolve_from_the_root_like_terraform(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": 'module "m" { source = "./mod" }\noutput "t" { value = module.m.t }\n'
            'output "f" { value = file("mod/x.tpl") }',
            "mod/main.tf": 'output "t" { value = templatefile("${path.module}/x.tpl", { names = ["a", "b"] }) }',
            "mod/x.tpl": '%{ for x in names ~}\n${upper(x)}\n%{ endfor ~}\n${file("mod/y.txt")}',
            "mod/y.txt": "!",
        },
    )
    assert outputs(document)["t"] == "A\nB\n!"
    assert outputs(document)["f"].startswith("%{ for x in names ~}")
    assert errors(document) == []


def test_resources_are_listed_by_module_then_address_with_numeric_indexes_in_numeric_order(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
            module "m" {
              source = "./m"
              count  = 11
            }
            resource "terraform_data" "r" { count = 11 }
            data "terraform_remote_state" "s" { backend = "local" }
        """,
            "m/main.tf": 'resource "terraform_data" "x" {}',
        },
    )
    addresses = [r["address"] for r in document["resources"]]
    root = [a for a in addresses if not a.startswith("module.")]
    assert root == [f"terraform_data.r[{i}]" for i in range(11)] + ["data.terraform_remote_state.s"]
    assert addresses[12:] == [f"module.m[{i}].terraform_data.x" for i in range(11)]


def test_unreadable_configurations_are_diagnostics_not_exceptions(tmp_path):
    from policies_app.iac.configuration import evaluate_configuration

    missing = evaluate_configuration(str(tmp_path / "nope"))
    assert missing["outputs"] == {} and errors(missing)[0]["summary"] == "Failed to load configuration"
    broken = evaluate_files(tmp_path, {"main.tf": "locals {\n  a = 1\n  b = = 2\n}\n"})
    [error] = errors(broken)
    assert error["file"].endswith("main.tf") and error["line"] == 3


def test_a_child_module_that_cannot_be_read_makes_its_outputs_unknown_without_more_errors(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": 'module "m" {\n  source = "./m"\n  x = 1\n}\noutput "o" { value = module.m.out }',
            "m/main.tf": "variable {{{",
        },
    )
    [error] = errors(document)
    assert error["file"].endswith("m/main.tf")
    assert document["outputs"]["o"]["unknown"] is True


def test_failed_check_assertions_are_warnings_and_scoped_data_makes_them_unknown(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          replicas = 1
        }
        check "enough_replicas" {
          assert {
            condition     = local.replicas >= 2
            error_message = "only ${local.replicas} replica"
          }
        }
        check "site_up" {
          data "http" "site" {
            url = "https://example.com"
          }
          assert {
            condition     = data.http.site.status_code == 200
            error_message = "the site is down"
          }
        }
    """
        },
    )
    assert errors(document) == []
    [warning] = [d for d in document["diagnostics"] if d["severity"] == "warning"]
    assert warning["summary"] == "Check block assertion failed"
    assert warning["detail"] == "check.enough_replicas: only 1 replica" and warning["line"] == 7


def test_a_defect_of_the_evaluator_becomes_an_error_diagnostic_instead_of_an_exception(tmp_path, monkeypatch):
    from policies_app.iac import configuration

    def broken(self):
        raise KeyError("defect")

    monkeypatch.setattr(configuration.ConfigurationEvaluator, "_build_graph", broken)
    document = evaluate_files(tmp_path, {"main.tf": "locals {\n  a = 1\n}\n"})
    [error] = errors(document)
    assert error["summary"] == "Internal error of the evaluator" and "defect" in error["detail"]


def test_a_block_referring_to_itself_is_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        locals {
          a = local.a + 1
        }
        resource "terraform_data" "r" {
          input = terraform_data.r.id
        }
    """
        },
    )
    assert "local.a refers to itself" in error_text(document)
    assert "terraform_data.r refers to itself" in error_text(document)


def test_a_resource_naming_itself_in_depends_on_is_not_an_error_but_elsewhere_it_is(tmp_path):
    # terraform 1.11 plans the first and refuses the second (iac_corpus/depends_on_itself).
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        resource "terraform_data" "a" {
          input      = "x"
          depends_on = [terraform_data.a]
        }
        resource "terraform_data" "b" {
          input      = terraform_data.b.id
          depends_on = [terraform_data.b]
        }
    """
        },
    )
    assert "terraform_data.a refers to itself" not in error_text(document)
    assert "terraform_data.b refers to itself" in error_text(document)
