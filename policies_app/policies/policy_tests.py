"""Running a policy's tests on demand (``manage.py policy_test``, ``POST /api/v1/policies/{id}/test/``):
the tests of one of its revisions, each test's result and the line coverage of its modules. Tests also
run, and are recorded, whenever a revision is saved or synced (authoring.store_revision)."""

from __future__ import annotations

from typing import Any

from policies_app import rego
from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy, PolicyRevision
from policies_app.policies.content import PolicyContent
from policies_app.policies.engine import run_content_tests


def revision_to_test(policy: ApprovalPolicy, number: int | None = None) -> PolicyRevision:
    """The revision ``number`` of the policy, or its newest."""
    revisions = policy.revisions.prefetch_related("modules").select_related("policy")
    revision = (
        revisions.filter(number=number).first()
        if number is not None
        else revisions.order_by("-number").first()
    )
    if revision is None:
        raise Invalid({"revision": [f"{policy.name} has no revision {number}."]})
    return revision


def run_revision_tests(revision: PolicyRevision, *, pool_name: str | None = None) -> rego.PolicyTestReport:
    return run_content_tests(revision.policy.name, PolicyContent.of_revision(revision), pool_name=pool_name)


def report_view(revision: PolicyRevision, report: rego.PolicyTestReport) -> dict[str, Any]:
    """The report as the API and the pages show it."""
    content = PolicyContent.of_revision(revision)
    return {
        "policy": revision.policy.name,
        "revision": revision.number,
        "test_files": [module.filename for module in content.test_modules],
        **report.as_dict(),
    }


def report_lines(revision: PolicyRevision, report: rego.PolicyTestReport) -> list[str]:
    """The report as ``opa test`` prints it, for the command line."""
    lines = [f"{revision.policy.name} r{revision.number}"]
    if report.error is not None:
        return [*lines, f"ERROR {report.error}"]
    if not report.results:
        return [*lines, "no tests (no test_ rule in a *_test.rego module)"]
    for result in report.results:
        where = f"{result.file}:{result.line}"
        label = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skip": "SKIPPED"}[result.outcome]
        detail = f": {result.message}" if result.message else ""
        lines.append(
            f"{where}: {result.package}.{result.name}: {label} ({result.duration_ms:.1f} ms){detail}"
        )
    counts = {
        outcome: sum(r.outcome == outcome for r in report.results)
        for outcome in ("pass", "fail", "error", "skip")
    }
    lines.append("-" * 60)
    lines.append(
        f"PASS: {counts['pass']}/{len(report.results)}"
        + "".join(f", {name.upper()}: {counts[name]}" for name in ("fail", "error", "skip") if counts[name])
    )
    for file in report.coverage:
        missed = _ranges(file.not_covered)
        lines.append(
            f"coverage {file.file}: {file.percent:.1f}%" + (f" (not covered: {missed})" if missed else "")
        )
    lines.append(f"coverage: {report.coverage_percent:.1f}%")
    return lines


def _ranges(lines: tuple[int, ...]) -> str:
    """``(3, 4, 5, 9)`` -> "3-5, 9"."""
    parts: list[str] = []
    for line in lines:
        if parts and parts[-1][1] == line - 1:
            parts[-1][1] = line
        else:
            parts.append([line, line])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts)
