"""Root variables (defaults, -var, tfvars files, precedence, types, validation) and the command line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from policies_app.iac.cli import main, run

from .test_iac_eval_support import error_text, errors, evaluate_files, outputs, write_config

VARIABLES = """
variable "name" {
  type    = string
  default = "default-name"
}
variable "size" {
  type    = number
  default = 1
}
variable "tags" {
  type    = map(string)
  default = {}
}
variable "anything" {
  default = "plain"
}
output "name" { value = var.name }
output "size" { value = var.size }
output "tags" { value = var.tags }
output "anything" { value = var.anything }
"""


def test_defaults_apply_when_nothing_is_given(tmp_path):
    assert outputs(evaluate_files(tmp_path, {"main.tf": VARIABLES})) == {
        "name": "default-name",
        "size": 1,
        "tags": {},
        "anything": "plain",
    }


def test_cli_strings_are_parsed_by_the_variables_type_like_terraform(tmp_path):
    document = evaluate_files(
        tmp_path,
        {"main.tf": VARIABLES},
        variables={"name": "[not parsed]", "size": "42", "tags": '{ team = "core" }', "anything": "x + y"},
    )
    # string and untyped variables take the text literally; other types parse it as HCL.
    assert outputs(document) == {
        "name": "[not parsed]",
        "size": 42,
        "tags": {"team": "core"},
        "anything": "x + y",
    }
    assert errors(document) == []


def test_non_string_values_given_by_a_program_are_used_as_they_are(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": VARIABLES}, variables={"tags": {"a": "b"}, "size": 3})
    assert outputs(document)["tags"] == {"a": "b"} and outputs(document)["size"] == 3


def test_tfvars_files_are_loaded_automatically_and_in_terraform_precedence(tmp_path):
    write_config(
        tmp_path,
        {
            "main.tf": VARIABLES,
            "terraform.tfvars": 'name = "from-tfvars"\nsize = 2\ntags = { a = "tfvars" }\nanything = "t"',
            "terraform.tfvars.json": json.dumps({"size": 3}),
            "a.auto.tfvars": 'tags = { a = "auto-a" }',
            "b.auto.tfvars.json": json.dumps({"tags": {"a": "auto-b"}}),
            "explicit.tfvars": 'anything = ["explicit"]',
        },
    )
    from policies_app.iac.configuration import evaluate_configuration

    document = evaluate_configuration(
        str(tmp_path), var_files=[str(tmp_path / "explicit.tfvars")], variables={"name": "cli"}
    )
    assert outputs(document) == {"name": "cli", "size": 3, "tags": {"a": "auto-b"}, "anything": ["explicit"]}
    assert errors(document) == []


def test_type_constraints_convert_values_and_fill_optional_defaults(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        variable "server" {
          type = object({
            name = string
            port = optional(number, 8080)
            tls  = optional(bool)
          })
          default = { name = "web" }
        }
        variable "ports" {
          type    = list(string)
          default = [80, 443]
        }
        variable "ids" {
          type    = set(string)
          default = ["b", "a", "b"]
        }
        output "server" { value = var.server }
        output "ports" { value = var.ports }
        output "ids" { value = var.ids }
    """
        },
    )
    assert outputs(document) == {
        "server": {"name": "web", "port": 8080, "tls": None},
        "ports": ["80", "443"],
        "ids": ["a", "b"],
    }


def test_a_value_that_does_not_convert_is_an_error_naming_the_variable(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": VARIABLES}, variables={"size": "big"})
    [error] = errors(document)
    assert error["summary"] == "Invalid value for variable" and "'size'" in error["detail"]


def test_a_required_variable_without_a_value_is_an_error_naming_it(tmp_path):
    document = evaluate_files(
        tmp_path, {"main.tf": 'variable "region" {\n  type = string\n}\noutput "r" { value = var.region }'}
    )
    [error] = errors(document)
    assert error["summary"] == "No value for required variable" and "'region'" in error["detail"]
    assert error["line"] == 1 and error["file"].endswith("main.tf")
    assert document["outputs"]["r"]["unknown"] is True


def test_validation_blocks_report_the_error_message_and_skip_unknown_conditions(tmp_path):
    files = {
        "main.tf": """
            variable "env" {
              type = string
              validation {
                condition     = contains(["dev", "prod"], var.env)
                error_message = "env must be dev or prod."
              }
            }
            resource "terraform_data" "seed" { input = 1 }
            module "m" {
              source = "./m"
              n      = terraform_data.seed.id
            }
        """,
        "m/main.tf": """
            variable "n" {
              validation {
                condition     = var.n != "bad"
                error_message = "n is bad."
              }
            }
        """,
    }
    document = evaluate_files(tmp_path, files, variables={"env": "staging"})
    [error] = errors(document)
    assert error["summary"] == "Invalid value for variable"
    assert error["detail"] == "var.env: env must be dev or prod."
    assert errors(evaluate_files(tmp_path, files, variables={"env": "dev"})) == []


def test_sensitive_outputs_are_marked(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        variable "password" {
          default   = "hunter2"
          sensitive = true
        }
        output "secret" {
          value     = var.password
          sensitive = true
        }
        output "public" { value = "x" }
    """
        },
    )
    assert document["outputs"]["secret"]["sensitive"] is True
    assert document["outputs"]["public"]["sensitive"] is False


def test_a_value_for_an_undeclared_variable_is_an_error(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": VARIABLES}, variables={"nope": "1"})
    assert "'nope'" in error_text(document)


def test_a_syntax_error_in_a_tfvars_file_is_a_diagnostic_with_its_line(tmp_path):
    write_config(tmp_path, {"main.tf": VARIABLES, "terraform.tfvars": 'name = "ok"\nsize = = 3\n'})
    from policies_app.iac.configuration import evaluate_configuration

    [error] = errors(evaluate_configuration(str(tmp_path)))
    assert error["file"].endswith("terraform.tfvars") and error["line"] == 2


# -- command line ----------------------------------------------------------------------------------------


def test_the_cli_prints_the_document_and_exits_zero_without_errors(tmp_path, capsys):
    write_config(tmp_path, {"main.tf": VARIABLES})
    status = main([str(tmp_path), "--var", "size=7", "--var", "name=a=b", "--compact"])
    document = json.loads(capsys.readouterr().out)
    assert status == 0
    assert outputs(document)["size"] == 7 and outputs(document)["name"] == "a=b"


def test_the_cli_exits_one_when_there_is_an_error_diagnostic(tmp_path):
    write_config(tmp_path, {"main.tf": "locals {\n  a = local.b\n  b = local.a\n}\n"})
    out, err = io.StringIO(), io.StringIO()
    assert run(str(tmp_path), [], [], None, True, out, err) == 1
    assert "local.a -> local.b -> local.a" in err.getvalue()
    assert json.loads(out.getvalue())["diagnostics"][0]["severity"] == "error"


def test_the_cli_refuses_a_var_flag_without_a_name(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert run(str(tmp_path), ["novalue"], [], None, True, out, err) == 2
    assert "NAME=VALUE" in err.getvalue()


def test_python_dash_m_runs_the_cli_with_a_var_file(tmp_path):
    write_config(tmp_path, {"main.tf": VARIABLES, "vars.tfvars.json": json.dumps({"size": 9})})
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "policies_app.iac",
            str(tmp_path),
            "--var-file",
            str(tmp_path / "vars.tfvars.json"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert outputs(json.loads(completed.stdout))["size"] == 9


def test_a_non_nullable_variable_given_null_takes_its_default(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": 'module "m" {\n  source = "./m"\n  size = null\n}\noutput "size" { value = module.m.size }',
            "m/main.tf": """
            variable "size" {
              default  = 3
              nullable = false
            }
            output "size" { value = var.size }
        """,
        },
    )
    assert outputs(document) == {"size": 3}


def test_a_validation_may_refer_to_other_variables(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        variable "min" {
          default = 5
        }
        variable "n" {
          validation {
            condition     = var.n >= var.min
            error_message = "n is below the minimum."
          }
        }
    """
        },
        variables={"n": "2"},
    )
    assert error_text(document) == "Invalid value for variable: var.n: n is below the minimum."
