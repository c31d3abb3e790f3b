"""Where Terraform's own documents say a value is sensitive, as paths (lists of keys and indexes) into them:
a plan's ``before_sensitive``/``after_sensitive`` trees, sensitive outputs and variables; a state's
sensitive outputs and attributes (a raw state's ``sensitive_attributes``, ``show -json``'s
``sensitive_values``), into the state itself or into the tfstate/v1 view policies are given
(iac/state_view.py). What is shown masks them: guards/masking.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from policies_app.iac.sensitive_paths import Path, tree_paths
from policies_app.iac.state_view import StateFormatError, module_key, parse_module_address


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _array(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def plan_paths(plan: Any, sensitive_variables: set[str]) -> list[Path]:
    """Paths into a ``terraform show -json`` plan of what Terraform marked sensitive, and of the values of
    variables declared sensitive or held so by the platform (``sensitive_variables``)."""
    plan = _object(plan)
    paths: list[Path] = []
    for section in ("resource_changes", "resource_drift"):
        for index, entry in enumerate(_array(plan.get(section))):
            change = _object(_object(entry).get("change"))
            for side in ("before", "after"):
                paths += tree_paths(change.get(f"{side}_sensitive"), [section, index, "change", side])
    for name, change in _object(plan.get("output_changes")).items():
        for side in ("before", "after"):
            paths += tree_paths(_object(change).get(f"{side}_sensitive"), ["output_changes", name, side])
    paths += _values_paths(plan.get("planned_values"), ["planned_values"])
    paths += _values_paths(_object(plan.get("prior_state")).get("values"), ["prior_state", "values"])
    declared = _object(_object(_object(plan.get("configuration")).get("root_module")).get("variables"))
    for name in _object(plan.get("variables")):
        if name in sensitive_variables or _object(declared.get(name)).get("sensitive") is True:
            paths.append(["variables", name, "value"])
    return paths


def _values_paths(values: Any, prefix: Path) -> list[Path]:
    """A ``show -json`` values object (a plan's planned values or prior state, a state): its sensitive
    outputs, and its resources' ``sensitive_values``."""
    values = _object(values)
    paths: list[Path] = [
        [*prefix, "outputs", name, "value"]
        for name, output in _object(values.get("outputs")).items()
        if _object(output).get("sensitive") is True
    ]
    for module_prefix, _, resource_index, resource in _show_json_resources(values.get("root_module"), []):
        base = [*prefix, "root_module", *module_prefix, "resources", resource_index, "values"]
        paths += tree_paths(resource.get("sensitive_values"), base)
    return paths


def _show_json_resources(module: Any, prefix: Path) -> Iterator[tuple[Path, str, int, dict[str, Any]]]:
    """(path to the module from root_module, its address, index in its list, resource) of every resource."""
    module = _object(module)
    address = module.get("address") if isinstance(module.get("address"), str) else ""
    for index, resource in enumerate(_array(module.get("resources"))):
        if isinstance(resource, dict):
            yield prefix, address, index, resource
    for index, child in enumerate(_array(module.get("child_modules"))):
        yield from _show_json_resources(child, [*prefix, "child_modules", index])


def _attribute_steps(path: Any) -> Path | None:
    """A raw state's sensitive attribute path (``[{"type": "get_attr", "value": "input"}, {"type": "index",
    "value": {"value": "k", "type": "string"}}]``) as keys and indexes; None when it cannot be read."""
    steps: Path = []
    for step in _array(path):
        step = _object(step)
        value = step.get("value")
        if step.get("type") == "get_attr" and isinstance(value, str):
            steps.append(value)
        elif step.get("type") == "index" and isinstance(_object(value).get("value"), (str, int)):
            steps.append(_object(value)["value"])
        else:
            # A step we cannot follow: everything from there on is held sensitive.
            return steps or None
    return steps or None


def _raw_instances(state: dict[str, Any]) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    for resource_index, resource in enumerate(_array(state.get("resources"))):
        if isinstance(resource, dict):
            for instance_index, instance in enumerate(_array(resource.get("instances"))):
                if isinstance(instance, dict):
                    yield resource_index, instance_index, resource, instance


def _raw_attribute_paths(instance: dict[str, Any]) -> list[Path]:
    paths = [_attribute_steps(path) for path in _array(instance.get("sensitive_attributes"))]
    return [path for path in paths if path]


def state_paths(state: Any) -> list[Path]:
    """Paths into a state as it was uploaded (raw v4 or ``show -json``) of what Terraform marked sensitive."""
    state = _object(state)
    if "format_version" in state and "version" not in state:
        return _values_paths(state.get("values"), ["values"])
    paths: list[Path] = [
        ["outputs", name, "value"]
        for name, output in _object(state.get("outputs")).items()
        if _object(output).get("sensitive") is True
    ]
    for resource_index, instance_index, _, instance in _raw_instances(state):
        base = ["resources", resource_index, "instances", instance_index, "attributes"]
        paths += [[*base, *steps] for steps in _raw_attribute_paths(instance)]
    return paths


def state_view_paths(state: Any) -> list[Path]:
    """Paths into the tfstate/v1 view of a state (iac/state_view.tfstate_view) of what Terraform marked
    sensitive: outputs, and attributes under each instance's ``attr``, in ``modules`` and, for the root
    module, in ``resources``/``data`` too. A state the view refuses has none."""
    state = _object(state)
    located: list[
        tuple[list[str], str, str, str, Any, list[Path]]
    ] = []  # module, mode, type, name, key, paths
    try:
        if "format_version" in state and "version" not in state:
            for _, address, _, resource in _show_json_resources(
                _object(state.get("values")).get("root_module"), []
            ):
                module = parse_module_address(address) if address else []
                located.append(
                    (
                        module,
                        str(resource.get("mode")),
                        str(resource.get("type")),
                        str(resource.get("name")),
                        resource.get("index"),
                        tree_paths(resource.get("sensitive_values"), []),
                    )
                )
            outputs = _object(_object(state.get("values")).get("outputs"))
        else:
            for _, _, resource, instance in _raw_instances(state):
                module_address = resource.get("module") if isinstance(resource.get("module"), str) else ""
                located.append(
                    (
                        parse_module_address(module_address) if module_address else [],
                        str(resource.get("mode")),
                        str(resource.get("type")),
                        str(resource.get("name")),
                        instance.get("index_key"),
                        _raw_attribute_paths(instance),
                    )
                )
            outputs = _object(state.get("outputs"))
    except StateFormatError:
        return []
    paths: list[Path] = []
    for name, output in outputs.items():
        if _object(output).get("sensitive") is True:
            paths += [["outputs", name, "value"], ["modules", "", "outputs", name, "value"]]
    for module, mode, resource_type, name, key, attribute_paths in located:
        section = "data" if mode == "data" else "resources"
        position = key if isinstance(key, (str, int)) and not isinstance(key, bool) else 0
        base = [section, resource_type, name, position, "attr"]
        for steps in attribute_paths:
            paths.append(["modules", module_key(module), *base, *steps])
            if not module:
                paths.append([*base, *steps])
    return paths
