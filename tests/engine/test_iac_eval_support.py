"""Shared helpers of the test_iac_eval* files (framework-free: no Django; holds no tests itself)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from policies_app.iac.configuration import ConfigurationEvaluator, evaluate_configuration
from policies_app.iac.expressions import Scope, evaluate
from policies_app.iac.loader import parse_expression
from policies_app.iac.values import UNKNOWN


class FakeResolver:
    """Resolves var.NAME and local.NAME from dicts; resources from a dict keyed "TYPE.NAME"."""

    def __init__(
        self, variables: dict | None = None, locals_: dict | None = None, resources: dict | None = None
    ) -> None:
        self.variables = variables or {}
        self.locals = locals_ or {}
        self.resources = resources or {}

    def variable(self, name, pos):
        return self.variables[name]

    def local(self, name, pos):
        return self.locals[name]

    def module(self, name, pos):
        return UNKNOWN

    def resource(self, type_, name, pos):
        return self.resources[f"{type_}.{name}"]

    def data(self, type_, name, pos):
        return UNKNOWN


def value_of(text: str, names: dict[str, Any] | None = None, **resolver: Any) -> Any:
    """Evaluate one expression with the given bound names and resolver contents."""
    scope = Scope(dict(names or {}), FakeResolver(**resolver))
    return evaluate(parse_expression(text, "test.tf"), scope)


def write_config(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return directory


def evaluate_files(tmp_path: Path, files: dict[str, str], **kwargs: Any) -> dict:
    return evaluate_configuration(str(write_config(tmp_path, files)), **kwargs)


def evaluator_for(tmp_path: Path, files: dict[str, str], **kwargs: Any) -> ConfigurationEvaluator:
    return ConfigurationEvaluator(str(write_config(tmp_path, files)), **kwargs)


def outputs(document: dict) -> dict[str, Any]:
    return {name: output["value"] for name, output in document["outputs"].items()}


def resources_by_address(document: dict) -> dict[str, dict]:
    return {resource["address"]: resource for resource in document["resources"]}


def errors(document: dict) -> list[dict]:
    return [d for d in document["diagnostics"] if d["severity"] == "error"]


def error_text(document: dict) -> str:
    return "\n".join(f"{d['summary']}: {d['detail']}" for d in errors(document))
