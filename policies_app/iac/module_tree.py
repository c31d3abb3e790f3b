"""The tree of modules of a configuration, as written: each module's blocks, and where its calls lead.

A module call's source is a local path (``./x``, ``../x``), or anything else that ``terraform init``
has downloaded and recorded in ``.terraform/modules/modules.json``; a source that is neither is a
warning, and that call's outputs are unknown. A module directory must lie inside the template's source
root (the checkout or archive the root module is part of), symbolic links resolved (file_sandbox.py):
a configuration may not make us read any other directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from policies_app.iac import syntax_nodes
from policies_app.iac.diagnostics import Reporter
from policies_app.iac.expressions import EVALUATOR, Diagnostic, EvalError, constant_scope
from policies_app.iac.file_sandbox import is_inside
from policies_app.iac.records import Record

MODULE_META_ATTRIBUTES = frozenset({"source", "version", "count", "for_each", "depends_on", "providers"})
MAX_MODULE_DEPTH = 64

LoadFiles = Callable[[str], list[syntax_nodes.File]]


class Module(Record):
    """One module in the tree, as written (not expanded)."""

    path: tuple[str, ...]
    directory: str
    relative_dir: str  # path.module as Terraform gives it: "." for the root
    variables: dict[str, syntax_nodes.Block]
    locals: dict[str, syntax_nodes.Attribute]
    outputs: dict[str, syntax_nodes.Block]
    resources: dict[str, syntax_nodes.Block]  # "TYPE.NAME"
    data: dict[str, syntax_nodes.Block]
    calls: dict[str, syntax_nodes.Block]
    checks: dict[str, syntax_nodes.Block]
    children: dict[str, Module | None]  # None: source not resolved
    loaded: bool  # False when its files could not be read: its blocks are unknown, not absent

    _fields = (
        "path",
        "directory",
        "relative_dir",
        "variables",
        "locals",
        "outputs",
        "resources",
        "data",
        "calls",
        "checks",
        "children",
        "loaded",
    )

    def __init__(
        self,
        path: tuple[str, ...],
        directory: str,
        relative_dir: str,
        variables: dict[str, syntax_nodes.Block] | None = None,
        locals: dict[str, syntax_nodes.Attribute] | None = None,
        outputs: dict[str, syntax_nodes.Block] | None = None,
        resources: dict[str, syntax_nodes.Block] | None = None,
        data: dict[str, syntax_nodes.Block] | None = None,
        calls: dict[str, syntax_nodes.Block] | None = None,
        checks: dict[str, syntax_nodes.Block] | None = None,
        children: dict[str, Module | None] | None = None,
        loaded: bool = True,
    ) -> None:
        self.path = path
        self.directory = directory
        self.relative_dir = relative_dir
        self.variables = dict() if variables is None else variables
        self.locals = dict() if locals is None else locals
        self.outputs = dict() if outputs is None else outputs
        self.resources = dict() if resources is None else resources
        self.data = dict() if data is None else data
        self.calls = dict() if calls is None else calls
        self.checks = dict() if checks is None else checks
        self.children = dict() if children is None else children
        self.loaded = loaded


def default_loader(cache_dir: str | None) -> LoadFiles:
    from policies_app.iac.loader import load_module

    def load(directory: str) -> list[syntax_nodes.File]:
        return list(load_module(directory, cache_dir=cache_dir).files)

    return load


def load_module_tree(
    root_dir: str, source_root: str, load_files: LoadFiles, reporter: Reporter
) -> dict[tuple[str, ...], Module]:
    """Every module of the configuration by its path from the root (the root is ``()``)."""
    return _TreeLoader(root_dir, source_root, load_files, reporter).load()


class _TreeLoader:
    def __init__(self, root_dir: str, source_root: str, load_files: LoadFiles, reporter: Reporter) -> None:
        self.root_dir = root_dir
        self.source_root = source_root
        self.load_files = load_files
        self.reporter = reporter
        self.manifest = self._read_manifest()

    def _read_manifest(self) -> dict[str, str]:
        path = os.path.join(self.root_dir, ".terraform", "modules", "modules.json")
        try:
            with open(path, encoding="utf-8") as handle:
                entries = json.load(handle).get("Modules", [])
        except (OSError, ValueError, AttributeError):
            return {}
        manifest = {}
        for entry in entries:
            if isinstance(entry, dict) and entry.get("Key") and isinstance(entry.get("Dir"), str):
                manifest[entry["Key"]] = os.path.normpath(os.path.join(self.root_dir, entry["Dir"]))
        return manifest

    def load(self) -> dict[tuple[str, ...], Module]:
        modules: dict[tuple[str, ...], Module] = {}
        pending = [Module((), self.root_dir, ".")]
        while pending:
            module = pending.pop()
            modules[module.path] = module
            self._load_blocks(module)
            for name, call in module.calls.items():
                child_dir = self._resolve_source(module, name, call)
                if child_dir is None:
                    module.children[name] = None
                    continue
                if len(module.path) >= MAX_MODULE_DEPTH:
                    self.reporter.error(
                        "Module nesting too deep",
                        f"module.{name}: more than {MAX_MODULE_DEPTH} "
                        "levels of modules (does a module call itself?)",
                        call.pos,
                    )
                    module.children[name] = None
                    continue
                relative = os.path.relpath(child_dir, self.root_dir)
                child = Module((*module.path, name), child_dir, relative)
                module.children[name] = child
                pending.append(child)
        return modules

    def _resolve_source(self, module: Module, name: str, call: syntax_nodes.Block) -> str | None:
        attribute = call.body.attributes.get("source")
        if attribute is None:
            self.reporter.error(
                "Missing required argument", f'module "{name}" needs a "source" argument', call.pos
            )
            return None
        try:
            source = EVALUATOR.evaluate(attribute.expr, constant_scope())
        except EvalError as error:
            self.reporter.add(Diagnostic.from_error(error))
            return None
        if not isinstance(source, str):
            self.reporter.error(
                "Invalid module source", f"module {name}: the source must be a string", attribute.pos
            )
            return None
        if source.startswith("./") or source.startswith("../") or source in (".", ".."):
            directory = os.path.normpath(os.path.join(module.directory, source))
            if not is_inside(directory, self.source_root):
                self.reporter.error(
                    "Module outside the template",
                    f"module {name}: the directory {source!r} is outside the template's source directory",
                    attribute.pos,
                )
                return None
            if not os.path.isdir(directory):
                self.reporter.error(
                    "Module not found",
                    f"module {name}: the directory {source!r} does not exist",
                    attribute.pos,
                )
                return None
            return directory
        key = ".".join((*module.path, name))
        directory = self.manifest.get(key)
        if directory is not None and os.path.isdir(directory) and is_inside(directory, self.source_root):
            return directory
        self.reporter.warning(
            "Module source not resolved",
            f"module {name}: source {source} not resolved (run terraform init to "
            "download it); its outputs are unknown",
            attribute.pos,
        )
        return None

    def _load_blocks(self, module: Module) -> None:
        try:
            files = self.load_files(module.directory)
        except Exception as error:  # the loader's ConfigSyntaxError or an OS error
            self.reporter.add(
                Diagnostic(
                    "error",
                    "Failed to load configuration",
                    getattr(error, "message", str(error)),
                    getattr(error, "file", module.directory),
                    getattr(error, "line", None),
                    getattr(error, "column", None),
                )
            )
            module.loaded = False
            return
        for parsed in files:
            for block in parsed.body.blocks:
                self._register(module, block)

    def _register(self, module: Module, block: syntax_nodes.Block) -> None:
        kind, labels = block.type, block.labels
        if kind == "locals":
            for name, attribute in block.body.attributes.items():
                if name in module.locals:
                    self.reporter.error(
                        "Duplicate local value definition",
                        f"a local value named {name!r} was already defined",
                        attribute.pos,
                    )
                else:
                    module.locals[name] = attribute
            return
        targets = {
            "variable": (module.variables, 1),
            "output": (module.outputs, 1),
            "module": (module.calls, 1),
            "resource": (module.resources, 2),
            "data": (module.data, 2),
            "check": (module.checks, 1),
        }
        if kind not in targets:
            return  # terraform, provider, moved, import, removed, ephemeral: no values of ours
        table, label_count = targets[kind]
        if len(labels) != label_count:
            self.reporter.error("Invalid block", f"a {kind} block needs {label_count} label(s)", block.pos)
            return
        name = ".".join(labels)
        if name in table:
            self.reporter.error(
                f"Duplicate {kind} definition", f"{kind} {name!r} is defined twice", block.pos
            )
            return
        table[name] = block
