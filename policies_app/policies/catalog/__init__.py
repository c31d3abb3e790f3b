"""The catalog of ready policies: each folder here is one entry, with its Rego module, its tests and
a JSON Schema for its parameters.

Installing an entry creates an ordinary policy (its module and its tests, which run on every save as
any policy's do) whose data holds the validated parameters under ``policyData``: the Rego reads them as
``data.policyData``, so a deployment cannot change them (a deployment's own policyData is
``input.policyData``)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jsonschema
from django.contrib.auth.models import AbstractBaseUser

from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy
from policies_app.policies.authoring import create_policy

CATALOG_DIR = Path(__file__).resolve().parent
PARAMETERS_KEY = "policyData"


@dataclass(frozen=True)
class CatalogEntry:
    slug: str
    title: str
    description: str
    schema: dict[str, Any]
    modules: tuple[tuple[str, str], ...]  # (filename, source): the policy and its tests

    def defaults(self) -> dict[str, Any]:
        return {
            name: spec["default"]
            for name, spec in self.schema.get("properties", {}).items()
            if "default" in spec
        }


@functools.cache
def catalog() -> dict[str, CatalogEntry]:
    """Every entry, by slug (read once per process)."""
    entries = {}
    for folder in sorted(path for path in CATALOG_DIR.iterdir() if (path / "schema.json").is_file()):
        schema = json.loads((folder / "schema.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        modules = tuple((path.name, path.read_text()) for path in sorted(folder.glob("*.rego")))
        entries[folder.name] = CatalogEntry(
            folder.name, schema["title"], schema["description"], schema, modules
        )
    return entries


def entry(slug: str) -> CatalogEntry:
    try:
        return catalog()[slug]
    except KeyError:
        raise Invalid(
            {"entry": [f"The catalog has no entry {slug!r}; it has {', '.join(catalog())}."]}
        ) from None


_formats = jsonschema.FormatChecker()


@_formats.checks("timezone", raises=(ZoneInfoNotFoundError, ValueError))
def _is_timezone(value: Any) -> bool:
    return not isinstance(value, str) or ZoneInfo(value) is not None


def validated_parameters(catalog_entry: CatalogEntry, parameters: Any) -> dict[str, Any]:
    """The parameters with the schema's defaults filled in; Invalid names each one that is wrong."""
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise Invalid({"parameters": ["The parameters must be a JSON object."]})
    filled = {**catalog_entry.defaults(), **parameters}
    validator = jsonschema.Draft202012Validator(catalog_entry.schema, format_checker=_formats)
    problems = sorted(validator.iter_errors(filled), key=lambda error: list(error.absolute_path))
    if problems:
        raise Invalid({"parameters": [_describe(problem) for problem in problems]})
    return filled


def problems_by_parameter(catalog_entry: CatalogEntry, parameters: dict[str, Any]) -> dict[str, list[str]]:
    """What is wrong with ``parameters`` (defaults filled in), by the top-level parameter it is about
    (``""`` for the whole object), so that a form can show each problem beside its field."""
    filled = {**catalog_entry.defaults(), **parameters}
    validator = jsonschema.Draft202012Validator(catalog_entry.schema, format_checker=_formats)
    problems: dict[str, list[str]] = {}
    for problem in validator.iter_errors(filled):
        if problem.absolute_path:
            parameter, rest = str(problem.absolute_path[0]), list(problem.absolute_path)[1:]
            described = _describe(problem).split(": ", 1)[1]
            message = (
                f"item {rest[0] + 1 if isinstance(rest[0], int) else rest[0]}: {described}"
                if rest
                else described
            )
            problems.setdefault(parameter, []).append(message)
        elif problem.validator == "required":
            for missing in sorted(set(problem.validator_value) - set(filled)):
                if "This parameter is required." not in problems.get(missing, []):
                    problems.setdefault(missing, []).append("This parameter is required.")
        else:
            problems.setdefault("", []).append(problem.message)
    return problems


def _describe(problem: jsonschema.ValidationError) -> str:
    where = ".".join(str(part) for part in problem.absolute_path)
    if problem.validator == "format":
        return f"{where}: {problem.instance!r} is not a known {problem.validator_value}"
    return f"{where}: {problem.message}" if where else problem.message


def install(
    slug: str,
    *,
    name: str,
    parameters: Any = None,
    description: str | None = None,
    user: AbstractBaseUser | None = None,
) -> ApprovalPolicy:
    """Create an ordinary policy from a catalog entry, with validated parameters."""
    chosen = entry(slug)
    data = {PARAMETERS_KEY: validated_parameters(chosen, parameters)}
    return create_policy(
        name=name,
        description=chosen.description if description is None else description,
        modules=[{"filename": filename, "source": source} for filename, source in chosen.modules],
        data=data,
        user=user,
        catalog_entry=slug,
    )
