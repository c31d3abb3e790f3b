"""Masking: the one place that says how sensitive variables are shown. Policies get the real values; every
page, API answer, admin view and audit entry that shows variables, or a policy input holding them, shows
them through these functions, with each sensitive value replaced by ``MASK``.

An environment names its sensitive variables per kind (``{"environment": [names], "terraform": [names]}``)
and an evaluation keeps the names that held when it ran: a kind's values are masked with that kind's
list, never another's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policies_app.models import Environment

# What an API or a page shows instead of a sensitive value; sending it back keeps the stored value.
MASK = "********"


def masked(values: dict[str, Any], sensitive: set[str] | list[str]) -> dict[str, Any]:
    """The variables as people may see them: sensitive values replaced by the mask."""
    sensitive = set(sensitive)
    return {name: MASK if name in sensitive else value for name, value in values.items()}


def masked_variables(variables: dict[str, Any], sensitive_variables: dict[str, list[str]]) -> dict[str, Any]:
    """Variables by kind (``{"environment": {...}, "terraform": {...}}``), each kind masked with its own
    list of sensitive names."""
    return {
        kind: masked(values, sensitive_variables.get(kind, [])) if isinstance(values, dict) else values
        for kind, values in variables.items()
    }


def environment_variables_shown(environment: Environment) -> dict[str, dict[str, Any]]:
    """An environment's variables by kind, as people may see them."""
    return masked_variables(
        {"environment": environment.environment_variables, "terraform": environment.terraform_variables},
        environment.sensitive_variables,
    )


def masked_input(document: Any, sensitive_variables: dict[str, list[str]]) -> Any:
    """A policy input with its sensitive variables masked, for display (policies got the real values)."""
    variables = document.get("variables") if isinstance(document, dict) else None
    if not isinstance(variables, dict) or not sensitive_variables:
        return document
    return {**document, "variables": masked_variables(variables, sensitive_variables)}
