"""References from a policy to its own packages, made safe before an engine sees them.

regorus fails open when a rule reads the whole document of a package it belongs to: with
``import data.env0`` in ``package env0``, ``deny contains "x" if { env0.protected }`` comes back with
``deny`` empty even when ``protected`` is true (and so does ``x := data.env0; x.protected``), while
``data.env0.protected`` written out in full evaluates correctly. So:

- every use of an import that names one of the policy's own packages (or a package above or below one)
  is rewritten to the full ``data.`` reference, on the same line, so errors still point at the user's line
  (columns after the rewrite move right on that line);
- a reference to the whole document of one of the policy's packages (``data.env0``, ``data``,
  ``data.env0[k]``) is refused when the policy is saved: OPA refuses it as recursion where a rule of the
  package reads it, regopy does too, and regorus would silently evaluate it wrongly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from policies_app.rego.contract import PolicyCompileError
from policies_app.rego.lexer import IDENT, Statement, Token, code_tokens, path_step, statements, tokenize

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A name right after these, or right before these, is declared as a local variable, not referenced.
_DECLARING_BEFORE = {"some", "every"}
_DECLARING_AFTER = {":=", "in"}


def ref_text(parts: tuple[str, ...]) -> str:
    """``data.env0.x``; bracketed parts for names that are not identifiers (``data["my-pkg"]``)."""
    text = parts[0]
    for part in parts[1:]:
        text += f".{part}" if _IDENTIFIER.match(part) else f"[{json.dumps(part)}]"
    return text


def _related(path: tuple[str, ...], packages: set[tuple[str, ...]]) -> bool:
    """Whether ``path`` (without ``data``) is one of the packages, or lies above or below one."""
    return any(path[: len(package)] == package or package[: len(path)] == path for package in packages)


def _covers_a_package(path: tuple[str, ...], packages: set[tuple[str, ...]]) -> bool:
    """Whether ``path`` (without ``data``) is the whole document of a package or of something above it."""
    return any(package[: len(path)] == path for package in packages)


@dataclass
class _Import:
    alias: str
    path: tuple[str, ...]  # with the leading "data"


def _read_steps(code: list[Token], index: int) -> tuple[tuple[str, ...], int]:
    parts: list[str] = []
    while True:
        step = path_step(code, index)
        if step is None:
            return tuple(parts), index
        parts.append(step[0])
        index = step[1]


def _import_of(code: list[Token], statement: Statement) -> tuple[_Import | None, int]:
    """The import a statement makes (None unless it imports under ``data``) and its last token + 1."""
    root = statement.start_token + 1
    if root >= len(code) or code[root].kind != IDENT:
        return None, statement.end_token
    steps, after = _read_steps(code, root + 1)
    path = (code[root].text, *steps)
    alias = path[-1]
    if after + 1 < statement.end_token and code[after].text == "as" and code[after + 1].kind == IDENT:
        alias = code[after + 1].text
    if path[0] != "data" or len(path) < 2:
        return None, statement.end_token
    return _Import(alias, path), statement.end_token


def _refuse(message: str, filename: str, token: Token) -> PolicyCompileError:
    return PolicyCompileError(message, file=filename, line=token.line, column=token.column)


def rewrite_own_package_references(filename: str, source: str, packages: set[tuple[str, ...]]) -> str:
    """Rewrite aliases of imports of the policy's own packages to full ``data.`` references.

    Raises PolicyCompileError (with the position) for a reference to a whole package document of the
    policy and for an alias of such an import that a local variable would shadow.
    """
    code = code_tokens(tokenize(source))
    imports: dict[str, _Import] = {}
    skipped: set[int] = set()  # import statements and rule names are not references
    for statement in statements(code):
        if statement.kind == "import":
            found, end = _import_of(code, statement)
            skipped.update(range(statement.start_token, end))
            if found is not None and _related(found.path[1:], packages):
                imports[found.alias] = found
        elif statement.kind == "package":
            skipped.update(range(statement.start_token, statement.end_token))
        elif statement.kind == "rule":
            head = code[statement.start_token]
            skipped.add(statement.start_token + 1 if head.text == "default" else statement.start_token)
    replacements: list[tuple[int, int, str]] = []
    for index, token in enumerate(code):
        if token.kind != IDENT or index in skipped or (index > 0 and code[index - 1].text == "."):
            continue
        if token.text == "data":
            root: tuple[str, ...] = ("data",)
        elif token.text in imports:
            root = imports[token.text].path
        else:
            continue
        steps, after = _read_steps(code, index + 1)
        full = (*root, *steps)
        if _covers_a_package(full[1:], packages):
            raise _refuse(
                f"{ref_text(full)} is the whole document of this policy's package "
                f"{'.'.join(full[1:]) or '(all packages)'}; refer to the rule itself "
                f"(e.g. {ref_text((*full, 'name'))}) instead",
                filename,
                token,
            )
        if token.text == "data":
            continue
        previous = code[index - 1].text if index > 0 else ""
        following = code[after].text if after < len(code) else ""
        if not steps and (previous in _DECLARING_BEFORE or following in _DECLARING_AFTER):
            raise _refuse(
                f"the local variable {token.text} shadows the import of {ref_text(root)} "
                "(an import of the policy's own package); rename the variable",
                filename,
                token,
            )
        replacements.append((token.start, token.end, ref_text(root)))
    for start, end, text in sorted(replacements, reverse=True):
        source = source[:start] + text + source[end:]
    return source
