"""What the plan shows of a resource instance, and what expressions see when they refer to it: by its
provider's schema when we have one, else by the rule for providers we do not know (see
provider_schemas.py)."""

from __future__ import annotations

from typing import Any

from policies_app.iac import syntax_nodes, type_constraints
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.expressions import ResourceObject
from policies_app.iac.provider_schemas import Attribute, Block, NestedBlock, ProviderSchemas
from policies_app.iac.values import UNKNOWN, UnknownValue, is_unknown, mark, unmark, unmark_deep

_META_BLOCKS = frozenset({"lifecycle", "provisioner", "connection"})


def instance_views(
    kind: str,
    block: syntax_nodes.Block,
    values: dict[str, Any],
    schemas: ProviderSchemas,
    reporter: Reporter,
    what: str,
) -> tuple[dict[str, Any], Any]:
    """(the instance's planned values, the object references to it see)."""
    resource_type = block.labels[0]
    schema = schemas.schema_of(kind, resource_type)
    if schema is None:
        if kind == "data":
            return values, ResourceObject()  # known only once read
        return values, _unknown_where_unset(block.body, values)
    planned = _PlanWithSchema(reporter, what).block(schema, block.body, values)
    if kind == "resource" and resource_type == "terraform_data":
        # The built-in provider's own logic: output mirrors input, known only after apply, of the
        # input's type (so terraform_data.x.output == 3 is false for a string input, and the length
        # of an object's output is known).
        given = unmark_deep(planned["input"])
        output_type = type_constraints.infer_type(given)
        if given is None:
            planned["output"] = None
        else:
            planned["output"] = (
                UNKNOWN if isinstance(output_type, type_constraints.AnyType) else UnknownValue(output_type)
            )
    return planned, planned


def _nested_bodies(body: syntax_nodes.Body) -> dict[str, syntax_nodes.Body]:
    """Each nested block type of a body (a dynamic block's content counts as its type)."""
    bodies: dict[str, syntax_nodes.Body] = {}
    for nested in body.blocks:
        if nested.type == "dynamic" and nested.labels:
            content = next((b for b in nested.body.blocks if b.type == "content"), None)
            if content is not None:
                bodies.setdefault(nested.labels[0], content.body)
        elif nested.type not in _META_BLOCKS:
            bodies.setdefault(nested.type, nested.body)
    return bodies


def _unknown_where_unset(body: syntax_nodes.Body, values: dict[str, Any]) -> ResourceObject:
    """A provider we have no schema of computes whatever the configuration leaves null or unset, and
    anything inside the nested blocks it configures (aws_vpc.this.ipv6_cidr_block,
    aws_eks_cluster.this.vpc_config[0].cluster_security_group_id): unknown, never an error."""
    nested = _nested_bodies(body)
    view = ResourceObject()
    for name, value in values.items():
        if name in nested and isinstance(value, list):
            view[name] = [
                _unknown_where_unset(nested[name], item) if isinstance(item, dict) else item for item in value
            ]
        else:
            view[name] = UNKNOWN if value is None else value
    return view


class _PlanWithSchema:
    def __init__(self, reporter: Reporter, what: str) -> None:
        self.reporter = reporter
        self.what = what

    def block(self, schema: Block, body: syntax_nodes.Body | None, values: dict[str, Any]) -> dict[str, Any]:
        bodies = _nested_bodies(body) if body is not None else {}
        for name in values:
            if name in schema.attributes or name in schema.blocks:
                continue
            if body is not None and name in body.attributes:
                self.reporter.error(
                    "Unsupported argument",
                    f'{self.what}: an argument named "{name}" is not expected here',
                    body.attributes[name].pos,
                )
            else:
                self.reporter.error(
                    "Unsupported block type",
                    f'{self.what}: blocks of type "{name}" are not expected here',
                    None,
                )
        planned: dict[str, Any] = {}
        for name, attribute in schema.attributes.items():
            pos = body.attributes[name].pos if body is not None and name in body.attributes else None
            planned[name] = self.attribute(name, attribute, values.get(name), pos)
        for name, nested in schema.blocks.items():
            planned[name] = self.nested_block(nested, bodies.get(name), values.get(name))
        return planned

    def attribute(self, name: str, attribute: Attribute, value: Any, pos: syntax_nodes.Pos | None) -> Any:
        raw, marked = unmark(value)
        if raw is None:
            if attribute.required:
                self.reporter.error(
                    "Missing required argument",
                    f'{self.what}: the argument "{name}" is required, but no definition was found',
                    pos,
                )
            planned = UNKNOWN if attribute.computed else None
        elif is_unknown(raw):
            planned = UNKNOWN
        elif attribute.nested is not None:
            planned = self.nested_attributes(attribute, raw)
        else:
            try:
                planned = type_constraints.convert(raw, attribute.type)
            except type_constraints.ConversionError as error:
                self.reporter.error("Incorrect attribute value type", f'{self.what}: "{name}": {error}', pos)
                planned = UNKNOWN
        return mark(planned) if marked or attribute.sensitive else planned

    def nested_attributes(self, attribute: Attribute, value: Any) -> Any:
        nested = attribute.nested
        assert nested is not None
        inner = {name: a for name, a in nested.attributes.items()}
        schema = Block(inner)
        if nested.nesting == "single":
            return self.block(schema, None, unmark_deep(value)) if isinstance(value, dict) else value
        if nested.nesting == "map" and isinstance(value, dict):
            return {k: self.block(schema, None, v) if isinstance(v, dict) else v for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.block(schema, None, v) if isinstance(v, dict) else v for v in value]
        return value

    def nested_block(self, nested: NestedBlock, body: syntax_nodes.Body | None, value: Any) -> Any:
        if is_unknown(value):
            return UNKNOWN
        items = value if isinstance(value, list) else ([] if value is None else [value])
        planned = [self.block(nested.block, body, item) if isinstance(item, dict) else item for item in items]
        if nested.nesting in ("single", "group"):
            if planned:
                return planned[0]
            # An absent group block still has its attributes (null, or unknown when computed).
            return self.block(nested.block, None, {}) if nested.nesting == "group" else None
        return planned
