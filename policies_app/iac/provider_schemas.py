"""Provider schemas: which attributes of a resource type exist, of which type, and which are computed.

Without the provider's binary we cannot know them; a template may carry the output of ``terraform
providers schema -json`` (the file ``providers-schema.json`` in its root module's directory, or handed
to evaluate_configuration as the parsed document). With a schema, a resource instance (or data source)
is planned as terraform plans it: each configured argument converted to its attribute's type, an
attribute left null or unset unknown when computed and null otherwise, a sensitive attribute
sensitive, nested blocks as lists (or one object), and an argument, block or attribute reference the
schema does not know is an error.

Without a schema (resources.py): a provider resource's attribute that the configuration leaves null or
unset, and anything inside a nested block that it does not set, reads as unknown, never as an error;
a data source is unknown as a whole until it is read. The built-in ``terraform`` provider's schema
(terraform_data, terraform_remote_state) ships with terraform, and so with us (BUILTIN_SCHEMA).
"""

from __future__ import annotations

import json
import os
from typing import Any

from policies_app.iac import type_constraints
from policies_app.iac.records import FrozenRecord, Record

SCHEMA_FILE_NAME = "providers-schema.json"


class ProviderSchemaError(ValueError):
    """A provider schema document that is not the output of ``terraform providers schema -json``."""


_set = object.__setattr__


class Attribute(FrozenRecord):
    """A provider schema's attribute: its type and whether it is required, optional, computed."""

    type: type_constraints.TypeConstraint
    required: bool
    optional: bool
    computed: bool
    sensitive: bool
    nested: NestedAttributes | None  # an attribute of nested attributes (protocol 6)

    __slots__ = ("type", "required", "optional", "computed", "sensitive", "nested")

    def __init__(
        self,
        type: type_constraints.TypeConstraint,
        required: bool = False,
        optional: bool = False,
        computed: bool = False,
        sensitive: bool = False,
        nested: NestedAttributes | None = None,
    ) -> None:
        _set(self, "type", type)
        _set(self, "required", required)
        _set(self, "optional", optional)
        _set(self, "computed", computed)
        _set(self, "sensitive", sensitive)
        _set(self, "nested", nested)


class NestedAttributes(FrozenRecord):
    """Attributes nested in an attribute (schema protocol 6), with their nesting mode."""

    nesting: str  # single, list, set, map
    attributes: dict[str, Attribute]

    __slots__ = ("nesting", "attributes")

    def __init__(self, nesting: str, attributes: dict[str, Attribute]) -> None:
        _set(self, "nesting", nesting)
        _set(self, "attributes", attributes)


class Block(FrozenRecord):
    """A resource's (or nested block's) attributes and blocks."""

    attributes: dict[str, Attribute]
    blocks: dict[str, NestedBlock]

    __slots__ = ("attributes", "blocks")

    def __init__(
        self, attributes: dict[str, Attribute] | None = None, blocks: dict[str, NestedBlock] | None = None
    ) -> None:
        _set(self, "attributes", {} if attributes is None else attributes)
        _set(self, "blocks", {} if blocks is None else blocks)


class NestedBlock(FrozenRecord):
    """A block nested in a resource, with its nesting mode and item bounds."""

    nesting: str  # single, group, list, set, map
    block: Block
    min_items: int

    __slots__ = ("nesting", "block", "min_items")

    def __init__(self, nesting: str, block: Block, min_items: int = 0) -> None:
        _set(self, "nesting", nesting)
        _set(self, "block", block)
        _set(self, "min_items", min_items)


class ProviderSchemas(Record):
    """The schemas of every resource type and data source of the providers a document describes."""

    resources: dict[str, Block]
    data_sources: dict[str, Block]

    _fields = ("resources", "data_sources")

    def __init__(
        self, resources: dict[str, Block] | None = None, data_sources: dict[str, Block] | None = None
    ) -> None:
        self.resources = dict() if resources is None else resources
        self.data_sources = dict() if data_sources is None else data_sources

    def schema_of(self, kind: str, resource_type: str) -> Block | None:
        return (self.resources if kind == "resource" else self.data_sources).get(resource_type)

    def merged_with(self, other: ProviderSchemas) -> ProviderSchemas:
        return ProviderSchemas(
            {**self.resources, **other.resources}, {**self.data_sources, **other.data_sources}
        )


def parse_provider_schemas(document: Any) -> ProviderSchemas:
    """The schemas of a ``terraform providers schema -json`` document; ProviderSchemaError names what
    is wrong with it."""
    if not isinstance(document, dict) or not isinstance(document.get("provider_schemas"), dict):
        raise ProviderSchemaError('the document has no "provider_schemas" object')
    schemas = ProviderSchemas()
    for provider, entry in sorted(document["provider_schemas"].items()):
        if not isinstance(entry, dict):
            raise ProviderSchemaError(f"provider {provider}: the schema is not an object")
        for key, table in (
            ("resource_schemas", schemas.resources),
            ("data_source_schemas", schemas.data_sources),
        ):
            for resource_type, schema in (entry.get(key) or {}).items():
                where = f"provider {provider}, {resource_type}"
                if not isinstance(schema, dict) or not isinstance(schema.get("block"), dict):
                    raise ProviderSchemaError(f'{where}: no "block"')
                table[resource_type] = _block(schema["block"], where)
    return schemas


def load_provider_schemas(root_dir: str, document: Any = None) -> tuple[ProviderSchemas, str | None]:
    """The built-in provider's schemas plus the template's (``document``, else the schema file in the
    root module's directory), and the problem with the template's, if any."""
    path = os.path.join(root_dir, SCHEMA_FILE_NAME)
    if document is None:
        if not os.path.isfile(path):
            return BUILTIN_SCHEMAS, None
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
        except (OSError, ValueError) as error:
            return BUILTIN_SCHEMAS, f"{SCHEMA_FILE_NAME}: {error}"
    try:
        return BUILTIN_SCHEMAS.merged_with(parse_provider_schemas(document)), None
    except ProviderSchemaError as error:
        return BUILTIN_SCHEMAS, f"{SCHEMA_FILE_NAME}: {error}"


def _block(raw: dict, where: str) -> Block:
    attributes = {
        name: _attribute(spec, f"{where}.{name}") for name, spec in (raw.get("attributes") or {}).items()
    }
    blocks = {}
    for name, spec in (raw.get("block_types") or {}).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("block"), dict):
            raise ProviderSchemaError(f"{where}.{name}: a block type needs a block")
        blocks[name] = NestedBlock(
            spec.get("nesting_mode", "list"),
            _block(spec["block"], f"{where}.{name}"),
            spec.get("min_items", 0),
        )
    return Block(attributes, blocks)


def _attribute(spec: Any, where: str) -> Attribute:
    if not isinstance(spec, dict):
        raise ProviderSchemaError(f"{where}: an attribute must be an object")
    nested = None
    if isinstance(spec.get("nested_type"), dict):
        raw = spec["nested_type"]
        inner = {n: _attribute(s, f"{where}.{n}") for n, s in (raw.get("attributes") or {}).items()}
        nested = NestedAttributes(raw.get("nesting_mode", "single"), inner)
        constraint: type_constraints.TypeConstraint = type_constraints.ANY
    elif "type" in spec:
        constraint = type_from_json(spec["type"], where)
    else:
        raise ProviderSchemaError(f'{where}: an attribute needs a "type" or a "nested_type"')
    return Attribute(
        constraint,
        bool(spec.get("required")),
        bool(spec.get("optional")),
        bool(spec.get("computed")),
        bool(spec.get("sensitive")),
        nested,
    )


def type_from_json(raw: Any, where: str = "type") -> type_constraints.TypeConstraint:
    """A type in cty's JSON form: "string", ["list", "string"], ["object", {"a": "number"}], ..."""
    primitives = {
        "string": type_constraints.STRING,
        "number": type_constraints.NUMBER,
        "bool": type_constraints.BOOL,
        "dynamic": type_constraints.ANY,
    }
    if isinstance(raw, str) and raw in primitives:
        return primitives[raw]
    if isinstance(raw, list) and len(raw) >= 2:
        kind, inner = raw[0], raw[1]
        if kind in ("list", "set", "map"):
            element = type_from_json(inner, where)
            return {
                "list": type_constraints.ListType,
                "set": type_constraints.SetType,
                "map": type_constraints.MapType,
            }[kind](element)
        if kind == "tuple" and isinstance(inner, list):
            return type_constraints.TupleType(tuple(type_from_json(e, where) for e in inner))
        if kind == "object" and isinstance(inner, dict):
            attributes = {name: type_from_json(t, where) for name, t in inner.items()}
            optional = raw[2] if len(raw) > 2 and isinstance(raw[2], list) else []
            return type_constraints.object_type(
                attributes, {name: type_constraints.OptionalAttribute() for name in optional}
            )
    raise ProviderSchemaError(f"{where}: {json.dumps(raw)} is not a type")


# The built-in provider (terraform.io/builtin/terraform) of terraform 1.11, as `terraform providers
# schema -json` prints it (descriptions left out): it ships with terraform, so every template has it.
BUILTIN_SCHEMAS = parse_provider_schemas(
    {
        "provider_schemas": {
            "terraform.io/builtin/terraform": {
                "resource_schemas": {
                    "terraform_data": {
                        "block": {
                            "attributes": {
                                "id": {"type": "string", "computed": True},
                                "input": {"type": "dynamic", "optional": True},
                                "output": {"type": "dynamic", "computed": True},
                                "triggers_replace": {"type": "dynamic", "optional": True},
                            }
                        }
                    }
                },
                "data_source_schemas": {
                    "terraform_remote_state": {
                        "block": {
                            "attributes": {
                                "backend": {"type": "string", "required": True},
                                "config": {"type": "dynamic", "optional": True},
                                "defaults": {"type": "dynamic", "optional": True},
                                "outputs": {"type": "dynamic", "computed": True},
                                "workspace": {"type": "string", "optional": True},
                            }
                        }
                    }
                },
            }
        }
    }
)
