"""The layout's rules, read from the source (the AST), so that a change that breaks one fails here with
the offending module named: no import circle in policies_app, services never import the tasks (they wake
workers by a task's name through wakeups.py, and every name given is a registered task), no module shadows
the standard library, and no module grows past ~400 lines without saying why at its top."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.processes import ROOT

APP = "policies_app"
TASKS = f"{APP}.tasks"
# The modules that may import the tasks: the tasks themselves, and the app config that registers them.
MAY_IMPORT_TASKS = {TASKS, f"{APP}.apps"}
LONG = 400
WHY_LONG = "Why this module is long:"


# Being split on another branch (issue 15): remove the entry once the split is merged.
@dataclass(frozen=True)
class Import:
    target: str  # the module imported, resolved to a module of the package
    line: int
    lazy: bool  # inside a function, a class or an ``if`` (TYPE_CHECKING): not at the module's top level


@cache
def modules() -> dict[str, Path]:
    """Every module of policies_app by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((ROOT / APP).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str) -> str | None:
    """The module a dotted name is in: itself, else the nearest enclosing module of the package."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports_of(module: str) -> tuple[Import, ...]:
    """What a module imports from policies_app, at module level and inside functions, TYPE_CHECKING
    blocks included: ``from x import y`` is an import of the module x.y when there is one, else of x."""
    path = modules()[module]
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(node) for node in tree.body}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            target = _resolve(name) if name.split(".")[0] == APP else None
            if target is not None and target != module:
                found.append(Import(target, node.lineno, lazy=id(node) not in top_level))
    return tuple(found)


def import_graph() -> dict[str, set[str]]:
    return {module: {i.target for i in imports_of(module)} for module in modules()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan), as module -> ... -> module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_circle_in(graph, group) for group in groups]


def _circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest circle back to the group's first module, by breadth-first search inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & group):
                if successor == start:
                    return [*paths[node], start]
                if successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no circle in {group}")  # pragma: no cover - a strongly connected group has one


def _described(circle: list[str]) -> str:
    steps = []
    for module, target in zip(circle, circle[1:], strict=False):
        where = next(i for i in imports_of(module) if i.target == target)
        steps.append(
            f"  {module} (line {where.line}{', not at module level' if where.lazy else ''}) imports {target}"
        )
    return "\n".join(steps)


def test_no_module_of_policies_app_is_part_of_an_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n\n".join(_described(circle) for circle in found)


def test_the_circle_finder_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_but_the_tasks_and_the_app_config_imports_the_tasks():
    offenders = [
        f"{module} line {i.line}{' (not at module level)' if i.lazy else ''}"
        for module in modules()
        if module not in MAY_IMPORT_TASKS
        for i in imports_of(module)
        if i.target == TASKS
    ]
    assert offenders == [], "wake a worker with wakeups.wake(task name) instead: " + ", ".join(offenders)
    assert any(i.target == TASKS for i in imports_of(f"{APP}.apps")), "apps.py registers the tasks"


def wake_calls() -> list[tuple[str, int, ast.expr]]:
    """Every call of wakeups.wake in policies_app: (module, line, the task name given)."""
    calls = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "wake")
                or (isinstance(node.func, ast.Name) and node.func.id == "wake")
            ):
                calls.append((module, node.lineno, node.args[0] if node.args else None))
    return calls


def test_every_task_a_service_wakes_is_a_registered_task():
    from celery import current_app

    calls = wake_calls()
    callers = {module for module, _, _ in calls}
    # Each domain that owes work wakes its worker through the helper.
    assert {
        f"{APP}.deployments.lifecycle",
        f"{APP}.notifications.approval_emails",
        f"{APP}.notifications.webhooks",
        f"{APP}.policies.replay",
        f"{APP}.policies.git.push_webhooks",
        f"{APP}.policies.git.branch_checks",
        f"{APP}.accounts.users",
    } <= callers
    for module, line, name in calls:
        assert isinstance(name, ast.Constant) and isinstance(name.value, str), (
            f"{module} line {line}: give wake() the task's name as a string, so that it can be checked here"
        )
        assert name.value in current_app.tasks, f"{module} line {line}: no task named {name.value!r}"


def test_only_wakeups_sends_a_task():
    """Sending a task by hand (``.delay``, ``.apply_async``, ``send_task``) skips the after-commit send
    and the tolerance of a broker outage."""
    sends = [
        f"{module} line {node.lineno}: .{node.func.attr}"
        for module, path in modules().items()
        if module != f"{APP}.wakeups"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("delay", "apply_async", "send_task")
    ]
    assert sends == []


def _python_names(root: Path) -> list[tuple[str, Path]]:
    """Each module's and package's own name under ``root`` (a folder with an __init__.py is a package;
    one without is not importable by that name ahead of the standard library)."""
    names = []
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        if path.name == "__init__.py":
            names.append((path.parent.name, path.parent))
        else:
            names.append((path.stem, path))
    return names


def test_no_module_or_package_is_named_like_a_standard_library_module():
    standard = set(sys.stdlib_module_names)
    shadowing = sorted(
        str(path.relative_to(ROOT))
        for top in ("policies_app", "policy_gate", "policy_platform", "tests", "bench")
        for name, path in _python_names(ROOT / top)
        if name in standard
    )
    assert shadowing == [], f"rename these, they shadow the standard library: {shadowing}"


def test_the_standard_library_check_sees_modules_and_packages(tmp_path):
    (tmp_path / "queue.py").write_text("")
    (tmp_path / "email").mkdir()
    (tmp_path / "email" / "__init__.py").write_text("")
    (tmp_path / "email" / "senders.py").write_text("")
    names = {name for name, _ in _python_names(tmp_path)}
    assert {"queue", "email"} <= names & set(sys.stdlib_module_names)


def long_modules() -> dict[str, int]:
    """The modules of policies_app and policy_gate over LONG lines (migrations are generated)."""
    found = {}
    for top in ("policies_app", "policy_gate"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = len(path.read_text().splitlines())
            if lines > LONG:
                found[str(path.relative_to(ROOT))] = lines
    return found


def test_a_module_over_400_lines_says_at_its_top_why_it_is_long():
    unexplained = []
    for name, lines in long_modules().items():
        docstring = ast.get_docstring(ast.parse((ROOT / name).read_text())) or ""
        if not any(line.strip().startswith(WHY_LONG) for line in docstring.splitlines()):
            unexplained.append(f"{name} ({lines} lines)")
    assert unexplained == [], (
        f"split these along a seam, or start a line of their docstring with {WHY_LONG!r}: {unexplained}"
    )
