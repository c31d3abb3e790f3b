"""What a policy revision says (its Rego version, modules, data and enforcement level), and the one check
of that content when it comes from untrusted input. Authoring stores it; the engine adapter runs it."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from policies_app import rego
from policies_app.choices import Enforcement, RegoVersion
from policies_app.deployments.requirements import RequirementDeclarationError, declared_requirements
from policies_app.errors import Invalid
from policies_app.models import PolicyRevision
from policies_app.models.policies import is_test_module


@dataclass(frozen=True)
class PolicyContent:
    """What a revision says. Two saves with the same content make one revision."""

    rego_version: str
    modules: tuple[tuple[str, str], ...]  # (filename, source), sorted by filename; tests included
    data: Any = None
    enforcement: str = Enforcement.HARD_MANDATORY

    @classmethod
    def of_revision(cls, revision: PolicyRevision) -> PolicyContent:
        return cls(
            rego_version=str(revision.rego_version),
            modules=tuple(sorted((m.filename, m.source) for m in revision.modules.all())),
            data=revision.data,
            enforcement=str(revision.enforcement),
        )

    @property
    def policy_modules(self) -> tuple[rego.PolicyModule, ...]:
        return tuple(
            rego.PolicyModule(name, source) for name, source in self.modules if not is_test_module(name)
        )

    @property
    def test_modules(self) -> tuple[rego.PolicyModule, ...]:
        return tuple(rego.PolicyModule(name, source) for name, source in self.modules if is_test_module(name))

    def engine_source(self, key: str, name: str) -> rego.PolicySource:
        # Plain str everywhere: the engine worker unpickles this and must not need Django's classes.
        return rego.PolicySource(
            key=key,
            name=str.__str__(name),
            rego_version=str.__str__(self.rego_version),
            modules=self.policy_modules,
            data=self.data,
        )


def _module_filename_problem(filename: Any) -> str | None:
    if not isinstance(filename, str) or not filename.strip():
        return "a file name such as main.rego is required."
    if "\\" in filename or filename.startswith("/") or any(ord(char) < 32 for char in filename):
        return f"{filename!r} must be a relative path with / between folders, such as lib/helpers.rego."
    if len(filename) > 500:
        return "the name is longer than 500 characters."
    if (
        any(part in ("", ".", "..") for part in filename.split("/"))
        or posixpath.normpath(filename) != filename
    ):
        return f"{filename!r} must not have empty, '.' or '..' parts."
    if not filename.endswith(".rego"):
        return f"{filename} must end with .rego."
    return None


def validated_content(
    rego_version: Any, modules: Any, data: Any, enforcement: Any = Enforcement.HARD_MANDATORY
) -> PolicyContent:
    """The content of a revision from untrusted input; Invalid names each field that is wrong."""
    problems: dict[str, list[str]] = {}
    if rego_version not in RegoVersion.values:
        problems["rego_version"] = [f"Must be one of {', '.join(RegoVersion.values)}."]
    if enforcement not in Enforcement.values:
        problems["enforcement"] = [f"Must be one of {', '.join(Enforcement.values)}."]
    if data is not None and not isinstance(data, dict):
        problems["data"] = ["Policy data must be a JSON object (it becomes data.*)."]
    module_problems: list[str] = []
    if not isinstance(modules, (list, tuple)) or not modules:
        module_problems.append("At least one Rego module is required.")
        modules = []
    seen: set[str] = set()
    for position, module in enumerate(modules):
        filename = module.get("filename") if isinstance(module, dict) else None
        source = module.get("source") if isinstance(module, dict) else None
        problem = _module_filename_problem(filename)
        if problem:
            module_problems.append(f"modules[{position}].filename: {problem}")
        elif filename in seen:
            module_problems.append(f"modules[{position}].filename: {filename} is given twice.")
        if not isinstance(source, str) or not source.strip():
            module_problems.append(f"modules[{position}].source: the module is empty.")
        seen.add(filename)
    if modules and not module_problems and all(is_test_module(name) for name in seen):
        module_problems.append("Only tests (*_test.rego) were given: the policy itself needs a module.")
    if not module_problems:
        try:  # what the policy says clears it, read as the deployment page will read it
            declared_requirements(((m["filename"], m["source"]) for m in modules), data)
        except RequirementDeclarationError as problem:
            module_problems.append(f"requirements: {problem}")
    if module_problems:
        problems["modules"] = module_problems
    if problems:
        raise Invalid(problems)
    return PolicyContent(
        rego_version=str(rego_version),
        modules=tuple(sorted((m["filename"], m["source"]) for m in modules)),
        data=data,
        enforcement=str(enforcement),
    )
