"""Real public modules made plannable offline, identically for terraform and for us.

Used by bench/bench_module_corpus.py (every example root) and by test_iac_module_corpus.py (a bounded
subset). The modules themselves are never committed: they are read from the repository snapshots on
this machine (``IAC_MODULE_MIRRORS``, default /work/.mirror, one ``owner+name/repo`` git directory per
repository, as the search tool's ``fetch`` leaves them) and written, transformed, into a work directory.

The transformation (``transform_tree``), applied to every ``.tf`` file of a repository:

- a provider resource ``resource "aws_vpc" "this" {...}`` becomes ``resource "terraform_data"
  "aws_vpc__this"`` keeping its count/for_each/depends_on and lifecycle conditions, whose ``input`` is
  an object of its arguments: attributes as they are, nested blocks as lists of objects, ``dynamic``
  blocks as ``for`` expressions; a data source (and an ephemeral resource) becomes one too
  (``data__TYPE__NAME``);
- every attribute that the module reads from such a resource without setting it (``aws_vpc.this.id``)
  is added to that input as an unknown value of no particular type, as a provider computes it;
- the attributes added so are also every name read after a dot anywhere in the corpus (a caller reads
  ``module.subnets.subnets["a"].id`` where the resource is out of sight);
- a provider-defined function call ``provider::azapi::resource_group_resource_id(...)`` becomes that
  unknown value too: only the provider plugin could compute it;
- a reference ``aws_vpc.this`` becomes ``local.corpus_aws_vpc__this``: the inputs of the instances,
  in the resource's shape (one object, a list for count, a map for for_each);
- provider, terraform, moved, import and removed blocks go, and so do provisioners, ``provider``
  meta-arguments and ``providers`` maps;
- a module source from a registry or GitHub that names one of the mirrored repositories points at that
  repository's transformed copy; any other becomes a stub module whose outputs are unknown;
- a root variable without a default gets a value of its type in ``corpus.auto.tfvars.json``.

Only the built-in ``terraform_data`` is left as it is. Nothing here knows any module: the rules are
about the language.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

MIRRORS = Path(os.environ.get("IAC_MODULE_MIRRORS", "/work/.mirror"))
UNKNOWN_LOCAL = "local.corpus_unknown"
_BUILTIN_RESOURCE_TYPES = {"terraform_data"}
_META_ARGUMENTS = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}
_NAMESPACES = {"var", "local", "module", "each", "count", "path", "terraform", "data", "ephemeral"}
_MAX_COPIED_FILE = 512 * 1024

# --------------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Token:
    kind: str  # ident number punct newline comment str_open str_text str_close interp_open interp_close
    text: str
    start: int
    end: int


_PUNCT = ("...", "==", "!=", "<=", ">=", "&&", "||", "=>", "::")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_HEREDOC = re.compile(r"<<(-?)([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")


class HclScanError(ValueError):
    pass


class _Scanner:
    """HCL's native syntax as a flat list of tokens; the text of strings and heredocs is split from
    the interpolations inside them, whose tokens are code like any other."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[Token] = []

    def scan(self) -> list[Token]:
        end = self._code(0, inside_template=False)
        if end != len(self.text):
            raise HclScanError(f"unbalanced '}}' at offset {end}")
        return self.tokens

    def _add(self, kind: str, start: int, end: int) -> None:
        self.tokens.append(Token(kind, self.text[start:end], start, end))

    def _code(self, i: int, inside_template: bool) -> int:
        text, depth = self.text, 0
        while i < len(text):
            c = text[i]
            if c in " \t\r":
                i += 1
            elif c == "\n":
                self._add("newline", i, i + 1)
                i += 1
            elif c == "#" or text.startswith("//", i):
                j = text.find("\n", i)
                j = len(text) if j < 0 else j
                self._add("comment", i, j)
                i = j
            elif text.startswith("/*", i):
                j = text.find("*/", i + 2)
                if j < 0:
                    raise HclScanError("unterminated comment")
                self._add("comment", i, j + 2)
                i = j + 2
            elif c == '"':
                i = self._quoted(i)
            elif text.startswith("<<", i) and (match := _HEREDOC.match(text, i)):
                i = self._heredoc(i, match)
            elif match := _IDENT.match(text, i):
                self._add("ident", i, match.end())
                i = match.end()
            elif match := _NUMBER.match(text, i):
                self._add("number", i, match.end())
                i = match.end()
            else:
                if c == "}" and depth == 0 and inside_template:
                    return i
                if c in "{[(":
                    depth += 1
                elif c in "}])":
                    depth -= 1
                width = next((len(p) for p in _PUNCT if text.startswith(p, i)), 1)
                self._add("punct", i, i + width)
                i += width
        if inside_template:
            raise HclScanError("unterminated template interpolation")
        return i

    def _template_part(self, i: int) -> int:
        """At ``${`` or ``%{``: the interpolation's tokens; returns the offset after its ``}``."""
        self._add("interp_open", i, i + 2)
        end = self._code(i + 2, inside_template=True)
        self._add("interp_close", end, end + 1)
        return end + 1

    def _quoted(self, i: int) -> int:
        text = self.text
        self._add("str_open", i, i + 1)
        i += 1
        start = i
        while i < len(text):
            c = text[i]
            if c == "\\":
                i += 2
            elif text.startswith("$${", i) or text.startswith("%%{", i):
                i += 3
            elif text.startswith("${", i) or text.startswith("%{", i):
                if i > start:
                    self._add("str_text", start, i)
                i = start = self._template_part(i)
            elif c == '"':
                if i > start:
                    self._add("str_text", start, i)
                self._add("str_close", i, i + 1)
                return i + 1
            elif c == "\n":
                raise HclScanError("unterminated string")
            else:
                i += 1
        raise HclScanError("unterminated string")

    def _heredoc(self, i: int, match: re.Match) -> int:
        text, marker = self.text, match.group(2)
        self._add("str_open", i, match.end())
        i = start = match.end()
        line_start = True
        while i < len(text):
            if line_start:
                line_end = text.find("\n", i)
                line_end = len(text) if line_end < 0 else line_end
                if text[i:line_end].strip() == marker:
                    if i > start:
                        self._add("str_text", start, i)
                    self._add("str_close", i, line_end)
                    return line_end
            line_start = False
            if text.startswith("$${", i) or text.startswith("%%{", i):
                i += 3
            elif text.startswith("${", i) or text.startswith("%{", i):
                if i > start:
                    self._add("str_text", start, i)
                i = start = self._template_part(i)
            else:
                line_start = text[i] == "\n"
                i += 1
        raise HclScanError(f"unterminated heredoc {marker}")


def tokenize(text: str) -> list[Token]:
    return _Scanner(text).scan()


def attribute_names_read(tokens: list[Token]) -> set[str]:
    """Every name read after a dot from something other than a namespace (var.x, local.x...)."""
    code = [t for t in tokens if t.kind not in ("comment", "newline")]
    names = set()
    for n in range(2, len(code)):
        before, dot, name = code[n - 2], code[n - 1], code[n]
        if name.kind == "ident" and dot.kind == "punct" and dot.text == ".":
            if not (before.kind == "ident" and before.text in _NAMESPACES):
                names.add(name.text)
    return names


def without_provider_functions(text: str) -> str:
    """Each call of a provider-defined function replaced by the unknown value (see _UNKNOWN_SOURCE)."""
    tokens = [t for t in tokenize(text) if t.kind not in ("comment", "newline")]
    spans = []
    n = 0
    while n + 5 < len(tokens):
        words = [t.text for t in tokens[n : n + 6]]
        if not (words[0] == "provider" and words[1] == words[3] == "::" and words[5] == "("):
            n += 1
            continue
        depth, end = 0, n + 5
        while end < len(tokens):
            if tokens[end].kind == "punct" and tokens[end].text in "([{":
                depth += 1
            elif tokens[end].kind == "punct" and tokens[end].text in ")]}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        spans.append((tokens[n].start, tokens[min(end, len(tokens) - 1)].end))
        n = end + 1
    for start, end in reversed(spans):
        text = text[:start] + UNKNOWN_LOCAL + text[end:]
    return text


# --------------------------------------------------------------------------------------------------
# Structure: bodies of attributes and blocks, as token ranges
# --------------------------------------------------------------------------------------------------


@dataclass
class Attribute:
    name: str
    first: int  # token index of the name
    expr: tuple[int, int]  # token range [start, end) of the expression


@dataclass
class Block:
    type: str
    labels: list[str]
    first: int  # token index of the type
    open: int  # token index of "{"
    close: int  # token index of "}"
    items: list[Attribute | Block] = field(default_factory=list)

    def attributes(self) -> dict[str, Attribute]:
        return {i.name: i for i in self.items if isinstance(i, Attribute)}

    def blocks(self) -> list[Block]:
        return [i for i in self.items if isinstance(i, Block)]


class _Structure:
    def __init__(self, tokens: list[Token]) -> None:
        self.positions = [n for n, t in enumerate(tokens) if t.kind != "comment"]
        self.tokens = [tokens[n] for n in self.positions]
        self.count = len(tokens)

    def parse(self) -> list[Attribute | Block]:
        items, position = self._body(0, closing=False)
        return items

    def _original(self, position: int) -> int:
        return self.positions[position] if position < len(self.positions) else self.count

    def _body(self, i: int, closing: bool) -> tuple[list[Attribute | Block], int]:
        tokens, items = self.tokens, []
        while True:
            while i < len(tokens) and tokens[i].kind == "newline":
                i += 1
            if i >= len(tokens):
                if closing:
                    raise HclScanError("unterminated block")
                return items, i
            token = tokens[i]
            if token.kind == "punct" and token.text == "}" and closing:
                return items, i
            if token.kind != "ident":
                raise HclScanError(f"unexpected {token.text!r} at offset {token.start}")
            name_at = i
            i += 1
            if i < len(tokens) and tokens[i].kind == "punct" and tokens[i].text == "=":
                start = i + 1
                i = self._expression_end(start)
                # The expression ends after its last token: a comment after it on the line is not part of it.
                end = self._original(i - 1) + 1 if i > start else self._original(start)
                items.append(Attribute(token.text, self._original(name_at), (self._original(start), end)))
                continue
            labels = []
            while i < len(tokens) and not (tokens[i].kind == "punct" and tokens[i].text == "{"):
                if tokens[i].kind == "ident":
                    labels.append(tokens[i].text)
                    i += 1
                elif tokens[i].kind == "str_open":
                    text = ""
                    i += 1
                    while tokens[i].kind != "str_close":
                        text += tokens[i].text
                        i += 1
                    labels.append(text)
                    i += 1
                else:
                    raise HclScanError(f"unexpected {tokens[i].text!r} in block header at {tokens[i].start}")
            open_at = i
            inner, i = self._body(i + 1, closing=True)
            items.append(
                Block(
                    token.text,
                    labels,
                    self._original(name_at),
                    self._original(open_at),
                    self._original(i),
                    inner,
                )
            )
            i += 1

    def _expression_end(self, i: int) -> int:
        tokens, depth = self.tokens, 0
        while i < len(tokens):
            token = tokens[i]
            if token.kind == "punct":
                if token.text in ("{", "[", "("):
                    depth += 1
                elif token.text in ("}", "]", ")"):
                    if depth == 0:
                        return i
                    depth -= 1
            elif token.kind == "newline" and depth == 0:
                return i
            i += 1
        return i


def parse_structure(tokens: list[Token]) -> list[Attribute | Block]:
    return _Structure(tokens).parse()


# --------------------------------------------------------------------------------------------------
# The transformation of one module directory
# --------------------------------------------------------------------------------------------------


@dataclass
class _File:
    path: Path
    text: str
    tokens: list[Token]
    items: list[Attribute | Block]


@dataclass
class ModuleSources:
    """How module sources that are not local paths are made local."""

    repositories: dict[str, Path]  # "owner/name" (lower case) -> its transformed copy
    stubs_dir: Path  # where stub modules are written
    names_read: set[str] = field(default_factory=set)  # attribute names read anywhere in the corpus


def _alias(kind: str, type_: str, name: str) -> str:
    prefix = "" if kind == "resource" else f"{kind}__"
    return f"{prefix}{type_}__{name}"


def _is_transformed(kind: str, type_: str) -> bool:
    return kind != "resource" or type_ not in _BUILTIN_RESOURCE_TYPES


class _ModuleTransform:
    def __init__(self, directory: Path, sources: ModuleSources, original: bool = False) -> None:
        self.directory = directory
        self.sources = sources
        self.files: list[_File] = []
        for path in sorted(directory.glob("*.tf")):
            text = path.read_text(encoding="utf-8")
            if not original and "provider::" in text:
                text = without_provider_functions(text)
            tokens = tokenize(text)
            self.files.append(_File(path, text, tokens, parse_structure(tokens)))
        # (kind, type, name) -> block, for every resource, data source and ephemeral resource
        self.resources: dict[tuple[str, str, str], Block] = {}
        for file in self.files:
            for item in file.items:
                if isinstance(item, Block) and item.type in ("resource", "data", "ephemeral"):
                    if len(item.labels) == 2 and _is_transformed(item.type, item.labels[0]):
                        self.resources[(item.type, *item.labels)] = item
        self.read_attributes: dict[tuple[str, str, str], set[str]] = {}
        # (resource key, nested block type) -> attributes read from that block's objects
        self.read_nested: dict[tuple[tuple[str, str, str], str], set[str]] = {}
        # Every attribute name read anywhere in the module from something other than a namespace
        # (var.x, local.x, each.value...): resource objects also reach for-expression variables,
        # locals and function results, where no reference says which resource they are.
        self.names_read: set[str] = set()
        self.edits: dict[int, list[tuple[int, int, str]]] = {}  # per file: (start, end, text)
        self.module_outputs_read: dict[str, set[str]] = {}

    # references -------------------------------------------------------------------------------------

    def _find_references(self, file_index: int) -> None:
        file = self.files[file_index]
        code = [t for t in file.tokens if t.kind not in ("comment", "newline")]
        edits = []
        self.names_read |= attribute_names_read(file.tokens)
        self._for_expressions(code)
        n = 0
        while n < len(code):
            token = code[n]
            previous = code[n - 1] if n else None
            after_dot = previous is not None and previous.kind == "punct" and previous.text == "."
            if token.kind != "ident" or after_dot or not self._dot(code, n + 1):
                n += 1
                continue
            key = None
            span = 0
            if token.text in ("data", "ephemeral") and self._dot(code, n + 3):
                if n + 4 < len(code) and code[n + 2].kind == "ident" and code[n + 4].kind == "ident":
                    key = (token.text, code[n + 2].text, code[n + 4].text)
                    span = 5
            elif token.text == "module" and n + 2 < len(code) and code[n + 2].kind == "ident":
                self._note_module_output(code, n)
            elif n + 2 < len(code) and code[n + 2].kind == "ident":
                key = ("resource", token.text, code[n + 2].text)
                span = 3
            if key is None or key not in self.resources:
                n += 1
                continue
            edits.append((token.start, code[n + span - 1].end, "local.corpus_" + _alias(*key)))
            path = self._path_after(code, n + span)
            if path:
                self.read_attributes.setdefault(key, set()).add(path[0])
            if len(path) > 1:
                self.read_nested.setdefault((key, path[0]), set()).add(path[1])
            n += span
        self.edits[file_index] = edits

    def _resource_at(self, code: list[Token], n: int) -> tuple[tuple[str, str, str] | None, int]:
        """The resource referred to at n, and the index after the reference."""
        if not (code[n].kind == "ident" and self._dot(code, n + 1) and n + 2 < len(code)):
            return None, n
        if code[n].text in ("data", "ephemeral") and self._dot(code, n + 3) and n + 4 < len(code):
            key = (code[n].text, code[n + 2].text, code[n + 4].text)
            return (key, n + 5) if key in self.resources else (None, n)
        key = ("resource", code[n].text, code[n + 2].text)
        return (key, n + 3) if key in self.resources else (None, n)

    def _for_expressions(self, code: list[Token]) -> None:
        """``[for x in aws_x.y.block : x.name]``: the names read from the loop variable are attributes
        of the resource (or of its nested block's objects)."""
        for n in range(1, len(code) - 3):
            if not (code[n].text == "for" and code[n - 1].kind == "punct" and code[n - 1].text in "[{"):
                continue
            names = [code[n + 1].text]
            i = n + 2
            if code[i].text == ",":
                names.append(code[i + 1].text)
                i += 2
            if code[i].text != "in":
                continue
            key, after = self._resource_at(code, i + 1)
            if key is None:
                continue
            path = self._path_after(code, after)
            variable = names[-1]
            depth, j, read = 0, after, set()
            while j < len(code):
                token = code[j]
                if token.kind == "punct" and token.text in "[({":
                    depth += 1
                elif token.kind == "punct" and token.text in "])}":
                    if depth == 0:
                        break
                    depth -= 1
                elif token.text == variable and self._dot(code, j + 1) and j + 2 < len(code):
                    read.add(code[j + 2].text)
                j += 1
            if not path:
                self.read_attributes.setdefault(key, set()).update(read)
            elif len(path) == 1:
                self.read_nested.setdefault((key, path[0]), set()).update(read)

    @staticmethod
    def _dot(code: list[Token], n: int) -> bool:
        return n < len(code) and code[n].kind == "punct" and code[n].text == "."

    def _skip_index(self, code: list[Token], n: int) -> int:
        """After ``[...]``, ``[*]`` or ``.*`` at n (or n itself when there is none)."""
        if n < len(code) and code[n].kind == "punct" and code[n].text == "[":
            depth = 0
            while n < len(code):
                if code[n].kind == "punct" and code[n].text in "[({":
                    depth += 1
                elif code[n].kind == "punct" and code[n].text in "])}":
                    depth -= 1
                    if depth == 0:
                        break
                n += 1
            return n + 1
        if self._dot(code, n) and n + 1 < len(code) and code[n + 1].text == "*":
            return n + 2
        return n

    def _path_after(self, code: list[Token], n: int) -> list[str]:
        """The attributes read after a reference, two levels deep: ``[i].block[0].x`` -> [block, x]."""
        path = []
        while len(path) < 2:
            n = self._skip_index(code, n)
            if not (self._dot(code, n) and n + 1 < len(code) and code[n + 1].kind == "ident"):
                break
            path.append(code[n + 1].text)
            n += 2
        return path

    def _note_module_output(self, code: list[Token], n: int) -> None:
        name = code[n + 2].text
        after = self._skip_index(code, n + 3)
        if self._dot(code, after) and after + 1 < len(code) and code[after + 1].kind == "ident":
            self.module_outputs_read.setdefault(name, set()).add(code[after + 1].text)

    # rendering --------------------------------------------------------------------------------------

    def _render(self, file_index: int, start: int, end: int, extra: list[tuple[int, int, str]] = ()) -> str:
        """The file's text from offset start to end, with the reference edits applied."""
        text = self.files[file_index].text
        edits = sorted([e for e in self.edits[file_index] if e[0] >= start and e[1] <= end] + list(extra))
        out, position = [], start
        for edit_start, edit_end, replacement in edits:
            if edit_start < position:
                continue
            out.append(text[position:edit_start])
            out.append(replacement)
            position = edit_end
        out.append(text[position:end])
        return "".join(out)

    def _range_text(self, file_index: int, token_range: tuple[int, int], extra=()) -> str:
        tokens = self.files[file_index].tokens
        first, last = token_range
        if first >= last:
            return "null"
        return self._render(file_index, tokens[first].start, tokens[last - 1].end, extra)

    def _self_edits(self, file_index: int, token_range: tuple[int, int]) -> list[tuple[int, int, str]]:
        """``self.x`` in a postcondition becomes ``self.input.x``."""
        tokens = self.files[file_index].tokens
        edits = []
        for n in range(*token_range):
            token = tokens[n]
            if token.kind == "ident" and token.text == "self" and n + 1 < len(tokens):
                following = tokens[n + 1]
                if following.kind == "punct" and following.text == ".":
                    edits.append((token.start, token.end, "self.input"))
        return edits

    def _object_of(
        self,
        file_index: int,
        block: Block,
        key: tuple[str, str, str],
        top_level: bool = False,
        computed: set[str] = frozenset(),
    ) -> str:
        """A block body as an object constructor: attributes, and nested blocks as lists.

        Write-only attributes (``*_wo``) never reach a plan, and may hold ephemeral values that a
        terraform_data cannot: they are left out. ``computed`` are the attributes that the module
        reads back: those the block does not set are added as unknown, as a provider computes them,
        and at the top level null in the configuration reads as unknown (optional and computed).
        """
        entries: dict[str, list[str]] = {}
        order: list[str] = []
        read_directly = self.read_attributes.get(key, set()) if top_level else set()
        for item in block.items:
            if isinstance(item, Attribute):
                if top_level and item.name in ("count", "for_each", "depends_on", "provider"):
                    continue
                if item.name.endswith("_wo") or item.name.endswith("_wo_version"):
                    continue
                order.append(item.name)
                value = self._range_text(file_index, item.expr)
                if item.name in read_directly:
                    value = f"(({value}) != null ? ({value}) : {UNKNOWN_LOCAL})"
                entries[item.name] = [value]
                continue
            if top_level and item.type in ("lifecycle", "provisioner", "connection"):
                continue
            name = item.labels[0] if item.type == "dynamic" and item.labels else item.type
            nested_computed = self.read_nested.get((key, name), set()) if top_level else set()
            if item.type == "dynamic" and item.labels:
                rendered = self._dynamic(file_index, item, key, nested_computed)
            else:
                rendered = "[" + self._object_of(file_index, item, key, computed=nested_computed) + "]"
            if name not in entries:
                order.append(name)
                entries[name] = []
            entries[name].append(rendered)
        for name in sorted(set(computed) - set(entries)):
            order.append(name)
            entries[name] = [UNKNOWN_LOCAL]
        lines = []
        for name in order:
            values = entries[name]
            value = values[0] if len(values) == 1 else "concat(" + ", ".join(values) + ")"
            lines.append(f"{json.dumps(name)} = {value}")
        return "{\n" + "\n".join(lines) + "\n}"

    def _dynamic(self, file_index: int, block: Block, key: tuple[str, str, str], computed: set[str]) -> str:
        attributes = block.attributes()
        iterator = block.labels[0]
        if "iterator" in attributes:
            iterator = self._range_text(file_index, attributes["iterator"].expr).strip()
        collection = self._range_text(file_index, attributes["for_each"].expr)
        content = next((b for b in block.blocks() if b.type == "content"), None)
        body = self._object_of(file_index, content, key, computed=computed) if content else "{}"
        pairs = f"[for corpus_k, corpus_v in {collection} : {{ key = corpus_k, value = corpus_v }}]"
        return f"[for {iterator} in {pairs} : {body}]"

    def _depends_on(self, file_index: int, attribute: Attribute) -> str:
        tokens = self.files[file_index].tokens
        extra = []
        for edit in self.edits[file_index]:
            if tokens[attribute.expr[0]].start <= edit[0] and edit[1] <= tokens[attribute.expr[1] - 1].end:
                extra.append((edit[0], edit[1], edit[2].replace("local.corpus_", "terraform_data.")))
        text = self.files[file_index].text
        start, end = tokens[attribute.expr[0]].start, tokens[attribute.expr[1] - 1].end
        out, position = [], start
        for edit_start, edit_end, replacement in sorted(extra):
            out.append(text[position:edit_start])
            out.append(replacement)
            position = edit_end
        out.append(text[position:end])
        return "".join(out)

    def _resource(self, file_index: int, block: Block) -> str:
        key = (block.type, *block.labels)
        attributes = block.attributes()
        lines = [f'resource "terraform_data" "{_alias(*key)}" {{']
        for meta in ("count", "for_each"):
            if meta in attributes:
                lines.append(f"  {meta} = {self._range_text(file_index, attributes[meta].expr)}")
        if "depends_on" in attributes:
            lines.append(f"  depends_on = {self._depends_on(file_index, attributes['depends_on'])}")
        computed = (
            self.read_attributes.get(key, set()) | self.names_read | self.sources.names_read
        ) - _META_ARGUMENTS
        body = self._object_of(file_index, block, key, top_level=True, computed=computed)
        lines.append(f"  input = {body}")
        for lifecycle in (b for b in block.blocks() if b.type == "lifecycle"):
            kept = []
            for item in lifecycle.items:
                if isinstance(item, Attribute) and item.name in ("create_before_destroy", "prevent_destroy"):
                    kept.append(f"    {item.name} = {self._range_text(file_index, item.expr)}")
                elif isinstance(item, Block) and item.type in ("precondition", "postcondition"):
                    tokens = self.files[file_index].tokens
                    span = (item.open, item.close + 1)
                    start, end = tokens[item.first].start, tokens[item.close].end
                    extra = self._self_edits(file_index, span) if item.type == "postcondition" else []
                    kept.append("    " + self._render(file_index, start, end, extra))
            if kept:
                lines += ["  lifecycle {", *kept, "  }"]
        lines.append("}")
        return "\n".join(lines)

    def _module_call(self, file_index: int, block: Block) -> str:
        tokens = self.files[file_index].tokens
        attributes = block.attributes()
        extra = []
        source_attr = attributes.get("source")
        local_source = True
        if source_attr is not None:
            source = self._range_text(file_index, source_attr.expr).strip().strip('"')
            if not (source.startswith("./") or source.startswith("../")):
                local_source = False
                target = self._localise(block.labels[0] if block.labels else "module", source, block)
                start = tokens[source_attr.expr[0]].start
                end = tokens[source_attr.expr[1] - 1].end
                extra.append((start, end, json.dumps(target)))
        for name in ("providers", "version"):
            if name in attributes and (name == "providers" or not local_source):
                attribute = attributes[name]
                end_token = attribute.expr[1] - 1
                extra.append((tokens[attribute.first].start, tokens[end_token].end, ""))
        start, end = tokens[block.first].start, tokens[block.close].end
        return self._render(file_index, start, end, extra)

    def _localise(self, call: str, source: str, block: Block) -> str:
        repository, subdir = _repository_of(source)
        if repository is not None and repository in self.sources.repositories:
            target = self.sources.repositories[repository] / subdir
            if target.is_dir():
                return _relative(target, self.directory)
        return _relative(self._stub(call, block), self.directory)

    def _stub(self, call: str, block: Block) -> Path:
        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:12]
        stub = self.sources.stubs_dir / f"{digest}-{call}"
        stub.mkdir(parents=True, exist_ok=True)
        arguments = sorted(
            item.name
            for item in block.items
            if isinstance(item, Attribute)
            and item.name not in ("source", "version", "count", "for_each", "depends_on", "providers")
        )
        lines = [f'variable "{name}" {{\n  default = null\n}}' for name in arguments]
        for output in sorted(self.module_outputs_read.get(call, set())):
            lines.append(f'output "{output}" {{\n  value = {UNKNOWN_LOCAL}\n}}')
        lines.append(_UNKNOWN_SOURCE)
        (stub / "main.tf").write_text("\n\n".join(lines) + "\n")
        return stub

    # the whole module -------------------------------------------------------------------------------

    def transform(self) -> None:
        for index in range(len(self.files)):
            self._find_references(index)
        for index, file in enumerate(self.files):
            out, position = [], 0
            for item in file.items:
                start, end = (
                    file.tokens[item.first].start,
                    file.tokens[
                        item.close if isinstance(item, Block) else max(item.expr[1] - 1, item.first)
                    ].end,
                )
                out.append(file.text[position:start])
                out.append(self._item(index, item, start, end))
                position = end
            out.append(file.text[position:])
            file.path.write_text("".join(out), encoding="utf-8")
        aliases = [_UNKNOWN_SOURCE.strip(), "locals {"]
        for key, block in sorted(self.resources.items()):
            alias = _alias(*key)
            attributes = block.attributes()
            if "count" in attributes:
                value = f"[for r in terraform_data.{alias} : r.input]"
            elif "for_each" in attributes:
                value = f"{{for k, r in terraform_data.{alias} : k => r.input}}"
            else:
                value = f"terraform_data.{alias}.input"
            aliases.append(f"  corpus_{alias} = {value}")
        aliases.append("}")
        if self.files:
            (self.directory / "corpus_aliases.tf").write_text("\n".join(aliases) + "\n")

    def _item(self, index: int, item: Attribute | Block, start: int, end: int) -> str:
        if isinstance(item, Attribute):
            return self._render(index, start, end)
        if item.type in ("provider", "terraform", "moved", "import", "removed"):
            return ""
        if item.type in ("resource", "data", "ephemeral") and (item.type, *item.labels) in self.resources:
            return self._resource(index, item)
        if item.type == "check" and any(b.type == "data" for b in item.blocks()):
            return ""
        if item.type == "module":
            return self._module_call(index, item)
        return self._render(index, start, end)


_UNKNOWN_SOURCE = """
resource "terraform_data" "corpus_unknown" {
  input = ""
}

locals {
  corpus_unknown = jsondecode(terraform_data.corpus_unknown.output)
}
"""


def _relative(target: Path, directory: Path) -> str:
    relative = os.path.relpath(target, directory)
    return relative if relative.startswith("../") else "./" + relative


_REGISTRY = re.compile(r"^(?:registry\.terraform\.io/)?([\w-]+)/([\w-]+)/([\w-]+)(?://(.*))?$")
_GITHUB = re.compile(
    r"^(?:git::)?(?:https://|git@|ssh://git@)?github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?(?://([^?]*))?(?:\?.*)?$"
)


def _repository_of(source: str) -> tuple[str | None, str]:
    """The mirrored repository a registry or GitHub source names, and the subdirectory in it."""
    source = source.split("?", 1)[0] if source.startswith(("git::", "github.com", "https://")) else source
    if match := _REGISTRY.match(source):
        namespace, name, provider, subdir = match.groups()
        return f"{namespace}/terraform-{provider}-{name}".lower(), subdir or ""
    if match := _GITHUB.match(source):
        owner, name, subdir = match.groups()
        return f"{owner}/{name}".lower(), subdir or ""
    return None, ""


# --------------------------------------------------------------------------------------------------
# Repositories: snapshot -> transformed copy; example roots
# --------------------------------------------------------------------------------------------------


def mirror_git_dir(slug: str) -> Path | None:
    repo = MIRRORS / slug / "repo"
    if (repo / ".git").is_dir():
        return repo / ".git"
    return repo if (repo / "HEAD").is_file() else None


def mirrored_repositories() -> dict[str, Path]:
    """``owner/name`` (lower case) -> git directory, for every snapshot on this machine."""
    if not MIRRORS.is_dir():
        return {}
    found = {}
    for entry in sorted(MIRRORS.iterdir()):
        if "+" in entry.name and (git_dir := mirror_git_dir(entry.name)) is not None:
            found[entry.name.replace("+", "/", 1).lower()] = git_dir
    return found


def head_commit(git_dir: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def extract(git_dir: Path, destination: Path) -> None:
    """The snapshot's newest commit, configuration and small files only."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", "-z", "HEAD"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    wanted = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, object_id, size = meta.split()
        if kind != "blob" or mode == "120000" or not size.isdigit() or int(size) > _MAX_COPIED_FILE:
            continue
        if any(part.startswith(".") for part in path.split("/")):
            continue
        wanted.append((object_id, path))
    # One cat-file process for every blob; a snapshot may lack some (missing objects are skipped).
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{object_id}\n" for object_id, _ in wanted).encode(),
        capture_output=True,
    ).stdout
    offset = 0
    for _, path in wanted:
        header_end = batch.index(b"\n", offset)
        header = batch[offset:header_end].split()
        offset = header_end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        target = destination / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[offset : offset + size])
        offset += size + 1


def module_directories(tree: Path) -> list[Path]:
    return sorted({p.parent for p in tree.rglob("*.tf") if ".terraform" not in p.parts})


def example_roots(tree: Path) -> list[Path]:
    """Every directory under examples/ holding .tf files that no other example calls as a module."""
    examples = tree / "examples"
    if not examples.is_dir():
        return []
    return [d for d in module_directories(examples) if d.parent == examples or d.parent.parent == examples]


def transform_tree(tree: Path, sources: ModuleSources) -> list[str]:
    """Transform every module directory of an extracted repository in place; returns problems."""
    problems = []
    for directory in module_directories(tree):
        if any(directory.glob("*.tf.json")) or any(directory.glob("*_override.tf")):
            problems.append(f"{directory}: JSON or override files are not transformed")
        try:
            _ModuleTransform(directory, sources).transform()
        except (HclScanError, KeyError, IndexError) as error:
            problems.append(f"{directory}: {error}")
            (directory / "CORPUS_BROKEN").write_text(str(error))
    return problems


_COUNT_LIKE = re.compile(r"size|count|num|number|port|min|max|capacity|replicas|instances")


def root_variable_values(root: Path) -> dict:
    """A value of its type for every root variable without a default (as tfvars JSON)."""
    from policies_app.iac.type_constraints import (
        AnyType,
        ListType,
        MapType,
        ObjectType,
        PrimitiveType,
        SetType,
        TupleType,
        TypeSyntaxError,
        parse_type,
    )

    def value_for(name: str, constraint) -> object:
        if constraint is None or isinstance(constraint, AnyType):
            # Without a type, the name is all there is: a count-like name gets a number, as text
            # (which also converts to a number wherever one is needed).
            return "1" if _COUNT_LIKE.search(name) else f"corpus-{name}".replace("_", "-")
        if isinstance(constraint, PrimitiveType):
            return {"string": f"corpus-{name}".replace("_", "-"), "number": 1, "bool": True}[constraint.name]
        if isinstance(constraint, (ListType, SetType, TupleType)):
            if isinstance(constraint, TupleType):
                return [value_for(name, e) for e in constraint.elements]
            return []
        if isinstance(constraint, MapType):
            return {}
        if isinstance(constraint, ObjectType):
            optional = constraint.optional_attributes
            return {k: value_for(k, t) for k, t in constraint.attributes if k not in optional}
        return None

    values = {}
    for path in sorted(root.glob("*.tf")):
        text = path.read_text(encoding="utf-8")
        tokens = tokenize(text)
        for item in parse_structure(tokens):
            if not (isinstance(item, Block) and item.type == "variable" and item.labels):
                continue
            attributes = item.attributes()
            if "default" in attributes:
                continue
            constraint = None
            if "type" in attributes:
                first, last = attributes["type"].expr
                type_text = text[tokens[first].start : tokens[last - 1].end]
                try:
                    constraint = parse_type(type_text)
                except TypeSyntaxError:
                    constraint = None
            values[item.labels[0]] = value_for(item.labels[0], constraint)
    return values


@dataclass
class Corpus:
    directory: Path  # the work directory: repos/<slug>/ (transformed), originals/<slug>/, stubs/
    roots: list[tuple[str, str]]  # (slug, root path relative to the repository)
    commits: dict[str, str]
    problems: list[str]

    def root(self, slug: str, relative: str, original: bool = False) -> Path:
        return self.directory / ("originals" if original else "repos") / slug / relative


# Kept aside by issue 11 to check the result with: never part of this corpus, not even as a dependency.
KEPT_ASIDE = frozenset(
    {
        "terraform-aws-modules/terraform-aws-vpc",
        "terraform-aws-modules/terraform-aws-security-group",
        "terraform-aws-modules/terraform-aws-s3-bucket",
        "terraform-aws-modules/terraform-aws-iam",
        "terraform-aws-modules/terraform-aws-eks",
        "terraform-aws-modules/terraform-aws-alb",
        "cloudposse/terraform-null-label",
        "cloudposse/terraform-aws-dynamic-subnets",
    }
)


def build_corpus(directory: Path, only: set[str] | None = None) -> Corpus:
    """Extract and transform every mirrored repository (or those in ``only``) into ``directory``.

    ``originals/`` holds the same repositories untransformed except for module sources, which are
    made local the same way (so that our evaluation of an original sees the same module tree)."""
    repositories = {
        name: git_dir
        for name, git_dir in mirrored_repositories().items()
        if name not in KEPT_ASIDE and (only is None or name in only)
    }
    if directory.exists():
        shutil.rmtree(directory)
    problems: list[str] = []
    commits = {}
    roots = []
    names_read: set[str] = set()
    for variant in ("repos", "originals"):
        base = directory / variant
        slugs = {name: base / name.replace("/", "+") for name in repositories}
        sources = ModuleSources(slugs, directory / f"stubs-{variant}", names_read)
        for name, git_dir in repositories.items():
            extract(git_dir, slugs[name])
            commits[name] = head_commit(git_dir)
            if variant == "repos":
                names_read |= _names_read_in(slugs[name])
        for name in repositories:
            if variant == "repos":
                problems += transform_tree(slugs[name], sources)
            else:
                _localise_sources_only(slugs[name], sources)
        for name in repositories:
            for root in example_roots(slugs[name]):
                try:
                    values = root_variable_values(root)
                except HclScanError:  # a root our scanner cannot read is left out (CORPUS_BROKEN)
                    continue
                if values:
                    (root / "corpus.auto.tfvars.json").write_text(json.dumps(values, indent=2) + "\n")
                if variant == "repos" and not (root / "CORPUS_BROKEN").exists():
                    roots.append((name.replace("/", "+"), str(root.relative_to(slugs[name]))))
    return Corpus(directory, roots, commits, problems)


def _names_read_in(tree: Path) -> set[str]:
    names: set[str] = set()
    for path in tree.rglob("*.tf"):
        try:
            names |= attribute_names_read(tokenize(path.read_text(encoding="utf-8")))
        except (HclScanError, UnicodeDecodeError):
            continue
    return names


def _localise_sources_only(tree: Path, sources: ModuleSources) -> None:
    for directory in module_directories(tree):
        try:
            transform = _ModuleTransform(directory, sources, original=True)
        except HclScanError:
            continue
        for index in range(len(transform.files)):
            transform._find_references(index)
            transform.edits[index] = []  # references stay as they are
        for index, file in enumerate(transform.files):
            out, position = [], 0
            for item in file.items:
                if isinstance(item, Block) and item.type == "module":
                    start, end = file.tokens[item.first].start, file.tokens[item.close].end
                    out.append(file.text[position:start])
                    out.append(transform._module_call(index, item))
                    position = end
            out.append(file.text[position:])
            file.path.write_text("".join(out), encoding="utf-8")
