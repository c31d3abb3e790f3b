"""What an expression of a module instance sees: its names (var, local, module, resources, data),
``path`` and ``terraform``, and what functions need (directories, template rendering)."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.config_graph import Node
from policies_app.iac.evaluation_state import EvaluationState
from policies_app.iac.expansion import ModuleKey
from policies_app.iac.expressions import EVALUATOR, EvalError, Scope, constant_scope
from policies_app.iac.functions import FunctionContext
from policies_app.iac.module_calls import module_object, module_output
from policies_app.iac.module_tree import Module
from policies_app.iac.values import UNKNOWN


def instance_scope(evaluation: EvaluationState, module: Module, key: ModuleKey) -> Scope:
    names = {
        "path": {"module": module.relative_dir, "root": ".", "cwd": evaluation.cwd},
        "terraform": {"workspace": "default"},
    }
    return Scope(
        names,
        InstanceResolver(evaluation, module, key),
        function_context=function_context(evaluation, module),
        warnings=evaluation.reporter.warnings,
    )


def function_context(evaluation: EvaluationState, module: Module) -> FunctionContext:
    context = FunctionContext(
        module_dir=module.directory,
        source_root=evaluation.source_root,
        cwd=evaluation.cwd,
        plan_timestamp=evaluation.plan_timestamp,
    )

    def render_template(text: str, filename: str, variables: dict) -> Any:
        return _render_template(evaluation, text, filename, variables, context)

    context.render_template = render_template
    return context


def _render_template(
    evaluation: EvaluationState, text: str, filename: str, variables: dict, context: FunctionContext
) -> Any:
    from policies_app.iac.loader import parse_template

    try:
        template = parse_template(text, filename)
    except Exception as error:
        raise EvalError(
            "Invalid template",
            syntax_nodes.Pos(filename, getattr(error, "line", 0), getattr(error, "column", 0) or 0),
            getattr(error, "message", str(error)),
        ) from None
    # A template sees only the variables given to it (no var., local. or resource references).
    scope = Scope(
        dict(variables),
        constant_scope().resolver,
        warnings=evaluation.reporter.warnings,
        function_context=context,
    )
    return EVALUATOR.evaluate(template, scope)


class InstanceResolver:
    """Answers var/local/module/resource/data references for one module instance."""

    __slots__ = ("_evaluation", "_module", "_key", "_path")

    def __init__(self, evaluation: EvaluationState, module: Module, key: ModuleKey) -> None:
        self._evaluation = evaluation
        self._module = module
        self._key = key
        self._path = module.path

    def _get(self, node: Node, pos: syntax_nodes.Pos, summary: str, detail: str) -> Any:
        evaluation = self._evaluation
        values = evaluation.values.get(node)
        if values is not None:
            return values.get(self._key, UNKNOWN)
        if node not in evaluation.graph:
            raise EvalError(summary, pos, detail)
        return evaluation.value_of(node, self._key, pos)

    def variable(self, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._get(
            (self._path, "var", name),
            pos,
            "Reference to undeclared input variable",
            f"an input variable with the name {name!r} has not been declared",
        )

    def variable_type(self, name: str) -> Any:
        """The declared type of a variable of this module (None without one, or with no such variable)."""
        if name not in self._module.variables:
            return None
        return self._evaluation.variables.type_of(self._module, name)

    def local(self, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._get(
            (self._path, "local", name),
            pos,
            "Reference to undeclared local value",
            f"a local value with the name {name!r} has not been declared",
        )

    def resource(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._get(
            (self._path, "resource", f"{type_}.{name}"),
            pos,
            "Reference to undeclared resource",
            f'a managed resource "{type_}" "{name}" has not been declared',
        )

    def data(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._get(
            (self._path, "data", f"{type_}.{name}"),
            pos,
            "Reference to undeclared resource",
            f'a data resource "{type_}" "{name}" has not been declared',
        )

    def _call(self, name: str, pos: syntax_nodes.Pos) -> None:
        if name not in self._module.calls:
            raise EvalError(
                "Reference to undeclared module",
                pos,
                f"no module call named {name!r} is declared in this module",
            )

    def module(self, name: str, pos: syntax_nodes.Pos) -> Any:
        self._call(name, pos)
        return module_object(self._evaluation, self._module, self._key, name)

    def module_output(
        self, name: str, has_index: bool, index: Any, output: str, pos: syntax_nodes.Pos
    ) -> Any:
        self._call(name, pos)
        return module_output(self._evaluation, self._module, self._key, name, has_index, index, output, pos)
