"""Masking: the one place that says how sensitive values are shown. Policies get the real values; every
page, API answer, admin view, audit entry, replay and try-it result that shows a policy input, a state or
a policy's messages shows them through these functions, with each sensitive value replaced by ``MASK``.

What is sensitive in a policy input (``sensitive_paths_of``):

- the variables the environment names sensitive, per kind (``{"environment": [names], "terraform":
  [names]}``; an evaluation keeps the names that held when it ran): a kind's values are masked with that
  kind's list, never another's;
- in the configuration view: outputs declared sensitive, what the view's own ``sensitive`` trees mark
  (Terraform's marks), and every value derived from a sensitive variable, tracked as Terraform tracks
  marks (iac/sensitive_paths.py) and kept beside the input as paths (``Evaluation.sensitive_paths``);
- in the plan: what Terraform marks (``before_sensitive``/``after_sensitive``, sensitive outputs and
  variables: guards/sensitive_marks.py);
- in the state view: sensitive outputs, and attributes Terraform marked (kept as paths, like the
  configuration's).

Messages (``scrub``): a policy may print any value it sees. Before a message is stored (decisions,
replay results) or answered (try-it), every known sensitive value in it, the strings found at those
paths, is replaced by the mask. Strings shorter than ``SCRUBBED_MIN_LENGTH`` are not looked for: masking
every "a" or "80" would make messages unreadable, and so short a value is no secret worth the name.
The shown documents are scrubbed the same way, for what the paths cannot say (evaluations recorded
before the paths were kept, a diagnostic quoting a value)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policies_app.guards.sensitive_marks import plan_paths, state_paths, state_view_paths
from policies_app.iac.sensitive_paths import Path, tree_paths

if TYPE_CHECKING:
    from policies_app.models import Environment, Evaluation

# What an API or a page shows instead of a sensitive value; sending it back keeps the stored value.
MASK = "********"
SCRUBBED_MIN_LENGTH = 4


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


@dataclass(frozen=True)
class Sensitivity:
    """What is sensitive in a policy input beyond what the input says itself: the sensitive variable names
    by kind, and paths into the input (values derived from them, state attributes Terraform marked)."""

    variables: dict[str, list[str]] = field(default_factory=dict)
    paths: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, evaluation: Evaluation) -> Sensitivity:
        return cls(evaluation.sensitive_variables or {}, evaluation.sensitive_paths or [])


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def sensitive_paths_of(document: Any, sensitivity: Sensitivity) -> list[Path]:
    """Every path into a policy input whose value is sensitive (see the module docstring)."""
    document = _object(document)
    paths: list[Path] = [list(path) for path in sensitivity.paths]
    for kind, values in _object(document.get("variables")).items():
        names = set(sensitivity.variables.get(kind, []))
        paths += [["variables", kind, name] for name in _object(values) if name in names]
    configuration = _object(document.get("configuration"))
    for name, output in _object(configuration.get("outputs")).items():
        if _object(output).get("sensitive") is True:
            paths.append(["configuration", "outputs", name, "value"])
    resources = configuration.get("resources")
    for index, resource in enumerate(resources if isinstance(resources, list) else []):
        paths += tree_paths(
            _object(resource).get("sensitive"), ["configuration", "resources", index, "values"]
        )
    terraform = set(sensitivity.variables.get("terraform", []))
    paths += [["plan", *path] for path in plan_paths(document.get("plan"), terraform)]
    state = _object(document.get("state"))
    for name, output in _object(state.get("outputs")).items():
        if _object(output).get("sensitive") is True:
            paths.append(["state", "outputs", name, "value"])
    for key, module in _object(state.get("modules")).items():
        for name, output in _object(_object(module).get("outputs")).items():
            if _object(output).get("sensitive") is True:
                paths.append(["state", "modules", key, "outputs", name, "value"])
    return paths


def _step(node: Any, key: str | int) -> tuple[bool, Any]:
    """(found, the child) of a dict or list; a state's dynamically typed attribute (``{"value", "type"}``)
    is looked into, as Terraform's paths address its value."""
    if isinstance(node, dict):
        if key in node:
            return True, node
        wrapped = node.get("value")
        if set(node) == {"value", "type"} and isinstance(wrapped, dict) and key in wrapped:
            return True, wrapped
        return False, None
    if isinstance(node, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(node):
        return True, node
    return False, None


def _mask_path(document: Any, path: Path) -> None:
    """Replace the value at ``path`` (a null stays null: there is nothing to hide) in place."""
    if not path:
        return
    node = document
    for key in path[:-1]:
        found, parent = _step(node, key)
        if not found:
            return
        node = parent[key]
    found, parent = _step(node, path[-1])
    if found and parent[path[-1]] is not None:
        parent[path[-1]] = MASK


def values_at(document: Any, paths: Iterable[Path]) -> set[str]:
    """The strings found at (and under) ``paths``: the sensitive values messages must not show."""
    found: set[str] = set()

    def collect(value: Any) -> None:
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, dict):
            for inner in value.values():
                collect(inner)
        elif isinstance(value, list):
            for inner in value:
                collect(inner)

    for path in paths:
        node: Any = document
        for key in path:
            present, parent = _step(node, key)
            if not present:
                node = None
                break
            node = parent[key]
        collect(node)
    return found


def secrets_of(document: Any, sensitivity: Sensitivity) -> frozenset[str]:
    """The sensitive strings of a policy input, and how they read inside JSON text (a policy may print a
    whole object), long enough to be looked for."""
    values = values_at(document, sensitive_paths_of(document, sensitivity))
    spelled = {spelling for value in values for spelling in (value, json.dumps(value)[1:-1])}
    return frozenset(value for value in spelled if len(value) >= SCRUBBED_MIN_LENGTH)


def scrub(text: str, secrets: frozenset[str]) -> str:
    """``text`` with every known sensitive value in it replaced by the mask (longest first, so that a
    value containing another is masked whole)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrubbed(value: Any, secrets: frozenset[str]) -> Any:
    """Every string in a JSON-like value (messages by rule, outcomes, a replay's result) scrubbed."""
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {key: scrubbed(inner, secrets) for key, inner in value.items()}
    if isinstance(value, list):
        return [scrubbed(inner, secrets) for inner in value]
    return value


def shown_document(document: Any, sensitivity: Sensitivity) -> Any:
    """A policy input as people may see it: every sensitive value masked, and no string left holding
    one."""
    if not isinstance(document, dict):
        return document
    paths = sensitive_paths_of(document, sensitivity)
    if not paths:
        return document
    secrets = secrets_of(document, sensitivity)
    shown = copy.deepcopy(document)
    for path in paths:
        _mask_path(shown, path)
    return scrubbed(shown, secrets)


def masked_input(document: Any, sensitive_variables: dict[str, list[str]]) -> Any:
    """A policy input as shown, knowing only its sensitive variable names (an input pasted elsewhere)."""
    return shown_document(document, Sensitivity(sensitive_variables or {}))


def shown_input_text(text: str, sensitivity: Sensitivity) -> str:
    """A policy input's text (as the engine saw it) as the API and the pages show it to anyone who may see
    the deployment: the exact bytes when nothing in it is sensitive, else the document with its sensitive
    values masked."""
    document = json.loads(text)
    shown = shown_document(document, sensitivity)
    return text if shown is document else json.dumps(shown)


def shown_plan(plan: Any, sensitive_variables: dict[str, list[str]]) -> Any:
    """A plan as uploaded, as people may see it: what Terraform marked sensitive, and the values of the
    environment's sensitive Terraform variables, masked, and no string left holding one of them (a
    resource attribute set from such a variable Terraform did not mark)."""
    shown = copy.deepcopy(plan)
    for path in plan_paths(plan, set(sensitive_variables.get("terraform", []))):
        _mask_path(shown, path)
    return scrubbed(shown, plan_secrets(plan, sensitive_variables))


def shown_state(state: Any) -> Any:
    """A state as uploaded, as people may see it: what Terraform marked sensitive masked."""
    shown = copy.deepcopy(state)
    for path in state_paths(state):
        _mask_path(shown, path)
    return shown


def shown_state_view(view: Any, state: Any) -> Any:
    """The tfstate/v1 view of ``state`` as people may see it."""
    shown = copy.deepcopy(view)
    for path in state_view_paths(state):
        _mask_path(shown, path)
    return shown


def plan_secrets(
    plan: Any, sensitive_variables: dict[str, list[str]], variables: dict[str, Any] | None = None
) -> frozenset[str]:
    """What a shown plan (its summary, the ``terraform show`` text sent beside it) must never contain:
    the values Terraform marked sensitive in it, the values of the sensitive Terraform variables it holds,
    and the values of the sensitive variables (``variables`` by kind, as a deployment or environment keeps
    them), as they read alone and inside JSON text, long enough to be looked for."""
    values = values_at(plan, plan_paths(plan, set(sensitive_variables.get("terraform", []))))
    for kind, held in _object(variables).items():
        names = set(sensitive_variables.get(kind, []))
        values |= values_at(held, [[name] for name in _object(held) if name in names])
    spelled = {spelling for value in values for spelling in (value, json.dumps(value)[1:-1])}
    return frozenset(value for value in spelled if len(value) >= SCRUBBED_MIN_LENGTH and value != MASK)
