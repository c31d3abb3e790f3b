"""Where root module variables get their values: -var flags, -var-file files, and the files Terraform
loads by itself (terraform.tfvars, terraform.tfvars.json, *.auto.tfvars, *.auto.tfvars.json).

Precedence follows Terraform: later sources win, in this order: terraform.tfvars,
terraform.tfvars.json, *.auto.tfvars and *.auto.tfvars.json in lexical order of file name, then the
explicit -var-file files in the order given, then -var values. (Terraform interleaves -var and
-var-file in command-line order; our API receives them separately, so -var always wins.)
TF_VAR_ environment variables are not read: an evaluation must not depend on the server's environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policies_app.iac import ast, types
from policies_app.iac.expressions import Diagnostic, EvalError, constant_scope, evaluate


@dataclass
class VariableValue:
    """A value given for a root variable, and where it came from (for diagnostics)."""

    value: Any
    source: str  # "var" (-var / variables argument), or the file's path
    pos: ast.Pos | None = None
    from_cli_string: bool = False  # a -var string: parsed according to the variable's type later


def parse_var_flag(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` from a -var flag; raises ValueError naming the problem."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"invalid --var {text!r}: expected NAME=VALUE (as terraform's -var)")
    return name, value


def uses_literal_parsing(constraint: types.TypeConstraint | None) -> bool:
    return constraint is None or isinstance(constraint, types.PrimitiveType)


def cli_string_value(
    text: str,
    constraint: types.TypeConstraint | None,
    pos: ast.Pos | None,
    parse_expression: Callable[[str, str], ast.Expr] | None,
) -> Any:
    """The value of a -var string for a variable of this type (raises EvalError)."""
    if uses_literal_parsing(constraint):
        return str(text)
    if parse_expression is None:
        raise EvalError("Invalid value for variable", pos, "no HCL expression parser is available")
    try:
        expr = parse_expression(str(text), "<value for var>")
    except Exception as error:  # the loader's syntax error, whatever its class
        raise EvalError(
            "Invalid value for variable", pos, f"the -var value is not a valid expression: {error}"
        ) from None
    return evaluate(expr, constant_scope())


def _auto_files(root_dir: str) -> list[str]:
    try:
        names = os.listdir(root_dir)
    except OSError:
        return []
    found = [n for n in ("terraform.tfvars", "terraform.tfvars.json") if n in names]
    found += sorted(n for n in names if n.endswith(".auto.tfvars") or n.endswith(".auto.tfvars.json"))
    return [os.path.join(root_dir, n) for n in found]


def load_var_file(
    path: str, parse_hcl_file: Callable[[str], ast.File] | None
) -> tuple[dict[str, VariableValue], list[Diagnostic]]:
    """The assignments of one .tfvars (HCL, attributes only) or .tfvars.json file."""
    values: dict[str, VariableValue] = {}
    diagnostics: list[Diagnostic] = []
    if path.endswith(".json"):
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
        except json.JSONDecodeError as error:
            return {}, [
                Diagnostic("error", "Invalid variables file", error.msg, path, error.lineno, error.colno)
            ]
        except (OSError, ValueError) as error:
            return {}, [Diagnostic("error", "Failed to read variables file", str(error), path, None)]
        if not isinstance(document, dict):
            return {}, [
                Diagnostic(
                    "error",
                    "Invalid variables file",
                    "the root of a .tfvars.json file must be an object",
                    path,
                    1,
                )
            ]
        for name, value in document.items():
            values[name] = VariableValue(_json_value(value), path, ast.Pos(path, 1))
        return values, diagnostics
    if parse_hcl_file is None:
        return {}, [
            Diagnostic("error", "Failed to read variables file", "no HCL parser is available", path, None)
        ]
    try:
        parsed = parse_hcl_file(path)
    except OSError as error:
        return {}, [Diagnostic("error", "Failed to read variables file", str(error), path, None)]
    except Exception as error:  # the loader's ConfigSyntaxError
        return {}, [
            Diagnostic(
                "error",
                "Invalid variables file",
                getattr(error, "message", str(error)),
                getattr(error, "file", path),
                getattr(error, "line", None),
                getattr(error, "column", None),
            )
        ]
    for block in parsed.body.blocks:
        diagnostics.append(
            Diagnostic.at(
                "error",
                "Unexpected block in variables file",
                f"blocks ({block.type}) are not allowed in a variables file",
                block.pos,
            )
        )
    scope = constant_scope()
    for name, attribute in parsed.body.attributes.items():
        try:
            values[name] = VariableValue(evaluate(attribute.expr, scope), path, attribute.pos)
        except EvalError as error:
            diagnostics.append(Diagnostic.from_error(error))
    return values, diagnostics


def _json_value(value: Any) -> Any:
    # JSON numbers that are whole are Terraform whole numbers (values.py: int).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def collect_root_values(
    root_dir: str,
    var_files: list[str] | tuple[str, ...],
    variables: dict[str, Any] | None,
    parse_hcl_file: Callable[[str], ast.File] | None,
) -> tuple[dict[str, VariableValue], list[Diagnostic]]:
    """Every value given for a root variable, the winner per name by Terraform's precedence.

    ``variables`` values that are ``str`` are treated as -var strings: read literally for primitive
    types (and no type), as an HCL expression for any other type, as Terraform does; other values are
    used as they are.
    """
    result: dict[str, VariableValue] = {}
    diagnostics: list[Diagnostic] = []
    for path in [*_auto_files(root_dir), *var_files]:
        values, problems = load_var_file(path, parse_hcl_file)
        result.update(values)
        diagnostics.extend(problems)
    for name, value in (variables or {}).items():
        result[name] = VariableValue(value, "var", None, from_cli_string=isinstance(value, str))
    return result, diagnostics
