"""What a folder of a policy repository declares (no Django here): its policies, their modules, tests
and data, read from a listing of the folder's files.

Without ``policies.hcl`` the folder is one policy: every ``*.rego`` under it (``*_test.rego`` are its
tests) and ``data.json`` or ``data.yaml`` beside them as its data. ``policies.hcl``, parsed with
python-hcl2, declares several policies in one folder::

    policy "cost" {
      description  = "Cost limits"
      files        = ["cost.rego", "lib/*.rego"]   # globs: * within a folder, ** across folders
      rego_version = "v1"                            # or "v0"
      data         = "cost.yaml"                     # default: data.json or data.yaml, if present
      enforcement  = "soft-mandatory"                # hard-mandatory (default), soft-mandatory, advisory
    }

A module's tests come with it: ``cost_test.rego`` beside ``cost.rego``, and any ``*_test.rego`` the
globs select. Every problem (bad HCL, an unknown attribute, a glob that selects nothing, data that
does not parse) is a FolderError naming the file and line.

Whoever can push to the repository writes all of this, so reading it is bounded: at most
``MAX_FOLDER_FILES`` files, ``policies.hcl`` at most ``MAX_DECLARATIONS_BYTES`` (python-hcl2 takes
seconds per hundred kilobytes), data at most ``MAX_DATA_BYTES`` with YAML aliases within a budget
(guards/yaml_limits.py), and globs matched by RE2, which never backtracks (a translation of ``**/`` run
by Python's ``re`` took 11-46 s on a handful of segments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import re2
import yaml

from policies_app.guards.yaml_limits import load_bounded_yaml

DECLARATIONS = "policies.hcl"
DATA_FILES = ("data.json", "data.yaml", "data.yml")
ENFORCEMENTS = ("hard-mandatory", "soft-mandatory", "advisory")
REGO_VERSIONS = ("v1", "v0")
_POSITION = re.compile(r" at line \d+, column \d+\.?")
_ATTRIBUTES = ("description", "files", "rego_version", "data", "enforcement")
MAX_FOLDER_FILES = 10_000
MAX_DECLARATIONS_BYTES = 64 * 1024
MAX_DATA_BYTES = 1024 * 1024


class FolderError(Exception):
    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message, self.file, self.line = message, file, line

    def __str__(self) -> str:
        where = ":".join(str(part) for part in (self.file, self.line) if part)
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class DeclaredPolicy:
    """One policy of a folder: everything a revision of it says, and its description."""

    name: str  # as declared in policies.hcl; "" for a folder without one
    modules: tuple[tuple[str, str], ...]  # (path relative to the folder, source), tests included
    data: Any = None
    rego_version: str | None = None  # None: not said (the policy keeps its own)
    enforcement: str = "hard-mandatory"
    description: str | None = None


@dataclass
class _Declaration:
    name: str
    line: int
    description: str | None = None
    files: list[tuple[str, int]] = field(default_factory=list)
    rego_version: str | None = None
    data: tuple[str, int] | None = None
    enforcement: str = "hard-mandatory"


FileReader = Callable[[list[str]], dict[str, bytes]]


def read_folder(paths: list[str], read: FileReader) -> dict[str, DeclaredPolicy]:
    """The folder's policies by declared name ("" for a folder without policies.hcl).

    ``paths``: every file under the folder (relative); ``read``: their bytes, for the paths asked."""
    if len(paths) > MAX_FOLDER_FILES:
        raise FolderError(
            f"the folder holds {len(paths):,} files, more than the {MAX_FOLDER_FILES:,} a policy folder "
            "may have; point the policy at a smaller folder"
        )
    available = set(paths)
    if DECLARATIONS not in available:
        modules = sorted(path for path in paths if path.endswith(".rego"))
        if not modules:
            raise FolderError("the folder has no .rego file", None)
        texts = _texts(read, [*modules, *_data_files(available)])
        policy = DeclaredPolicy(
            "", tuple((path, texts[path]) for path in modules), _folder_data(available, texts)
        )
        return {"": policy}
    declarations = parse_declarations(_texts(read, [DECLARATIONS], MAX_DECLARATIONS_BYTES)[DECLARATIONS])
    policies: dict[str, DeclaredPolicy] = {}
    for declaration in declarations:
        modules = _selected_modules(declaration, sorted(available))
        data_paths = [declaration.data[0]] if declaration.data else _data_files(available)
        if declaration.data and declaration.data[0] not in available:
            raise FolderError(
                f"data: {declaration.data[0]} does not exist", DECLARATIONS, declaration.data[1]
            )
        texts = _texts(read, [*modules, *data_paths])
        data = (
            _parse_data(declaration.data[0], texts[declaration.data[0]])
            if declaration.data
            else _folder_data(available, texts)
        )
        policies[declaration.name] = DeclaredPolicy(
            declaration.name,
            tuple((path, texts[path]) for path in modules),
            data,
            declaration.rego_version,
            declaration.enforcement,
            declaration.description,
        )
    return policies


def _texts(read: FileReader, paths: list[str], max_bytes: int | None = None) -> dict[str, str]:
    texts = {}
    for path, content in read(paths).items():
        if max_bytes is not None and len(content) > max_bytes:
            raise FolderError(f"is larger than {max_bytes // 1024} KB", path)
        try:
            texts[path] = content.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FolderError(f"not UTF-8 text (byte {error.start})", path) from None
    return texts


def _data_files(available: set[str]) -> list[str]:
    present = [name for name in DATA_FILES if name in available]
    if len(present) > 1:
        raise FolderError(f"both {' and '.join(present)} are present: keep one", present[-1])
    return present


def _folder_data(available: set[str], texts: dict[str, str]) -> Any:
    present = _data_files(available)
    return _parse_data(present[0], texts[present[0]]) if present else None


def _parse_data(path: str, text: str) -> dict[str, Any]:
    if len(text.encode("utf-8")) > MAX_DATA_BYTES:
        raise FolderError(f"is larger than {MAX_DATA_BYTES // 1024} KB", path)
    try:
        document = json.loads(text) if path.endswith(".json") else load_bounded_yaml(text)
    except RecursionError:
        raise FolderError("is nested too deeply", path) from None
    except json.JSONDecodeError as error:
        raise FolderError(f"not valid JSON: {error.msg}", path, error.lineno) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        raise FolderError(f"not valid YAML: {problem}", path, mark.line + 1 if mark else None) from None
    if not isinstance(document, dict):
        raise FolderError("the data must be an object (it becomes data.*)", path, 1)
    return document


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a path matches a glob: ``*`` and ``?`` stay within a folder, ``**/`` crosses any number of
    folders. Matched by RE2, in time linear in the path whatever the pattern (Python's ``re`` backtracks
    on ``**/`` repeated). FolderError for a pattern RE2 cannot hold."""
    parts, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            parts.append("(?:[^/]+/)*")
            index += 3
        elif pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            char = pattern[index]
            literal = char.isascii() and (char.isalnum() or char == "_")
            parts.append(char if literal else f"\\x{{{ord(char):x}}}")  # RE2's escape for any character
            index += 1
    try:
        compiled = re2.compile("".join(parts))
    except re2.error as error:
        raise FolderError(f"files: {pattern[:80]!r} cannot be matched: {error}", DECLARATIONS) from None

    def matches(path: str) -> bool:
        try:
            return compiled.fullmatch(path) is not None
        except UnicodeEncodeError:  # a file name git listed that is not UTF-8: no module can have it
            return False

    return matches


def _selected_modules(declaration: _Declaration, paths: list[str]) -> list[str]:
    selected: set[str] = set()
    patterns = declaration.files or [("**/*.rego", declaration.line)]
    for pattern, line in patterns:
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise FolderError(f"files: {pattern!r} must stay inside the folder", DECLARATIONS, line)
        matches = glob_matcher(pattern)
        matched = [path for path in paths if matches(path)]
        if not matched:
            raise FolderError(f"files: {pattern!r} matches no file", DECLARATIONS, line)
        not_rego = [path for path in matched if not path.endswith(".rego")]
        if not_rego:
            raise FolderError(
                f"files: {pattern!r} selects {not_rego[0]}, not a .rego file", DECLARATIONS, line
            )
        selected.update(matched)
    available = set(paths)
    for module in list(selected):
        sibling = module[: -len(".rego")] + "_test.rego"
        if not module.endswith("_test.rego") and sibling in available:
            selected.add(sibling)
    return sorted(selected)


# ------------------------------------------------------------------------------------- policies.hcl


def parse_declarations(text: str) -> list[_Declaration]:
    """The ``policy`` blocks of policies.hcl, checked; FolderError with the line of any problem."""
    import hcl2
    from lark.exceptions import UnexpectedInput

    try:
        start = hcl2.parses(text)
    except UnexpectedInput as error:
        raise FolderError(_syntax_message(error), DECLARATIONS, getattr(error, "line", None)) from None
    except Exception as error:  # noqa: BLE001 - python-hcl2 raises several kinds; all are the file's fault
        raise FolderError(f"cannot be parsed: {error}", DECLARATIONS) from None
    declarations: list[_Declaration] = []
    for node in start.body.children:
        kind, line = type(node).__name__, _line(node)
        if kind == "AttributeRule":
            name, value = _attribute(node)
            if name != "version" or value != '"v1"':
                raise FolderError(
                    f"unexpected attribute {name!r}: only policy blocks are allowed", DECLARATIONS, line
                )
        elif kind == "BlockRule":
            declarations.append(_declaration(node))
    if not declarations:
        raise FolderError('declares no policy (write policy "name" { ... } blocks)', DECLARATIONS, 1)
    seen: dict[str, int] = {}
    for declaration in declarations:
        if declaration.name in seen:
            raise FolderError(
                f"policy {declaration.name!r} is declared twice (first on line {seen[declaration.name]})",
                DECLARATIONS,
                declaration.line,
            )
        seen[declaration.name] = declaration.line
    return declarations


def _syntax_message(error: Exception) -> str:
    token = getattr(error, "token", None)
    if token is not None:
        text = str(token).strip() or "the end of a line"
        return f"syntax error: unexpected {text[:40]!r}"
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return "syntax error: " + _POSITION.sub("", first)


def _line(node: Any) -> int | None:
    meta = getattr(node, "_meta", None)
    return getattr(meta, "line", None) if meta is not None and not getattr(meta, "empty", False) else None


def _attribute(node: Any) -> tuple[str, Any]:
    from hcl2.utils import SerializationOptions

    [(name, value)] = node.serialize(SerializationOptions(with_comments=False)).items()
    return name, value


def _declaration(block: Any) -> _Declaration:
    from hcl2.utils import SerializationOptions

    line = _line(block)
    labels = [label.serialize(SerializationOptions()) for label in block.labels]
    if labels[0] != "policy" or len(labels) != 2:
        raise FolderError(
            f'unexpected block {" ".join(labels)}: write policy "name" {{ ... }}', DECLARATIONS, line
        )
    declaration = _Declaration(_string(labels[1], "the policy's name", line), line or 1)
    for node in block.body.children:
        kind, at = type(node).__name__, _line(node) or line
        if kind == "BlockRule":
            raise FolderError("a policy block holds attributes only, not blocks", DECLARATIONS, at)
        if kind != "AttributeRule":
            continue
        name, value = _attribute(node)
        if name not in _ATTRIBUTES:
            raise FolderError(
                f"unknown attribute {name!r}; expected {', '.join(_ATTRIBUTES)}", DECLARATIONS, at
            )
        if name == "description":
            declaration.description = _string(value, name, at)
        elif name == "files":
            if not isinstance(value, list) or not value:
                raise FolderError("files must be a list of file names or globs", DECLARATIONS, at)
            declaration.files = [(_string(item, name, at), at) for item in value]
        elif name == "rego_version":
            declaration.rego_version = _choice(value, name, REGO_VERSIONS, at)
        elif name == "data":
            declaration.data = (_string(value, name, at), at)
        elif name == "enforcement":
            declaration.enforcement = _choice(value, name, ENFORCEMENTS, at)
    return declaration


def _string(value: Any, what: str, line: int | None) -> str:
    """A quoted string literal as python-hcl2 serialises it (``'"text"'``), unescaped."""
    if not (isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"'):
        raise FolderError(f"{what} must be a quoted string", DECLARATIONS, line)
    body = value[1:-1]
    if "${" in body.replace("$${", "") or "%{" in body.replace("%%{", ""):
        raise FolderError(f"{what} must be a plain string, without ${{...}} or %{{...}}", DECLARATIONS, line)
    try:
        return json.loads(value).replace("$${", "${").replace("%%{", "%{")
    except json.JSONDecodeError:
        return body


def _choice(value: Any, what: str, allowed: tuple[str, ...], line: int | None) -> str:
    text = _string(value, what, line)
    if text not in allowed:
        raise FolderError(f"{what} must be one of {', '.join(allowed)}, not {text!r}", DECLARATIONS, line)
    return text


def choose(policies: dict[str, DeclaredPolicy], declared_name: str, policy_name: str) -> DeclaredPolicy:
    """The folder's policy that a platform policy follows: its declared name, else the one named like
    the platform policy, else the only one."""
    if "" in policies:
        if declared_name:
            raise FolderError(f"the folder has no {DECLARATIONS}, so it declares no policy {declared_name!r}")
        return policies[""]
    for name in (declared_name, policy_name):
        if name and name in policies:
            return policies[name]
    if declared_name:
        raise FolderError(
            f"declares no policy {declared_name!r} (it declares {', '.join(sorted(policies))})", DECLARATIONS
        )
    if len(policies) == 1:
        return next(iter(policies.values()))
    raise FolderError(
        f"declares several policies ({', '.join(sorted(policies))}): say which one this policy follows",
        DECLARATIONS,
    )
