"""Override files merged into the blocks they override, as Terraform and OpenTofu do:
https://developer.hashicorp.com/terraform/language/files/override. The loader (loader.py) reads a
module's files and hands its override files (``override.tf``, ``*_override.tf`` and the other three
suffixes) to ``merge_overrides``, file by file in lexical order.
"""

from __future__ import annotations

from policies_app.iac import syntax_nodes
from policies_app.iac.template_syntax import ConfigSyntaxError

_NO_BASE_NEEDED = {"terraform"}
_NOT_OVERRIDABLE = {"moved", "import", "removed", "check"}


def _static_string(expr: syntax_nodes.Expr) -> str | None:
    if type(expr) is syntax_nodes.Literal and isinstance(expr.value, str):
        return expr.value
    if type(expr) is syntax_nodes.Reference:
        return expr.name
    return None


def _identity(block: syntax_nodes.Block) -> tuple:
    if block.type == "provider":
        alias = block.body.attributes.get("alias")
        return (
            "provider",
            block.labels[0] if block.labels else "",
            _static_string(alias.expr) if alias is not None else None,
        )
    return (block.type, *block.labels)


def _nested_key(block: syntax_nodes.Block) -> str:
    # a `dynamic "x"` block generates x blocks: it replaces, and is replaced by, static x blocks
    return block.labels[0] if block.type == "dynamic" and block.labels else block.type


def _merge_nested(
    base: list[syntax_nodes.Block], override: list[syntax_nodes.Block]
) -> list[syntax_nodes.Block]:
    """Nested blocks of a type present in the override replace ALL base blocks of that type (at the
    place of the first one); types the override does not mention stay as they were."""
    replaced: dict[str, list[syntax_nodes.Block]] = {}
    for block in override:
        replaced.setdefault(_nested_key(block), []).append(block)
    out: list[syntax_nodes.Block] = []
    done: set[str] = set()
    for block in base:
        key = _nested_key(block)
        if key in replaced:
            if key not in done:
                out.extend(replaced[key])
                done.add(key)
        else:
            out.append(block)
    for key, blocks in replaced.items():
        if key not in done:
            out.extend(blocks)
    return out


def _merge_attributes(
    base: syntax_nodes.Body, override: syntax_nodes.Body
) -> dict[str, syntax_nodes.Attribute]:
    attributes = dict(base.attributes)
    attributes.update(override.attributes)  # one by one: an override argument replaces the original
    return attributes


def _merge_block(base: syntax_nodes.Block, override: syntax_nodes.Block) -> syntax_nodes.Block:
    if base.type in ("resource", "data", "ephemeral", "output") and "depends_on" in override.body.attributes:
        where = override.body.attributes["depends_on"].pos
        raise ConfigSyntaxError(
            where.file, where.line, where.column, "depends_on may not be used in an override block"
        )
    attributes = _merge_attributes(base.body, override.body)
    override_blocks = override.body.blocks
    if base.type in ("resource", "data", "ephemeral"):
        # lifecycle is merged argument by argument instead of replaced whole
        base_lifecycle = next((b for b in base.body.blocks if b.type == "lifecycle"), None)
        over_lifecycle = next((b for b in override_blocks if b.type == "lifecycle"), None)
        if base_lifecycle is not None and over_lifecycle is not None:
            merged = syntax_nodes.Block(
                "lifecycle",
                [],
                syntax_nodes.Body(
                    _merge_attributes(base_lifecycle.body, over_lifecycle.body),
                    _merge_nested(base_lifecycle.body.blocks, over_lifecycle.body.blocks),
                ),
                base_lifecycle.pos,
            )
            override_blocks = [
                merged if b is over_lifecycle else b
                for b in override_blocks
                if b.type != "lifecycle" or b is over_lifecycle
            ]
    blocks = _merge_nested(base.body.blocks, override_blocks)
    return syntax_nodes.Block(base.type, list(base.labels), syntax_nodes.Body(attributes, blocks), base.pos)


def _merge_terraform(
    files: list[syntax_nodes.File], override: syntax_nodes.Block
) -> syntax_nodes.Block | None:
    """Merge an override ``terraform`` block setting by setting into the primary terraform blocks.
    Returns the override block when there is no primary one to merge into (it is then kept as is)."""
    targets = [
        (fi, bi) for fi, f in enumerate(files) for bi, b in enumerate(f.body.blocks) if b.type == "terraform"
    ]
    if not targets:
        return override
    over = override.body
    over_backend = [b for b in over.blocks if b.type in ("backend", "cloud")]
    over_required = [b for b in over.blocks if b.type == "required_providers"]
    required_names = {name for b in over_required for name in b.body.attributes}
    over_other = [b for b in over.blocks if b.type not in ("backend", "cloud", "required_providers")]
    other_types = {b.type for b in over_other}
    first = True
    for fi, bi in targets:
        block = files[fi].body.blocks[bi]
        attributes = {k: v for k, v in block.body.attributes.items() if k not in over.attributes}
        blocks: list[syntax_nodes.Block] = []
        for nested in block.body.blocks:
            if over_backend and nested.type in ("backend", "cloud"):
                continue  # any backend or cloud block in an override replaces both kinds
            if nested.type in other_types:
                continue
            if nested.type == "required_providers" and required_names:
                kept = {k: v for k, v in nested.body.attributes.items() if k not in required_names}
                nested = syntax_nodes.Block(
                    nested.type, nested.labels, syntax_nodes.Body(kept, nested.body.blocks), nested.pos
                )
            blocks.append(nested)
        if first:
            attributes.update(over.attributes)
            blocks.extend(over_backend)
            blocks.extend(over_other)
            if over_required:
                merged_required: dict[str, syntax_nodes.Attribute] = {}
                for b in over_required:
                    merged_required.update(b.body.attributes)
                existing = next((i for i, b in enumerate(blocks) if b.type == "required_providers"), None)
                if existing is None:
                    blocks.append(
                        syntax_nodes.Block(
                            "required_providers",
                            [],
                            syntax_nodes.Body(merged_required, []),
                            over_required[0].pos,
                        )
                    )
                else:
                    old = blocks[existing]
                    attrs = dict(old.body.attributes)
                    attrs.update(merged_required)
                    blocks[existing] = syntax_nodes.Block(
                        old.type, old.labels, syntax_nodes.Body(attrs, old.body.blocks), old.pos
                    )
            first = False
        files[fi].body.blocks[bi] = syntax_nodes.Block(
            block.type, block.labels, syntax_nodes.Body(attributes, blocks), block.pos
        )
    return None


def merge_overrides(
    files: list[syntax_nodes.File], override_files: list[syntax_nodes.File]
) -> list[syntax_nodes.File]:
    """Merge override files into copies of the primary files, in order (later overrides win)."""
    files = [
        syntax_nodes.File(f.path, syntax_nodes.Body(dict(f.body.attributes), list(f.body.blocks)))
        for f in files
    ]
    index: dict[tuple, tuple[int, int]] = {}
    local_index: dict[str, tuple[int, int]] = {}
    for fi, f in enumerate(files):
        for bi, block in enumerate(f.body.blocks):
            if block.type == "locals":
                for name in block.body.attributes:
                    local_index[name] = (fi, bi)
            elif block.type not in _NO_BASE_NEEDED:
                index.setdefault(_identity(block), (fi, bi))
    extra: list[syntax_nodes.Block] = []
    for override_file in override_files:
        for block in override_file.body.blocks:
            p = block.pos
            if block.type in _NOT_OVERRIDABLE:
                raise ConfigSyntaxError(
                    p.file, p.line, p.column, f'"{block.type}" blocks cannot be overridden'
                )
            if block.type == "terraform":
                kept = _merge_terraform(files, block)
                if kept is not None:
                    extra.append(kept)
                continue
            if block.type == "locals":
                for name, attribute in block.body.attributes.items():
                    if name not in local_index:
                        ap = attribute.pos
                        raise ConfigSyntaxError(
                            ap.file,
                            ap.line,
                            ap.column,
                            f'missing base local value definition to override: "{name}"',
                        )
                    fi, bi = local_index[name]
                    target = files[fi].body.blocks[bi]
                    attrs = dict(target.body.attributes)
                    attrs[name] = attribute
                    files[fi].body.blocks[bi] = syntax_nodes.Block(
                        target.type, target.labels, syntax_nodes.Body(attrs, target.body.blocks), target.pos
                    )
                continue
            identity = _identity(block)
            if identity not in index:
                what = " ".join(f'"{x}"' for x in identity[1:] if x is not None)
                raise ConfigSyntaxError(
                    p.file, p.line, p.column, f"missing base {block.type} configuration for override: {what}"
                )
            fi, bi = index[identity]
            files[fi].body.blocks[bi] = _merge_block(files[fi].body.blocks[bi], block)
    if extra:
        if files:
            files[0].body.blocks.extend(extra)
        else:
            files = [syntax_nodes.File(extra[0].pos.file, syntax_nodes.Body({}, extra))]
    return files
