"""Findings of the review against terraform 1.11: module outputs as their own nodes, positions of
parse errors, namespaced functions, division by zero, unknown functions."""

from __future__ import annotations

from .test_iac_eval_support import error_text, errors, evaluate_files, evaluator_for, outputs

_CHILD = {
    "c/main.tf": """
        variable "x" {}
        output "y" { value = 5 }
        output "z" { value = var.x * 2 }
    """,
}

# -- module outputs are separate nodes ---------------------------------------------------------------


def test_an_output_wired_into_another_modules_input_is_resolved_when_the_modules_feed_each_other(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            **_CHILD,
            "main.tf": """
        module "a" {
          source = "./c"
          x      = module.b.y
        }
        module "b" {
          source = "./c"
          x      = module.a.y
        }
        output "za" { value = module.a.z }
        output "zb" { value = module.b.z }
    """,
        },
    )
    assert document["diagnostics"] == []
    assert outputs(document) == {"za": 10, "zb": 10}


def test_a_module_fed_by_its_own_independent_output_is_resolved(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            **_CHILD,
            "main.tf": """
        module "m" {
          source = "./c"
          x      = module.m.y
        }
        output "z" { value = module.m.z }
        output "whole" { value = module.m }
    """,
        },
    )
    assert document["diagnostics"] == []
    assert outputs(document) == {"z": 10, "whole": {"y": 5, "z": 10}}


def test_an_indexed_module_output_reads_only_that_instances_output(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            **_CHILD,
            "main.tf": """
        module "k" {
          source = "./c"
          count  = 2
          x      = 3 + count.index
        }
        module "e" {
          source   = "./c"
          for_each = toset(["p", "q"])
          x        = module.k[1].z
        }
        output "k1" { value = module.k[1].z }
        output "eq" { value = module.e["q"].z }
        output "splat" { value = module.k[*].z }
    """,
        },
    )
    assert document["diagnostics"] == []
    assert outputs(document) == {"k1": 8, "eq": 16, "splat": [6, 8]}


def test_an_index_out_of_range_on_a_module_is_still_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            **_CHILD,
            "main.tf": """
        module "k" {
          source = "./c"
          count  = 1
          x      = 1
        }
        output "bad" { value = module.k[3].z }
        output "missing" { value = module.k[0].nope }
    """,
        },
    )
    text = error_text(document)
    assert "Invalid index" in text
    assert "Unsupported attribute" in text


def test_a_real_cycle_through_a_modules_own_output_is_an_error_naming_it(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            **_CHILD,
            "main.tf": """
        module "m" {
          source = "./c"
          x      = module.m.z
        }
        output "z" { value = module.m.z }
    """,
        },
    )
    assert [d["summary"] for d in errors(document)] == ["Cycle in the configuration"]
    steps = errors(document)[0]["detail"].split(" -> ")
    assert sorted(steps[:-1]) == ["module.m.output.z", "module.m.var.x"] and steps[0] == steps[-1]
    assert document["outputs"]["z"]["unknown"] is True


def test_reading_a_node_under_evaluation_is_a_cycle_error_not_a_silent_unknown(tmp_path):
    # The graph orders every reference it sees; should one escape it, the read must say so.
    evaluator = evaluator_for(tmp_path, {"main.tf": "locals {\n  a = local.b + 1\n  b = 1\n}"})
    evaluator._in_progress.add(((), "local", "b"))
    evaluator.request([((), "local", "a")])
    problems = [d for d in evaluator.diagnostics if d.severity == "error"]
    assert [(d.summary, d.detail, d.line) for d in problems] == [
        ("Cycle in the configuration", "local.b depends on its own value", 2)
    ]


# -- parse errors name file, line and column ------------------------------------------------------------


def _only_error(document: dict) -> dict:
    found = [d for d in errors(document) if d["summary"] != "No value for required variable"]
    assert len(found) == 1, found
    return found[0]


def test_a_broken_tfvars_file_reports_its_line_and_column_in_readable_words(tmp_path):
    (tmp_path / "bad.tfvars").write_text('a = "x"\nb = {\n  c = \n}\n')
    document = evaluate_files(
        tmp_path, {"main.tf": 'variable "a" {}\n'}, var_files=[str(tmp_path / "bad.tfvars")]
    )
    problem = _only_error(document)
    assert (problem["file"], problem["line"], problem["column"]) == (str(tmp_path / "bad.tfvars"), 3, 7)
    assert problem["detail"] == "unexpected newline; expected an expression"


def test_a_broken_tfvars_json_file_reports_its_line_and_column(tmp_path):
    (tmp_path / "bad.tfvars.json").write_text('{\n  "a": "x",\n  "b": }\n')
    document = evaluate_files(
        tmp_path, {"main.tf": 'variable "a" {}\n'}, var_files=[str(tmp_path / "bad.tfvars.json")]
    )
    problem = _only_error(document)
    assert (problem["summary"], problem["line"], problem["column"]) == ("Invalid variables file", 3, 8)


def test_a_syntax_error_in_a_configuration_file_names_the_token_found_where_it_is(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": "locals {\n  a = [1, 2\n  b = 3\n}\n"})
    problem = _only_error(document)
    assert (problem["file"], problem["line"], problem["column"]) == (str(tmp_path / "main.tf"), 3, 3)
    assert problem["detail"] == "unexpected 'b'; expected ',', a newline or ']'"


def test_a_closing_brace_where_an_expression_belongs_is_named_as_a_brace(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": "locals {\n  a = 1 +\n}\n"})
    problem = _only_error(document)
    assert (problem["line"], problem["column"]) == (3, 1)
    assert problem["detail"].startswith("unexpected '}'; expected an expression")
    assert "STRING_CHARS" not in problem["detail"] and "DBLQUOTE" not in problem["detail"]


def test_every_diagnostic_has_a_column_null_when_not_known(tmp_path):
    document = evaluate_files(
        tmp_path, {"main.tf": 'output "x" {\n  value = local.nope\n}\n'}, variables={"undeclared": "1"}
    )
    by_summary = {d["summary"]: d for d in document["diagnostics"]}
    assert by_summary["Reference to undeclared local value"]["column"] == 11
    assert by_summary["Value for undeclared variable"]["column"] is None


def test_the_command_line_prints_file_line_and_column_of_each_error(tmp_path):
    import io

    from policies_app.iac.cli import run

    (tmp_path / "main.tf").write_text("locals {\n  a = [1, 2\n  b = 3\n}\n")
    out, err = io.StringIO(), io.StringIO()
    assert run(str(tmp_path), [], [], None, True, out, err) == 1
    assert err.getvalue() == (
        f"error: {tmp_path / 'main.tf'}:3:3: Failed to load configuration: "
        "unexpected 'b'; expected ',', a newline or ']'\n"
    )


# -- functions: core:: namespace, provider functions, unknown names -------------------------------------


def test_a_core_namespaced_builtin_is_the_builtin(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        output "u" { value = core::upper("x") }
        output "t" { value = core::try(local.nope, "fallback") }
    """
        },
    )
    assert document["diagnostics"] == []
    assert outputs(document) == {"u": "X", "t": "fallback"}


def test_a_provider_function_is_an_unsupported_warning_and_the_rest_is_still_evaluated(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        output "p" { value = provider::aws::arn_parse("arn:aws:s3:::b") }
        output "n" { value = 1 + 1 }
    """
        },
    )
    assert errors(document) == []
    assert [d["summary"] for d in document["diagnostics"]] == [
        "Unsupported function 'provider::aws::arn_parse'"
    ]
    assert document["outputs"]["p"]["unknown"] is True
    assert outputs(document)["n"] == 2


def test_a_call_to_a_name_that_is_no_terraform_function_is_an_error(tmp_path):
    document = evaluate_files(tmp_path, {"main.tf": 'output "x" {\n  value = nofunc(1)\n}\n'})
    problem = _only_error(document)
    assert (problem["summary"], problem["detail"]) == (
        "Call to unknown function",
        "there is no function named 'nofunc'",
    )
    assert (problem["line"], problem["column"]) == (2, 11)


# -- division by zero as cty does it -----------------------------------------------------------------


def test_dividing_by_zero_gives_infinity_as_terraform_does(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        output "pos" { value = tostring(1/0) }
        output "neg" { value = tostring(-1.5/0) }
        output "cmp" { value = 1/0 > 1e300 }
        output "back" { value = 1/(1/0) }
        output "mod" { value = 7 % 0 }
    """
        },
    )
    assert document["diagnostics"] == []
    assert outputs(document) == {"pos": "+Inf", "neg": "-Inf", "cmp": True, "back": 0, "mod": 7}


def test_zero_by_zero_and_infinite_outputs_are_errors_as_in_terraform(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
        output "nan" { value = 0/0 }
        output "inf" { value = 1/0 }
    """
        },
    )
    summaries = sorted(d["summary"] for d in errors(document))
    assert summaries == ["Failed to serialize output value", "Operation failed"]
    assert document["outputs"]["inf"]["value"] is None


# -- the command lines ------------------------------------------------------------------------------


def _manage(args: list[str], env_extra: dict[str, str]):
    # A subprocess: these tests must not import Django themselves.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, **env_extra, "DJANGO_SETTINGS_MODULE": "policy_platform.settings"}
    return subprocess.run(
        [sys.executable, str(root / "manage.py"), "iac_evaluate", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_management_command_uses_the_platform_parse_cache_without_cache_dir(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "main.tf").write_text('output "a" { value = 1 }\n')
    cache = tmp_path / "cache"
    result = _manage([str(config), "--compact"], {"IAC_PARSE_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr
    assert '"a": {"value": 1' in result.stdout
    assert cache.is_dir() and any(path.is_file() for path in cache.rglob("*"))


def test_a_malformed_var_flag_is_named_by_both_command_lines(tmp_path):
    import io

    from policies_app.iac.cli import run

    (tmp_path / "main.tf").write_text('output "a" { value = 1 }\n')
    out, err = io.StringIO(), io.StringIO()
    assert run(str(tmp_path), ["rr"], [], None, True, out, err) == 2
    assert err.getvalue() == "error: invalid --var 'rr': expected NAME=VALUE (as terraform's -var)\n"
    assert out.getvalue() == ""
    result = _manage([str(tmp_path), "--var", "rr"], {"IAC_PARSE_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert "invalid --var 'rr': expected NAME=VALUE" in result.stderr
    assert "the configuration has errors" not in result.stderr
