"""Everything we check and rewrite in a policy before an engine sees it (pure Python, engine-independent).

- the decision package: env0 reads deny/pending/warn/allow from ``package env0`` only, so one module must
  declare it (others may hold helpers in other packages);
- builtins the platform does not run (``http.send``, ``opa.runtime``...): capabilities.py, the one list,
  refuses them with their position, before any engine sees the module;
- ``rego.metadata.rule()`` / ``chain()``, resolved from the METADATA blocks (see annotations.py);
- imports of the policy's own packages, rewritten to full references, and references to a whole package
  document of the policy, refused (regorus fails open on both; see references.py);
- policy data whose top-level keys would override the policy's rules or the shared library (``lib``);
- ``sprintf`` calls, made to an extension that formats as OPA (opa_sprintf.py);
- negations, rewritten as OPA's compiler runs them (negations.py), and functions defined in several
  modules, gathered into one (functions.py): regorus decides otherwise on both;
- the same modules in v1 syntax for OPA, which parses v1 only (v1_syntax.py);
- the shared library modules (policies_app/rego/library/*.rego), read once per process.

Syntax trees come from regorus's parser (syntax_tree.py), which every engine worker loads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies_app.rego.annotations import analyse_module, find_unresolved_metadata, resolve_metadata_calls
from policies_app.rego.capabilities import require_allowed_builtins
from policies_app.rego.contract import REGO_VERSIONS, PolicyCompileError, PolicySource
from policies_app.rego.functions import MERGED_PREFIX, merge_split_functions
from policies_app.rego.lexer import code_tokens, tokenize
from policies_app.rego.negations import hoist_out_of_negations
from policies_app.rego.opa_sprintf import use_opa_sprintf
from policies_app.rego.references import rewrite_own_package_references
from policies_app.rego.syntax_tree import ParsedModule, package_path, parse_module, rule_name
from policies_app.rego.v1_syntax import to_rego_v1

DECISION_PACKAGE = ("env0",)
LIBRARY_DIR = Path(__file__).resolve().parent / "library"
LIBRARY_PREFIX = "library/"
LIBRARY_PACKAGE = "lib"  # the shared library's modules are all under data.lib
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class PreparedPolicy:
    key: str
    name: str
    rego_version: str
    modules: tuple[tuple[str, str], ...]  # (filename, source) after rewriting, for regorus
    package: tuple[str, ...]  # where deny/pending/warn/allow are read
    data_json: str | None
    opa_modules: tuple[tuple[str, str], ...] = ()  # the user's modules in v1 syntax, for OPA
    user_modules: tuple[tuple[str, str], ...] = ()  # as written, for positions in error messages
    # Line N of a generated module (merged functions) came from origins[file][N - 1] = (file, line).
    origins: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()

    def locate(self, file: str | None, line: int | None) -> tuple[str | None, int | None]:
        """The user's file and line for a position an engine reports in the rewritten modules."""
        for generated, lines in self.origins:
            if file == generated and line is not None and 0 < line <= len(lines):
                return lines[line - 1]
        return file, line


def _plain(text: str) -> str:
    # The payload is unpickled in the worker, which must not need the caller's classes: a Django
    # SafeString or TextChoices member would make it import Django. str.__str__ returns an exact str.
    return str.__str__(text)


def policy_payload(policy: PolicySource) -> dict[str, Any]:
    """The plain, picklable form sent to the worker, with a hash of everything that affects compilation."""
    try:
        data_json = (
            None
            if policy.data is None
            else json.dumps(policy.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        )
    except (TypeError, ValueError) as error:
        raise PolicyCompileError(f"policy data is not JSON-compatible: {error}", policy=policy.name) from None
    modules = [(_plain(module.filename), _plain(module.source)) for module in policy.modules]
    digest = hashlib.sha256(
        json.dumps([policy.rego_version, modules, data_json], separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    return {
        "key": _plain(policy.key),
        "name": _plain(policy.name),
        "rego_version": _plain(policy.rego_version),
        "modules": modules,
        "data_json": data_json,
        "hash": digest,
    }


def rule_ref(package: tuple[str, ...], rule: str) -> str:
    """``data.env0.deny``; bracketed parts for package names that are not identifiers."""
    parts = ["data"]
    for part in (*package, rule):
        parts.append(f".{part}" if _IDENTIFIER.match(part) else f"[{json.dumps(part)}]")
    return "".join(parts)


def _require_decision_package(name: str, packages: dict[str, tuple[str, ...]]) -> None:
    """env0 reads data.env0 only: a policy in any other package would never decide anything there."""
    if DECISION_PACKAGE in packages.values():
        return
    filename, package = next(iter(packages.items()))
    raise PolicyCompileError(
        f"package {'.'.join(package)}: env0 reads deny, pending, warn and allow only from package env0, "
        "so this policy would never decide anything; use `package env0` (modules in other packages "
        "may hold helpers that package env0 imports)",
        policy=name,
        file=filename,
        line=1,
    )


def _package_rules(parsed: list[ParsedModule]) -> dict[tuple[str, ...], set[str]]:
    """The first name of every rule, by package: a variable with such a name reads the rule."""
    rules: dict[tuple[str, ...], set[str]] = {}
    for module in parsed:
        names = rules.setdefault(package_path(module), set())
        for rule in module.tree.get("rules") or []:
            path = rule_name(rule)
            if path:
                names.add(path[0])
    return rules


def rewrite_for_regorus(
    modules: list[tuple[str, str]], *, rego_v0: bool
) -> tuple[list[tuple[str, str]], tuple[tuple[str, tuple[tuple[str, int], ...]], ...]]:
    """Negations as OPA compiles them, sprintf as OPA formats (opa_sprintf.py), split functions
    gathered; returns modules and line origins."""
    parsed = [parse_module(filename, source, rego_v0) for filename, source in modules]
    rules = _package_rules(parsed)
    hoisted = [
        use_opa_sprintf(
            hoist_out_of_negations(module, rules[package_path(module)], rego_v0=rego_v0)[1], rego_v0=rego_v0
        )
        for module in parsed
    ]
    rewritten, merged = merge_split_functions(hoisted, rego_v0=rego_v0)
    origins = tuple((module.filename, module.lines) for module in merged)
    return [*rewritten, *((module.filename, module.source) for module in merged)], origins


def _opa_modules(modules: list[tuple[str, str]], version: str) -> list[tuple[str, str]]:
    if version == "v1":
        return list(modules)
    return [(filename, to_rego_v1(parse_module(filename, source, True))) for filename, source in modules]


def _reject_data_over_rules(name: str, data_json: str | None, packages: set[tuple[str, ...]]) -> None:
    """Policy data is merged into data.*: a top-level key naming one of the policy's packages or the
    shared library would replace or merge with their rules (``{"env0": {"deny": []}}`` silenced a deny
    on both engines; ``{"lib": ...}`` changed the library's answers on regopy)."""
    if data_json is None:
        return
    document = json.loads(data_json)
    for key in sorted(document):
        if key == LIBRARY_PACKAGE:
            raise PolicyCompileError(
                f"policy data may not have a top-level key {key!r}: data.{key} is the shared library",
                policy=name,
            )
        clashing = sorted(".".join(package) for package in packages if package[0] == key)
        if clashing:
            raise PolicyCompileError(
                f"policy data may not have a top-level key {key!r}: it would override the rules of "
                f'package {", ".join(clashing)}; put the values under another key (e.g. "settings")',
                policy=name,
            )


def prepare_policy(payload: dict[str, Any]) -> PreparedPolicy:
    name = payload["name"]
    version = payload["rego_version"]
    if version not in REGO_VERSIONS:
        raise PolicyCompileError(f"unknown Rego version {version!r}; expected v1 or v0", policy=name)
    modules: list[tuple[str, str]] = [tuple(module) for module in payload["modules"]]
    if not modules:
        raise PolicyCompileError("the policy has no Rego module", policy=name)
    if payload["data_json"] is not None and not payload["data_json"].startswith("{"):
        raise PolicyCompileError("policy data must be a JSON object (it becomes data.*)", policy=name)
    packages: dict[str, tuple[str, ...]] = {}
    for filename, source in modules:
        if filename in packages:
            raise PolicyCompileError(f"two modules are named {filename}", policy=name, file=filename)
        if filename.startswith((LIBRARY_PREFIX, MERGED_PREFIX)):
            raise PolicyCompileError(
                f"module names starting with {LIBRARY_PREFIX} or {MERGED_PREFIX} are reserved",
                policy=name,
                file=filename,
            )
        package = analyse_module(filename, source).package
        if package is None:
            raise PolicyCompileError(
                "the module has no package declaration", policy=name, file=filename, line=1
            )
        packages[filename] = package
    _require_decision_package(name, packages)
    declared = set(packages.values())
    _reject_data_over_rules(name, payload["data_json"], declared)
    try:
        opa_modules = _opa_modules(modules, version)  # parses every module: syntax errors first
        rewritten = [
            (filename, rewrite_own_package_references(filename, source, declared))
            for filename, source in modules
        ]
        rewritten = resolve_metadata_calls(rewritten)
    except PolicyCompileError as error:
        error.policy = name
        raise
    for filename, source in rewritten:
        left = find_unresolved_metadata(code_tokens(tokenize(source)))
        if left is not None:
            raise PolicyCompileError(
                "only rego.metadata.rule() and rego.metadata.chain() are supported",
                policy=name,
                file=filename,
                line=left.line,
                column=left.column,
            )
    try:
        for filename, source in modules:  # as written, so that positions are the user's
            require_allowed_builtins(filename, source, rego_v0=version == "v0")
        engine_modules, origins = rewrite_for_regorus(rewritten, rego_v0=version == "v0")
    except PolicyCompileError as error:
        error.policy = name
        raise
    return PreparedPolicy(
        key=payload["key"],
        name=name,
        rego_version=version,
        modules=tuple(engine_modules),
        package=DECISION_PACKAGE,
        data_json=payload["data_json"],
        opa_modules=tuple(opa_modules),
        user_modules=tuple(modules),
        origins=origins,
    )


@functools.cache
def library_modules(directory: Path = LIBRARY_DIR) -> tuple[tuple[str, str], ...]:
    """Every shared library module, named ``library/<path>``; read once per process.

    ``*_test.rego`` files are OPA unit tests of the library and are not loaded into policies.
    """
    if not directory.is_dir():
        return ()
    modules = []
    for path in sorted(directory.rglob("*.rego")):
        if path.name.endswith("_test.rego"):
            continue
        filename = LIBRARY_PREFIX + path.relative_to(directory).as_posix()
        modules.append((filename, path.read_text(encoding="utf-8")))
    return tuple(modules)


@functools.cache
def library_modules_for_regorus(directory: Path = LIBRARY_DIR) -> tuple[tuple[str, str], ...]:
    """The library as regorus runs it: metadata calls resolved, negations rewritten as OPA's compiler."""
    modules, _ = rewrite_for_regorus(resolve_metadata_calls(list(library_modules(directory))), rego_v0=False)
    return tuple(modules)
