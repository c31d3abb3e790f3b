"""Terraform state as Sentinel's ``tfstate/v1`` namespace, in plain JSON for Rego policies.

Two inputs are accepted and give the same view:

- a raw state file, format version 4 (``terraform.tfstate``: ``version``, ``serial``, ``lineage``,
  ``outputs``, ``resources[].instances[]``), what a backend stores and what we keep per environment;
- ``terraform show -json`` state output (``format_version``, ``values.root_module`` with recursive
  ``child_modules``), what a pipeline can send without access to the backend.

``normalise_state`` validates either one and turns it into a flat, format-free document;
``tfstate_view`` builds the namespace from that. The decisions Sentinel leaves open, made here once:

- **Module paths** are lists of module *instance* names, as Sentinel splits an address on the dots:
  ``module.a[0].module.b["x"]`` -> ``["a[0]", "b[\\"x\\"]"]``. The instance key is kept, exactly as
  Terraform prints it, because two instances of one module call are two different modules in the state.
  Every ancestor of a module that holds resources is listed too (``show -json`` lists them, a raw state
  does not), so both inputs give the same ``module_paths``; the root is ``[]`` and is always present.
- **``modules``** maps ``".".join(path)`` to the module namespace; the root's key is ``""``. A for_each
  key containing a dot makes that join ambiguous, so look modules up by ``path`` (the Rego library's
  ``tfstate.module(path)`` does) rather than by key when keys may hold dots.
- **Instances** of a resource with ``count``, or with neither count nor for_each, are a JSON *array*
  in index order, so ``resources.null_resource.foo[0]`` reads as in Sentinel (a single resource is
  index 0) and Rego iterates them 0, 1, 2... 10, 11 (an object keyed ``"0"``... would iterate
  ``"10"`` before ``"2"`` and could not be indexed with a number). Instances of a ``for_each``
  resource are an *object* keyed by the for_each key (``"dev"``), keys sorted; for_each keys are
  always strings, so the two never mix, and a state that mixes them is refused.
- **Gaps**: a counted resource whose state lacks some indexes (``terraform destroy -target`` or
  ``state rm`` of ``x[1]`` leaves ``x[0]`` and ``x[2]``) still has each instance at its own index,
  with ``null`` in each gap: ``x[2]`` is the instance at index 2, ``x[1]`` is ``null``, and the array's
  length is the highest index + 1, not the number of instances. Iterate with ``instance != null``
  (the Rego library's helpers skip the gaps). Padding is bounded: a state whose gaps add up to more
  than ``MAX_STATE_GAPS`` missing indexes is refused, so a small upload cannot expand into a huge view.
- Each instance is ``{attr, depends_on, id, tainted}``; ``id`` is ``attr.id`` when that is a string,
  else ``""``; ``depends_on`` is what Terraform recorded (absolute addresses such as
  ``module.app.terraform_data.node``), in the recorded order.
- **Outputs** (root module only, as Sentinel with Terraform 0.12+) are ``{sensitive, type, value}``.
  ``type`` is one of Sentinel's three: objects and maps -> ``"map"``; lists, sets and tuples ->
  ``"list"``; everything else (string, number, bool, null) -> ``"string"``. Unlike Terraform 0.11, the
  value is **not** turned into a string: a number stays a number, so ``to_number`` and comparisons work
  without conversion. ``terraform_type`` keeps Terraform's own type (``"number"``, ``["list", "string"]``)
  when the input recorded it, else ``null``.
- Sensitive values are *not* masked: the policy sees what the state holds, as env0's plan input does.
- A raw state stores a dynamically typed attribute (``terraform_data.input``, ``kubernetes_manifest``)
  wrapped as ``{"value": V, "type": T}``; ``show -json`` unwraps it. We unwrap a top-level attribute of
  exactly that shape when ``T`` is a valid Terraform type and ``V`` conforms to it, so both inputs agree.
  The one ambiguity: a real map attribute with exactly the keys ``type`` and ``value`` that happens to
  look like that is unwrapped too.
- A legacy ``attributes_flat`` instance (states upgraded from 0.11) is passed through as its flat map.

Why this module is long: about a tenth of it is the list of decisions above, and the rest applies
them: the two input formats read into one document and the view built from it must make the same
decisions, which is why they stay together.
"""

from __future__ import annotations

import json
from typing import Any

from policies_app.iac.plan_formats import json_kind

NORMALISED_MARKER = "normalised-state/1"
# The most missing count indexes (null padding, see "Gaps" above) a whole state may imply.
MAX_STATE_GAPS = 10_000


class StateFormatError(ValueError):
    """The document is not a state we understand; the message names the offending key."""


# ----------------------------------------------------------------------------------------- public API


def normalise_state(document: Any) -> dict:
    """Validate a raw v4 state or ``show -json`` state output and return a format-free document.

    The result: ``{"kind", "format" ("state-v4" | "show-json"), "terraform_version", "serial",
    "lineage", "outputs": {name: {sensitive, value, terraform_type}}, "module_paths": [[...]...],
    "instances": [{module_path, mode, type, name, key, attributes, depends_on, tainted}]}``, where
    ``key`` is the count index (an int), the for_each key (a string) or ``None`` (neither).
    A document that is already normalised is returned unchanged.
    """
    if not isinstance(document, dict):
        raise StateFormatError(f"a state must be a JSON object, got {json_kind(document)}")
    if document.get("kind") == NORMALISED_MARKER:
        return document
    if "resource_changes" in document or "planned_values" in document:
        raise StateFormatError("this is a plan (it has resource_changes/planned_values), not a state")
    if "version" in document:
        return _normalise_raw(document)
    if "format_version" in document:
        return _normalise_show_json(document)
    raise StateFormatError(
        "not a state: expected 'version' (a raw state file) or 'format_version' (terraform show -json)"
    )


def state_identity(document: dict) -> tuple[int | None, str | None]:
    """``(serial, lineage)`` of a raw or normalised state; ``(None, None)`` for ``show -json`` output.

    Serial and lineage let the platform tell a newer state of the same environment from a state of
    a different one; ``show -json`` drops both, so callers must accept ``None``.
    """
    if isinstance(document, dict) and document.get("kind") == NORMALISED_MARKER:
        return document["serial"], document["lineage"]
    normalised = normalise_state(document)
    return normalised["serial"], normalised["lineage"]


def tfstate_view(document: dict) -> dict:
    """The Sentinel ``tfstate/v1`` namespace for a raw, ``show -json`` or normalised state."""
    state = normalise_state(document)
    modules: dict[str, dict] = {}
    for path in state["module_paths"]:
        modules[module_key(path)] = {"path": list(path), "resources": {}, "data": {}, "outputs": {}}
    for (path_key, section, resource_type, name), keyed in _group_instances(state["instances"]).items():
        by_name = modules[path_key][section].setdefault(resource_type, {})
        by_name[name] = _arrange_instances({key: _sentinel_instance(i) for key, i in keyed.items()})
    root = modules[""]
    root["outputs"] = {
        name: {
            "sensitive": output["sensitive"],
            "type": sentinel_output_type(output["terraform_type"], output["value"]),
            "value": output["value"],
            "terraform_type": output["terraform_type"],
        }
        for name, output in sorted(state["outputs"].items())
    }
    return {
        "terraform_version": state["terraform_version"] or "",
        "module_paths": [list(path) for path in state["module_paths"]],
        "modules": modules,
        "path": [],
        "resources": root["resources"],
        "data": root["data"],
        "outputs": root["outputs"],
    }


def _group_instances(instances: list[dict]) -> dict[tuple[str, str, str, str], dict[Any, dict]]:
    """Instances by (module key, "resources" | "data", type, name), each group keyed by instance key."""
    groups: dict[tuple[str, str, str, str], dict[Any, dict]] = {}
    for instance in instances:
        section = "data" if instance["mode"] == "data" else "resources"
        group = (module_key(instance["module_path"]), section, instance["type"], instance["name"])
        groups.setdefault(group, {})[instance["key"]] = instance
    return groups


def _arrange_instances(keyed: dict[Any, Any]) -> list | dict:
    """A for_each group as an object sorted by key; any other as an array by index, ``None`` in gaps."""
    if any(isinstance(key, str) for key in keyed):
        return {key: keyed[key] for key in sorted(keyed)}
    indexes = {0 if key is None else key: value for key, value in keyed.items()}
    return [indexes.get(index) for index in range(max(indexes) + 1)]


def _sentinel_instance(instance: dict) -> dict:
    attributes = instance["attributes"]
    identifier = attributes.get("id") if isinstance(attributes, dict) else None
    return {
        "attr": attributes,
        "depends_on": list(instance["depends_on"]),
        "id": identifier if isinstance(identifier, str) else "",
        "tainted": instance["tainted"],
    }


def module_key(path: list[str]) -> str:
    """The key of a module in ``view["modules"]``: the path joined with dots, ``""`` for the root."""
    return ".".join(path)


def parse_module_address(address: str, where: str = "module") -> list[str]:
    """``module.a[0].module.b["x.y"]`` -> ``["a[0]", 'b["x.y"]']``; ``""`` -> ``[]`` (the root)."""
    path: list[str] = []
    position = 0
    while position < len(address):
        if path:
            if address[position] != ".":
                raise StateFormatError(f"{where}: malformed module address {address!r}")
            position += 1
        if not address.startswith("module.", position):
            raise StateFormatError(f"{where}: malformed module address {address!r}")
        position += len("module.")
        start = position
        while position < len(address) and (address[position].isalnum() or address[position] in "_-"):
            position += 1
        if position == start:
            raise StateFormatError(f"{where}: malformed module address {address!r}")
        if position < len(address) and address[position] == "[":
            position = _skip_index(address, position, where)
        path.append(address[start:position])
    return path


def sentinel_output_type(terraform_type: Any, value: Any) -> str:
    """Sentinel's output type (string, list or map) for a Terraform type, or from the value if untyped."""
    if isinstance(terraform_type, list) and terraform_type:
        kind = terraform_type[0]
        if kind in ("object", "map"):
            return "map"
        if kind in ("list", "set", "tuple"):
            return "list"
    if terraform_type in (None, "dynamic"):
        if isinstance(value, dict):
            return "map"
        if isinstance(value, list):
            return "list"
    return "string"


# ----------------------------------------------------------------------------------- raw state, v4


def _normalise_raw(document: dict) -> dict:
    version = document["version"]
    if version != 4 or isinstance(version, bool):
        raise StateFormatError(f"version: only state format version 4 is supported, got {version!r}")
    terraform_version = _optional(document, "terraform_version", str, "terraform_version")
    serial = _optional(document, "serial", int, "serial")
    lineage = _optional(document, "lineage", str, "lineage")
    outputs = {}
    for name, output in _optional(document, "outputs", dict, "outputs", default={}).items():
        where = f"outputs.{name}"
        _expect(output, dict, where)
        if "value" not in output:
            raise StateFormatError(f"{where}.value: missing")
        outputs[name] = {
            "sensitive": _optional(output, "sensitive", bool, f"{where}.sensitive", default=False),
            "value": output["value"],
            "terraform_type": output.get("type"),
        }
    instances = []
    resources = _optional(document, "resources", list, "resources", default=[])
    for position, resource in enumerate(resources):
        where = f"resources[{position}]"
        _expect(resource, dict, where)
        module_address = _optional(resource, "module", str, f"{where}.module", default="")
        module_path = parse_module_address(module_address, f"{where}.module")
        mode = _required(resource, "mode", str, where)
        if mode not in ("managed", "data"):
            raise StateFormatError(f"{where}.mode: expected 'managed' or 'data', got {mode!r}")
        resource_type = _required(resource, "type", str, where)
        name = _required(resource, "name", str, where)
        for number, instance in enumerate(_required(resource, "instances", list, where)):
            instance_where = f"{where}.instances[{number}]"
            _expect(instance, dict, instance_where)
            key = _instance_key(instance.get("index_key"), f"{instance_where}.index_key")
            if "attributes" in instance:
                attributes = _expect(instance["attributes"], dict, f"{instance_where}.attributes")
                attributes = {name: _unwrap_dynamic(value) for name, value in attributes.items()}
            elif "attributes_flat" in instance:
                attributes = _expect(instance["attributes_flat"], dict, f"{instance_where}.attributes_flat")
            else:
                raise StateFormatError(f"{instance_where}.attributes: missing")
            # 0.12-era states wrote "depends_on" per instance; later ones write "dependencies".
            dependencies_key = "dependencies" if "dependencies" in instance else "depends_on"
            depends_on = _string_list(instance.get(dependencies_key), f"{instance_where}.{dependencies_key}")
            status = _optional(instance, "status", str, f"{instance_where}.status", default="")
            instances.append(
                {
                    "module_path": module_path,
                    "mode": mode,
                    "type": resource_type,
                    "name": name,
                    "key": key,
                    "attributes": attributes,
                    "depends_on": depends_on,
                    "tainted": status == "tainted",
                }
            )
    return _finish("state-v4", terraform_version, serial, lineage, outputs, instances, extra_modules=[])


# ------------------------------------------------------------------------------ show -json output


def _normalise_show_json(document: dict) -> dict:
    _required(document, "format_version", str, "")
    terraform_version = _optional(document, "terraform_version", str, "terraform_version")
    values = _optional(document, "values", dict, "values", default={})
    outputs = {}
    for name, output in _optional(values, "outputs", dict, "values.outputs", default={}).items():
        where = f"values.outputs.{name}"
        _expect(output, dict, where)
        outputs[name] = {
            "sensitive": _optional(output, "sensitive", bool, f"{where}.sensitive", default=False),
            "value": output.get("value"),
            "terraform_type": output.get("type"),
        }
    instances: list[dict] = []
    module_paths: list[list[str]] = []
    if "root_module" in values:
        _walk_show_module(values["root_module"], [], "values.root_module", instances, module_paths)
    return _finish("show-json", terraform_version, None, None, outputs, instances, module_paths)


def _walk_show_module(
    module: Any, path: list[str], where: str, instances: list[dict], module_paths: list[list[str]]
) -> None:
    _expect(module, dict, where)
    module_paths.append(path)
    for position, resource in enumerate(
        _optional(module, "resources", list, f"{where}.resources", default=[])
    ):
        resource_where = f"{where}.resources[{position}]"
        _expect(resource, dict, resource_where)
        mode = _required(resource, "mode", str, resource_where)
        if mode not in ("managed", "data"):
            raise StateFormatError(f"{resource_where}.mode: expected 'managed' or 'data', got {mode!r}")
        values = _optional(resource, "values", dict, f"{resource_where}.values", default={})
        instances.append(
            {
                "module_path": path,
                "mode": mode,
                "type": _required(resource, "type", str, resource_where),
                "name": _required(resource, "name", str, resource_where),
                "key": _instance_key(resource.get("index"), f"{resource_where}.index"),
                "attributes": values,
                "depends_on": _string_list(resource.get("depends_on"), f"{resource_where}.depends_on"),
                "tainted": _optional(resource, "tainted", bool, f"{resource_where}.tainted", default=False),
            }
        )
    children = _optional(module, "child_modules", list, f"{where}.child_modules", default=[])
    for position, child in enumerate(children):
        child_where = f"{where}.child_modules[{position}]"
        _expect(child, dict, child_where)
        address = _required(child, "address", str, child_where)
        child_path = parse_module_address(address, f"{child_where}.address")
        if child_path[:-1] != path:
            raise StateFormatError(f"{child_where}.address: {address!r} is not a child of its parent module")
        _walk_show_module(child, child_path, child_where, instances, module_paths)


# --------------------------------------------------------------------------------------- helpers


def _finish(
    source_format: str,
    terraform_version: str | None,
    serial: int | None,
    lineage: str | None,
    outputs: dict,
    instances: list[dict],
    extra_modules: list[list[str]],
) -> dict:
    paths: set[tuple[str, ...]] = {()}
    for path in [*extra_modules, *(instance["module_path"] for instance in instances)]:
        # Ancestors count as present: show -json lists them, a raw state only implies them.
        for length in range(len(path) + 1):
            paths.add(tuple(path[:length]))
    seen: set[tuple] = set()
    for instance in instances:
        # No key and key 0 are the same place in the view's array, so they collide.
        key = 0 if instance["key"] is None else instance["key"]
        identity = (
            module_key(instance["module_path"]),
            instance["mode"],
            instance["type"],
            instance["name"],
            key,
        )
        if identity in seen:
            raise StateFormatError(f"duplicate resource instance {_describe(instance)}")
        seen.add(identity)
    _check_instance_keys(instances)
    return {
        "kind": NORMALISED_MARKER,
        "format": source_format,
        "terraform_version": terraform_version,
        "serial": serial,
        "lineage": lineage,
        "outputs": outputs,
        "module_paths": [list(path) for path in sorted(paths, key=lambda p: (len(p) > 0, p))],
        "instances": instances,
    }


def _check_instance_keys(instances: list[dict]) -> None:
    """Refuse a resource mixing count indexes and for_each keys, and gaps beyond ``MAX_STATE_GAPS``."""
    gaps = 0
    for keyed in _group_instances(instances).values():
        kinds = {isinstance(key, str) for key in keyed}
        if len(kinds) > 1:
            first = next(iter(keyed.values()))
            raise StateFormatError(f"{_describe(first)}: one resource mixes count indexes and for_each keys")
        if kinds == {False}:
            indexes = [0 if key is None else key for key in keyed]
            gaps += max(indexes) + 1 - len(indexes)
    if gaps > MAX_STATE_GAPS:
        raise StateFormatError(
            f"the state's count indexes leave {gaps} gaps (more than {MAX_STATE_GAPS}): not a state Terraform wrote"
        )


def _describe(instance: dict) -> str:
    prefix = "".join(f"module.{element}." for element in instance["module_path"])
    data = "data." if instance["mode"] == "data" else ""
    key = instance["key"]
    index = "" if key is None else f"[{json.dumps(key)}]"
    return f"{prefix}{data}{instance['type']}.{instance['name']}{index}"


def _instance_key(key: Any, where: str) -> int | str | None:
    """The key as Terraform wrote it: an int for count, a string for for_each, ``None`` for neither."""
    if key is None:
        return None
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise StateFormatError(f"{where}: expected a number or a string, got {json_kind(key)}")
    if isinstance(key, int) and key < 0:
        raise StateFormatError(f"{where}: a count index cannot be negative, got {key}")
    return key


def _skip_index(address: str, position: int, where: str) -> int:
    """Return the position just after the ``[...]`` starting at ``position`` (quoted keys may hold ']')."""
    position += 1
    if position < len(address) and address[position] == '"':
        position += 1
        while position < len(address) and address[position] != '"':
            position += 2 if address[position] == "\\" else 1
        position += 1
    else:
        while position < len(address) and address[position].isdigit():
            position += 1
    if position >= len(address) or address[position] != "]":
        raise StateFormatError(f"{where}: malformed module address {address!r}")
    return position + 1


def _unwrap_dynamic(value: Any) -> Any:
    if (
        isinstance(value, dict)
        and set(value) == {"value", "type"}
        and _is_type(value["type"])
        and _conforms(value["value"], value["type"])
    ):
        return value["value"]
    return value


_PRIMITIVES = ("string", "number", "bool", "dynamic")


def _is_type(candidate: Any) -> bool:
    if isinstance(candidate, str):
        return candidate in _PRIMITIVES
    if not isinstance(candidate, list) or len(candidate) < 2:
        return False
    kind, inner = candidate[0], candidate[1]
    if kind in ("list", "set", "map"):
        return len(candidate) == 2 and _is_type(inner)
    if kind == "tuple":
        return len(candidate) == 2 and isinstance(inner, list) and all(_is_type(t) for t in inner)
    if kind == "object":
        # A third element lists optional attributes (Terraform 1.3+ optional() in type constraints).
        return (
            len(candidate) in (2, 3) and isinstance(inner, dict) and all(_is_type(t) for t in inner.values())
        )
    return False


def _conforms(value: Any, type_: Any) -> bool:
    if value is None or type_ == "dynamic":
        return True
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_ == "bool":
        return isinstance(value, bool)
    kind, inner = type_[0], type_[1]
    if kind in ("list", "set"):
        return isinstance(value, list) and all(_conforms(item, inner) for item in value)
    if kind == "map":
        return isinstance(value, dict) and all(_conforms(item, inner) for item in value.values())
    if kind == "tuple":
        return (
            isinstance(value, list)
            and len(value) == len(inner)
            and all(_conforms(item, t) for item, t in zip(value, inner, strict=True))
        )
    if kind == "object":
        return (
            isinstance(value, dict)
            and set(value) == set(inner)
            and all(_conforms(value[name], t) for name, t in inner.items())
        )
    return False


def _string_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    _expect(value, list, where)
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise StateFormatError(f"{where}[{position}]: expected a string, got {json_kind(item)}")
    return list(value)


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", bool: "a boolean"}


def _expect(value: Any, expected: type, where: str) -> Any:
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if not ok:
        raise StateFormatError(f"{where}: expected {_TYPE_NAMES[expected]}, got {json_kind(value)}")
    return value


def _required(container: dict, key: str, expected: type, where: str) -> Any:
    path = f"{where}.{key}" if where else key
    if key not in container:
        raise StateFormatError(f"{path}: missing")
    return _expect(container[key], expected, path)


def _optional(container: dict, key: str, expected: type, where: str, default: Any = None) -> Any:
    value = container.get(key)
    if value is None:
        return default
    return _expect(value, expected, where)
