"""Everything we check and rewrite in a policy before an engine sees it (pure Python, engine-independent).

- the decision package (env0, or the single package all modules share);
- builtins that reach the network: both engines let ``http.send`` evaluate to undefined, so a deny rule
  depending on it would silently never fire; we refuse them with the position of the call;
- ``rego.metadata.rule()`` / ``chain()``, resolved from the METADATA blocks (see annotations.py);
- imports of the policy's own packages, rewritten to full references, and references to a whole package
  document of the policy, refused (regorus fails open on both; see references.py);
- policy data whose top-level keys would override the policy's rules or the shared library (``lib``);
- the shared library modules (policies_app/rego/library/*.rego), read once per process.
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
from policies_app.rego.lexer import code_tokens, find_calls, tokenize
from policies_app.rego.references import rewrite_own_package_references
from policies_app.rego.types import REGO_VERSIONS, PolicyCompileError, PolicySource

# Builtins that make network requests. OPA has these two; opa.runtime and time.now_ns are fine.
NETWORK_BUILTINS = frozenset({"http.send", "net.lookup_ip_addr"})
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
    modules: tuple[tuple[str, str], ...]  # (filename, source) after rewriting
    package: tuple[str, ...]  # where deny/pending/warn/allow are read
    data_json: str | None


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


def _decision_package(name: str, packages: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    distinct = set(packages.values())
    if DECISION_PACKAGE in distinct:
        return DECISION_PACKAGE
    if len(distinct) == 1:
        return distinct.pop()
    listed = ", ".join(sorted(".".join(package) for package in distinct))
    raise PolicyCompileError(
        f"no module declares package env0 and the modules declare different packages ({listed}); "
        "env0 reads deny/pending/warn/allow from package env0",
        policy=name,
    )


def _reject_network_builtins(name: str, filename: str, source: str) -> None:
    code = code_tokens(tokenize(source))
    for builtin, first, _last in find_calls(code, NETWORK_BUILTINS):
        token = code[first]
        raise PolicyCompileError(
            f"{builtin} reaches the network and is not allowed in approval policies "
            "(the engines would silently treat it as undefined)",
            policy=name,
            file=filename,
            line=token.line,
            column=token.column,
        )


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
        if filename.startswith(LIBRARY_PREFIX):
            raise PolicyCompileError(
                f"module names starting with {LIBRARY_PREFIX} are reserved for the shared library",
                policy=name,
                file=filename,
            )
        package = analyse_module(filename, source).package
        if package is None:
            raise PolicyCompileError(
                "the module has no package declaration", policy=name, file=filename, line=1
            )
        packages[filename] = package
        _reject_network_builtins(name, filename, source)
    declared = set(packages.values())
    _reject_data_over_rules(name, payload["data_json"], declared)
    try:
        modules = [
            (filename, rewrite_own_package_references(filename, source, declared))
            for filename, source in modules
        ]
        rewritten = resolve_metadata_calls(modules)
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
    return PreparedPolicy(
        key=payload["key"],
        name=name,
        rego_version=version,
        modules=tuple(rewritten),
        package=_decision_package(name, packages),
        data_json=payload["data_json"],
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
    return tuple(resolve_metadata_calls(modules))
