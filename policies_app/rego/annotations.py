"""Rego METADATA annotations and ``rego.metadata.rule()`` / ``rego.metadata.chain()``, resolved by us.

regorus does not implement these builtins (it rejects the call; rego-cpp silently returned an empty value,
which made env0's published two-approver example never allow). OPA itself resolves them, and gets the
user's modules as written. OPA resolves them at compile
time from the ``# METADATA`` comment blocks, so we do the same: parse the blocks, then replace each call
inside a rule with a literal of that rule's annotations. The literal is written on the call's own line so
that every error still points at the user's line.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

import yaml

from policies_app.rego.contract import PolicyCompileError
from policies_app.rego.lexer import (
    COMMENT,
    IDENT,
    Statement,
    Token,
    code_tokens,
    find_calls,
    path_step,
    statements,
    tokenize,
)

_METADATA_HEADER = re.compile(r"^#\s*METADATA\s*$")
_SCOPES = ("rule", "document", "package", "subpackages")
_AUTHOR = re.compile(r"^(?P<name>.*?)\s*<(?P<email>[^<>]+)>\s*$")
_CALLS = frozenset({"rego.metadata.rule", "rego.metadata.chain"})
# Kept from a block in the order OPA prints them; anything else OPA does not know is dropped.
_PLAIN_KEYS = ("title", "description", "organizations", "schemas", "entrypoint", "custom")


@dataclass
class _Block:
    line: int  # the "# METADATA" line
    end_line: int
    document: dict[str, Any]


@dataclass
class ModuleMetadata:
    """One module's tokens, statements and the annotations attached to its statements."""

    filename: str
    source: str
    tokens: list[Token]
    code: list[Token]
    statements: list[Statement]
    package: tuple[str, ...] | None
    rule_annotations: dict[int, dict[str, Any]] = field(default_factory=dict)  # statement index -> rule scope


def _yaml_error_line(error: yaml.YAMLError) -> int:
    mark = getattr(error, "problem_mark", None)
    return mark.line if mark is not None else 0


def _blocks(filename: str, tokens: list[Token]) -> list[_Block]:
    comments = [token for token in tokens if token.kind == COMMENT]
    blocks: list[_Block] = []
    index = 0
    while index < len(comments):
        header = comments[index]
        if header.column != 1 or not _METADATA_HEADER.match(header.text.rstrip()):
            index += 1
            continue
        lines: list[str] = []
        last_line = header.line
        index += 1
        # The YAML runs over the comment lines that follow directly, each starting at column 1.
        while index < len(comments):
            comment = comments[index]
            if (
                comment.column != 1
                or comment.line != last_line + 1
                or _METADATA_HEADER.match(comment.text.rstrip())
            ):
                break
            lines.append(comment.text[1:])
            last_line = comment.line
            index += 1
        text = textwrap.dedent("\n".join(lines))
        try:
            document = yaml.safe_load(text) if text.strip() else {}
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise PolicyCompileError(
                f"invalid METADATA block: {problem}",
                file=filename,
                line=header.line + 1 + _yaml_error_line(error),
                column=1,
            ) from None
        if document is None:
            document = {}
        if not isinstance(document, dict):
            raise PolicyCompileError(
                "invalid METADATA block: expected a YAML mapping (key: value lines)",
                file=filename,
                line=header.line,
                column=1,
            )
        blocks.append(_Block(header.line, last_line, document))
    return blocks


def _author(entry: Any) -> Any:
    if isinstance(entry, str):
        match = _AUTHOR.match(entry)
        if match:
            author = {"name": match["name"]} if match["name"] else {}
            author["email"] = match["email"]
            return author
        return {"name": entry.strip()}
    return entry


def _resource(entry: Any) -> Any:
    return {"ref": entry} if isinstance(entry, str) else entry


def normalise_annotations(document: dict[str, Any], scope: str) -> dict[str, Any]:
    """The JSON OPA gives for one annotation block (what rego.metadata.rule() returns)."""
    result: dict[str, Any] = {"scope": scope}
    for key in _PLAIN_KEYS:
        if key in document and document[key] is not None:
            result[key] = document[key]
    if document.get("authors"):
        result["authors"] = [_author(entry) for entry in document["authors"]]
    if document.get("related_resources"):
        result["related_resources"] = [_resource(entry) for entry in document["related_resources"]]
    return json.loads(json.dumps(result, default=str))  # YAML dates and the like become strings, as in JSON


def _scope_for(document: dict[str, Any], target: Statement, filename: str, line: int) -> str | None:
    if target.kind in ("import", "other"):
        return None
    default = "package" if target.kind == "package" else "rule"
    scope = document.get("scope", default)
    if scope not in _SCOPES:
        raise PolicyCompileError(
            f"invalid annotation scope {scope!r}; expected one of {', '.join(_SCOPES)}",
            file=filename,
            line=line,
            column=1,
        )
    if target.kind == "package" and scope not in ("package", "subpackages"):
        raise PolicyCompileError(
            f"annotation scope {scope!r} must be applied to a rule, not a package",
            file=filename,
            line=line,
            column=1,
        )
    if target.kind == "rule" and scope in ("package", "subpackages"):
        raise PolicyCompileError(
            f"annotation scope {scope!r} must be applied to a package statement",
            file=filename,
            line=line,
            column=1,
        )
    return scope


@dataclass
class _Index:
    package: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    subpackages: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    document: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, Any]] = field(default_factory=dict)


def analyse_module(filename: str, source: str) -> ModuleMetadata:
    tokens = tokenize(source)
    code = code_tokens(tokens)
    stmts = statements(code)
    package = next((s.path for s in stmts if s.kind == "package"), None)
    return ModuleMetadata(filename, source, tokens, code, stmts, package)


def _attach(module: ModuleMetadata, index: _Index) -> None:
    for block in _blocks(module.filename, module.tokens):
        target_number = next(
            (number for number, stmt in enumerate(module.statements) if stmt.line > block.end_line), None
        )
        if target_number is None:
            continue
        target = module.statements[target_number]
        scope = _scope_for(block.document, target, module.filename, block.line)
        if scope is None:
            continue
        annotations = normalise_annotations(block.document, scope)
        package = module.package or ()
        if scope == "rule":
            module.rule_annotations[target_number] = annotations
        elif scope == "document":
            index.document.setdefault((package, target.path), annotations)
        elif scope == "package":
            index.package.setdefault(target.path, annotations)
        else:
            index.subpackages.setdefault(target.path, annotations)


def _chain(module: ModuleMetadata, number: int, index: _Index) -> list[dict[str, Any]]:
    package = module.package or ()
    rule_path = list(package + module.statements[number].path)
    first: dict[str, Any] = {"path": rule_path}
    if number in module.rule_annotations:
        first["annotations"] = module.rule_annotations[number]
    chain = [first]
    document = index.document.get((package, module.statements[number].path))
    if document is not None:
        chain.append({"path": rule_path, "annotations": document})
    if package in index.package:
        chain.append({"path": list(package), "annotations": index.package[package]})
    for size in range(len(package), 0, -1):
        ancestor = package[:size]
        if ancestor in index.subpackages:
            chain.append({"path": list(ancestor), "annotations": index.subpackages[ancestor]})
    return chain


def _statement_at(module: ModuleMetadata, token_index: int) -> int | None:
    for number, stmt in enumerate(module.statements):
        if stmt.start_token <= token_index < stmt.end_token:
            return number
    return None


def resolve_metadata_calls(modules: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Rewrite rego.metadata.rule()/chain() in every module of one policy; returns (filename, source)."""
    analysed = [analyse_module(filename, source) for filename, source in modules]
    if not any(find_calls(module.code, _CALLS) for module in analysed):
        return list(modules)  # nothing to resolve: do not even parse the YAML blocks
    index = _Index()
    for module in analysed:
        _attach(module, index)
    result = []
    for module in analysed:
        replacements: list[tuple[int, int, str]] = []
        for name, first, last in find_calls(module.code, _CALLS):
            code = module.code
            call_ok = last + 2 < len(code) and code[last + 1].text == "(" and code[last + 2].text == ")"
            number = _statement_at(module, first)
            token = code[first]
            if not call_ok:
                raise PolicyCompileError(
                    f"{name} must be called with no arguments",
                    file=module.filename,
                    line=token.line,
                    column=token.column,
                )
            if number is None or module.statements[number].kind != "rule":
                # Never guess: resolving against the wrong rule (or none) would silently give {}.
                raise PolicyCompileError(
                    f"cannot tell which rule this {name}() call belongs to: no rule head found before it "
                    "(start the rule on an earlier line, e.g. `deny contains msg if {`)",
                    file=module.filename,
                    line=token.line,
                    column=token.column,
                )
            if name == "rego.metadata.rule":
                value: Any = module.rule_annotations.get(number, {})
            else:
                value = _chain(module, number, index)
            start, end = token.start, code[last + 2].end
            # Keep the line count: newlines inside the replaced call go after the literal.
            literal = json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n" * module.source.count(
                "\n", start, end
            )
            replacements.append((start, end, literal))
        source = module.source
        for start, end, literal in sorted(replacements, reverse=True):
            source = source[:start] + literal + source[end:]
        result.append((module.filename, source))
    return result


def find_unresolved_metadata(code: list[Token]) -> Token | None:
    """Any rego.metadata reference left after rewriting (e.g. a misspelt builtin)."""
    for index, token in enumerate(code):
        if token.text == "rego" and token.kind == IDENT and (index == 0 or code[index - 1].text != "."):
            step = path_step(code, index + 1)
            if step is not None and step[0] == "metadata":
                return token
    return None
