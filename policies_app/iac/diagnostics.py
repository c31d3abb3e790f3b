"""The diagnostics of one evaluation of a configuration: each said once, in the order found."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes
from policies_app.iac.expressions import EVALUATOR, Diagnostic, EvalError, Scope
from policies_app.iac.values import UNKNOWN


class Reporter:
    """Collects errors and warnings; ``warnings`` is the list that functions append theirs to while a
    node is evaluated (``flush`` moves them here once the node is done)."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self._seen: set[tuple] = set()

    def add(self, diagnostic: Diagnostic) -> None:
        key = (
            diagnostic.severity,
            diagnostic.summary,
            diagnostic.detail,
            diagnostic.file,
            diagnostic.line,
            diagnostic.column,
        )
        if key not in self._seen:
            self._seen.add(key)
            self.diagnostics.append(diagnostic)

    def error(self, summary: str, detail: str, pos: syntax_nodes.Pos | None) -> None:
        self.add(Diagnostic.at("error", summary, detail, pos))

    def warning(self, summary: str, detail: str, pos: syntax_nodes.Pos | None) -> None:
        self.add(Diagnostic.at("warning", summary, detail, pos))

    def value(self, expr: syntax_nodes.Expr, scope: Scope, default: Any = UNKNOWN) -> Any:
        """The expression's value, or ``default`` after recording its error."""
        try:
            return EVALUATOR.evaluate(expr, scope)
        except EvalError as error:
            self.add(Diagnostic.from_error(error))
            return default

    def flush(self) -> None:
        for warning in self.warnings:
            self.add(warning)
        self.warnings.clear()
