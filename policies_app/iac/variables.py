"""Variables: where root module variables get their values, and each variable block's value.

Root values come from -var flags, -var-file files, and the files Terraform
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
from typing import Any

from policies_app.iac import syntax_nodes, type_constraints
from policies_app.iac.config_graph import Node
from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expansion import ModuleKey, module_address
from policies_app.iac.expressions import Diagnostic, EvalError, constant_scope, evaluate
from policies_app.iac.module_calls import declared_sensitive
from policies_app.iac.module_tree import Module
from policies_app.iac.records import Record
from policies_app.iac.values import UNKNOWN, is_unknown, mark, unmark, unmark_deep


class VariableValue(Record):
    """A value given for a root variable, and where it came from (for diagnostics)."""

    value: Any
    source: str  # "var" (-var / variables argument), or the file's path
    pos: syntax_nodes.Pos | None
    from_cli_string: bool  # a -var string: parsed according to the variable's type later

    _fields = ("value", "source", "pos", "from_cli_string")

    def __init__(
        self, value: Any, source: str, pos: syntax_nodes.Pos | None = None, from_cli_string: bool = False
    ) -> None:
        self.value = value
        self.source = source
        self.pos = pos
        self.from_cli_string = from_cli_string


def parse_var_flag(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` from a -var flag; raises ValueError naming the problem."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"invalid --var {text!r}: expected NAME=VALUE (as terraform's -var)")
    return name, value


def uses_literal_parsing(constraint: type_constraints.TypeConstraint | None) -> bool:
    return constraint is None or isinstance(constraint, type_constraints.PrimitiveType)


def cli_string_value(
    text: str,
    constraint: type_constraints.TypeConstraint | None,
    pos: syntax_nodes.Pos | None,
    parse_expression: Callable[[str, str], syntax_nodes.Expr] | None,
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
    path: str, parse_hcl_file: Callable[[str], syntax_nodes.File] | None
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
            values[name] = VariableValue(_json_value(value), path, syntax_nodes.Pos(path, 1))
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
    parse_hcl_file: Callable[[str], syntax_nodes.File] | None,
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


# --- evaluating variable blocks ------------------------------------------------------------------------

_NOT_SET = object()


def undeclared_value_diagnostics(
    given: dict[str, VariableValue], declared: dict[str, syntax_nodes.Block]
) -> list[Diagnostic]:
    """A value for a variable the root does not declare: an error from -var, a warning from a file."""
    problems = []
    for name, value in given.items():
        if name in declared:
            continue
        if value.source != "var":
            problems.append(
                Diagnostic.at(
                    "warning",
                    "Value for undeclared variable",
                    f"a variables file sets {name!r}, which is not declared",
                    value.pos,
                )
            )
        else:
            problems.append(
                Diagnostic(
                    "error",
                    "Value for undeclared variable",
                    f"a variable named {name!r} was assigned but is not declared",
                )
            )
    return problems


def type_text(expr: syntax_nodes.Expr) -> str | None:
    """The text of a variable's type expression, whatever node the loader made of it."""
    text = getattr(expr, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(expr, syntax_nodes.Literal) and isinstance(expr.value, str):
        return expr.value  # JSON syntax: "type": "list(string)"
    if isinstance(expr, syntax_nodes.Reference):
        return expr.name
    return None


class VariableEvaluator:
    """The value of each variable block of each module instance: the given value (a root's -var or
    file, a module call's argument) or the default, converted to its type, marked when sensitive,
    and validated."""

    def __init__(
        self,
        evaluation: EvaluationState,
        root_values: dict[str, VariableValue],
        parse_expression: Callable[[str, str], syntax_nodes.Expr] | None,
        marked_roots: frozenset[str] = frozenset(),
    ) -> None:
        self.evaluation = evaluation
        self.reporter = evaluation.reporter
        self.root_values = root_values
        self.parse_expression = parse_expression
        # Root variables marked sensitive as if declared so (the platform's sensitive variables, for the
        # pass that only finds where their values went: see configuration.sensitive_paths).
        self.marked_roots = marked_roots
        self._types: dict[tuple, type_constraints.TypeConstraint | None] = {}

    def type_of(self, module: Module, name: str) -> type_constraints.TypeConstraint | None:
        cache_key = (module.path, name)
        if cache_key in self._types:
            return self._types[cache_key]
        attribute = module.variables[name].body.attributes.get("type")
        constraint = None
        if attribute is not None:
            text = type_text(attribute.expr)
            if text is None:
                self.reporter.error(
                    "Invalid type specification",
                    f"variable {name!r}: the type is not a type expression",
                    attribute.pos,
                )
            else:
                try:
                    constraint = type_constraints.parse_type(text)
                except type_constraints.TypeSyntaxError as error:
                    self.reporter.error(
                        "Invalid type specification", f"variable {name!r}: {error}", attribute.pos
                    )
        self._types[cache_key] = constraint
        return constraint

    def _given(self, module: Module, name: str, key: ModuleKey) -> tuple[Any, syntax_nodes.Pos | None]:
        """The value given for the variable (or _NOT_SET), and where; raises EvalError for a -var
        string that does not read as the variable's type."""
        block = module.variables[name]
        if not module.path:
            given = self.root_values.get(name)
            if given is None:
                return _NOT_SET, block.pos
            raw = given.value
            if given.from_cli_string:
                raw = cli_string_value(raw, self.type_of(module, name), block.pos, self.parse_expression)
            return raw, given.pos or block.pos
        evaluation = self.evaluation
        parent = evaluation.modules[module.path[:-1]]
        argument = parent.calls[module.path[-1]].body.attributes.get(name)
        if argument is None:
            return _NOT_SET, block.pos
        parent_scope = evaluation.scope(parent, key[:-1])
        names = evaluation.instance_names.get(key, {})
        scope = parent_scope.child(names) if names else parent_scope
        return self.reporter.value(argument.expr, scope), argument.pos

    def evaluate(self, module: Module, node: Node, key: ModuleKey) -> Any:
        name = node[2]
        block = module.variables[name]
        reporter = self.reporter
        constraint = self.type_of(module, name)
        attributes = block.body.attributes
        try:
            raw, pos = self._given(module, name, key)
        except EvalError as error:
            reporter.error("Invalid value for variable", f"variable {name!r}: {error.detail}", block.pos)
            return UNKNOWN
        nullable = True
        if "nullable" in attributes:
            nullable = (
                unmark_deep(reporter.value(attributes["nullable"].expr, constant_scope(), True)) is not False
            )
        if raw is _NOT_SET or (raw is None and not nullable):
            if "default" in attributes:
                raw = reporter.value(attributes["default"].expr, constant_scope())
            elif raw is _NOT_SET:
                where = f"module.{module.path[-1]}: " if module.path else ""
                reporter.error(
                    "No value for required variable",
                    f"{where}the variable {name!r} is required, but no value was given",
                    block.pos,
                )
                return UNKNOWN
        # A module argument may carry marks (a parent's sensitive value): its own mark is kept; marks
        # inside it are kept unless the value has to be converted (then the whole value is sensitive).
        raw, marked = unmark(raw)
        if raw is None and not nullable:
            reporter.error("Required variable not set", f"the variable {name!r} must not be null", pos)
            return UNKNOWN
        value = raw
        if constraint is not None:
            plain = unmark_deep(raw)
            try:
                value = type_constraints.convert(plain, constraint)
            except type_constraints.ConversionError as error:
                reporter.error("Invalid value for variable", f"variable {name!r}: {error}", pos)
                return UNKNOWN
            if plain is not raw:
                same = _same_kind(value, plain) and type_constraints.values_equal(value, plain)
                value = raw if same else mark(value)
        if marked or declared_sensitive(reporter, block) or (not module.path and name in self.marked_roots):
            value = mark(value)
        self._validate(module, node, key, value)
        return value

    def _validate(self, module: Module, node: Node, key: ModuleKey, value: Any) -> None:
        blocks = [b for b in module.variables[node[2]].body.blocks if b.type == "validation"]
        if not blocks:
            return
        evaluation, reporter = self.evaluation, self.reporter
        # The validation reads var.NAME: make the value visible before the node is finished.
        evaluation.values.setdefault(node, {})[key] = value
        scope = evaluation.scope(module, key)
        for block in blocks:
            condition = block.body.attributes.get("condition")
            if condition is None:
                continue
            result = unmark_deep(reporter.value(condition.expr, scope))
            if result is False:
                message_attr = block.body.attributes.get("error_message")
                message = unmark_deep(reporter.value(message_attr.expr, scope, "")) if message_attr else ""
                prefix = module_address(key)
                where = f"{prefix}.var.{node[2]}" if prefix else f"var.{node[2]}"
                reporter.error("Invalid value for variable", f"{where}: {message}", condition.pos)
            elif result is not True and not is_unknown(result):
                reporter.error(
                    "Invalid validation condition",
                    f"var.{node[2]}: the condition must be a bool",
                    condition.pos,
                )
        del evaluation.values[node][key]


def _same_kind(a: Any, b: Any) -> bool:
    # A map type's value is a TfMap: still the same value as the dict it was converted from.
    return type(a) is type(b) or (isinstance(a, dict) and isinstance(b, dict))
