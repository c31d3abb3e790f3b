"""Policy changes checked on the pull request: a push to a branch other than the one a repository's
policies follow (push_webhooks.py) records a PolicyBranchCheck and wakes a worker, which

1. reads, at the pushed commit, the folder of every policy that follows the repository (mirrors.py,
   through sources.read_repository_folder: the same bounds and guards as a sync);
2. for each policy the branch changes (its content differs from the revision in force), compiles it,
   runs its tests and replays it over the recorded inputs of recent deployments;
3. reports to the pull (merge) request: a commit status and a comment (review_reports.py).

Nothing is stored as a revision: the branch is not the policy until it is merged and synced.

The replay runs as the platform (no user asked for it): over the deployments of the environments each
policy applies to, as replay.replay_content says. What leaves the platform is counts and ids only: how
many tests passed and the failing tests' names, how many deployments were replayed, their decisions
before and after, and the ids (links) of those whose decision changes. No message and no input value
is reported, so a sensitive value of an input cannot reach the forge (docs/security.md).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from policies_app import wakeups
from policies_app.choices import ReplayStatus, ReportState
from policies_app.errors import Busy, Invalid, Unavailable
from policies_app.models import ApprovalPolicy, PolicyBranchCheck, PolicyRepository
from policies_app.policies.content import PolicyContent
from policies_app.policies.engine import require_compiles, run_content_tests
from policies_app.policies.git.folders import FolderError, choose
from policies_app.policies.git.mirrors import GitSourceError
from policies_app.policies.git.review_reports import Report, ReportFailed, refusal_to_report, send_report
from policies_app.policies.git.sources import declared_content, field_errors, read_repository_folder
from policies_app.policies.git.sync_clock import SyncClock, SyncTookTooLong
from policies_app.policies.replay import replay_content

logger = logging.getLogger(__name__)

_FAILING_NAMED = 10  # failing tests named per policy in the report
_DEPLOYMENTS_NAMED = 20  # changed deployments linked per policy in the report


def record_branch_check(repository: PolicyRepository, branch: str, commit: str) -> PolicyBranchCheck:
    """The check of ``commit`` pushed to ``branch``, recorded and a worker woken (once per commit: the
    same push delivered again, or to several policies' webhooks, finds the check already recorded)."""
    existing = PolicyBranchCheck.objects.filter(repository=repository, commit=commit).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            check = PolicyBranchCheck.objects.create(repository=repository, branch=branch, commit=commit)
            wakeups.wake("policies_app.tasks.branch_check_task", check.pk)
    except IntegrityError:  # the same push delivered twice at once
        return PolicyBranchCheck.objects.get(repository=repository, commit=commit)
    return check


def run_branch_check(check_id: int) -> None:
    """Run a queued check (a task delivered twice runs it once), then send its report if still due."""
    started = PolicyBranchCheck.objects.filter(pk=check_id, status=ReplayStatus.QUEUED).update(
        status=ReplayStatus.RUNNING, started_at=timezone.now()
    )
    if started:
        check = PolicyBranchCheck.objects.select_related("repository").get(pk=check_id)
        try:
            summary = check_commit(check.repository, check.commit)
        except (Busy, Unavailable):
            # The engine could not take the work now: nothing was decided, so the check waits for the sweep
            # to send it again rather than report a failure the branch did not cause.
            PolicyBranchCheck.objects.filter(pk=check_id).update(
                status=ReplayStatus.QUEUED, started_at=None, enqueued_at=timezone.now()
            )
            return
        except Exception as problem:  # noqa: BLE001 - a failed check is recorded (and reported), never left running
            logger.exception("branch check %s failed", check_id)
            PolicyBranchCheck.objects.filter(pk=check_id).update(
                status=ReplayStatus.FAILED,
                passed=False,
                error=f"the check could not run: {type(problem).__name__}",
                finished_at=timezone.now(),
            )
        else:
            PolicyBranchCheck.objects.filter(pk=check_id).update(
                status=ReplayStatus.DONE,
                passed=summary["passed"],
                summary=summary,
                finished_at=timezone.now(),
            )
    report_branch_check(check_id)


def check_commit(repository: PolicyRepository, commit: str) -> dict[str, Any]:
    """What the commit makes of every policy that follows the repository: counts and ids only."""
    by_path: dict[str, list[ApprovalPolicy]] = defaultdict(list)
    for policy in ApprovalPolicy.objects.filter(repository=repository).select_related(
        "active_revision", "repository"
    ):
        by_path[policy.repository_path].append(policy)
    clock = SyncClock()
    entries: list[dict[str, Any]] = []
    for path, policies in sorted(by_path.items()):
        try:
            folder = read_repository_folder(repository, path, commit, clock)
        except (GitSourceError, FolderError, SyncTookTooLong) as problem:
            error = _error_text(problem)
            entries.extend(_entry(policy, "error", error=error) for policy in policies)
            continue
        for policy in policies:
            entries.append(_check_policy(policy, folder.policies, clock))
    passed = all(entry["state"] != "error" and entry.get("passed", True) for entry in entries)
    return {"passed": passed, "policies": entries}


def _check_policy(policy: ApprovalPolicy, declared: dict[str, Any], clock: SyncClock) -> dict[str, Any]:
    in_force = policy.active_revision or policy.latest_revision
    try:
        content = declared_content(
            choose(declared, policy.declared_name, policy.name),
            str(in_force.rego_version) if in_force else "v1",
        )
        if in_force is not None and PolicyContent.of_revision(in_force) == content:
            return _entry(policy, "unchanged")
        clock.require_time(f"checking {policy.name}")
        require_compiles(policy.name, content)
        clock.require_time(f"running the tests of {policy.name}")
    except (FolderError, Invalid, SyncTookTooLong) as problem:
        return _entry(policy, "error", error=_error_text(problem))
    report = run_content_tests(policy.name, content)
    results = report.results
    tests = {
        "total": len(results),
        "passed": sum(result.outcome == "pass" for result in results),
        "failed": sum(result.outcome == "fail" for result in results),
        "errored": sum(result.outcome == "error" for result in results) + (report.error is not None),
        "failing": [result.name for result in results if result.outcome in ("fail", "error")][
            :_FAILING_NAMED
        ],
    }
    replayed = replay_content(policy, content, settings.POLICY_BRANCH_CHECK_REPLAY_LIMIT)
    replay = {
        "replayed": replayed["replayed"],
        "changed": replayed["changed_count"],
        "policy_errors": replayed["policy_errors"],
        "before": replayed["counts"]["before"],
        "after": replayed["counts"]["after"],
        # Ids only: the entries' messages stay here (they are scrubbed, but the report needs none of them).
        "deployments": [entry["deployment"] for entry in replayed["changed"]][:_DEPLOYMENTS_NAMED],
    }
    passed = report.passed and replay["policy_errors"] == 0
    return _entry(policy, "checked", passed=passed, tests=tests, replay=replay)


def _entry(policy: ApprovalPolicy, state: str, **details: Any) -> dict[str, Any]:
    return {
        "policy": policy.pk,
        "name": policy.name,
        "path": policy.repository_path,
        "state": state,
        **details,
    }


def _error_text(problem: Exception) -> str:
    return "; ".join(f"{field}: {' '.join(texts)}" for field, texts in field_errors(problem).items())


# ------------------------------------------------------------------------------------------ reporting


def report_branch_check(check_id: int) -> None:
    """Send a finished check's report once (a conditional update claims it); a failure is recorded."""
    claimed = PolicyBranchCheck.objects.filter(
        pk=check_id,
        report_state=ReportState.PENDING,
        status__in=(ReplayStatus.DONE, ReplayStatus.FAILED),
    ).update(report_state=ReportState.SENDING)
    if not claimed:
        return
    check = PolicyBranchCheck.objects.select_related("repository").get(pk=check_id)
    refusal = refusal_to_report(check.repository)
    number = None
    try:
        if refusal is not None:
            raise ReportFailed(f"not reported: {refusal}")
        number = send_report(check.repository, report_of(check), check.change_request)
    except ReportFailed as failure:
        logger.warning("branch check %s not reported: %s", check_id, failure)
        PolicyBranchCheck.objects.filter(pk=check_id).update(
            report_state=ReportState.FAILED, report_error=str(failure), reported_at=timezone.now()
        )
        return
    PolicyBranchCheck.objects.filter(pk=check_id).update(
        report_state=ReportState.SENT, report_error="", change_request=number, reported_at=timezone.now()
    )


def report_of(check: PolicyBranchCheck) -> Report:
    """The status's one line and the comment, from the check's counts and ids."""
    entries = (check.summary or {}).get("policies", [])
    passed = bool(check.passed)
    platform = settings.PLATFORM_URL
    target = f"{platform}/policies/{entries[0]['policy']}/" if entries else f"{platform}/policies/"
    verdict = "passed" if passed else "failed"
    if check.error:
        description = check.error
    elif not entries:
        description = "no policy follows this repository"
    else:
        checked = [entry for entry in entries if entry["state"] == "checked"]
        tests = (
            sum(entry["tests"]["passed"] for entry in checked),
            sum(entry["tests"]["total"] for entry in checked),
        )
        changed = sum(entry["replay"]["changed"] for entry in checked)
        replayed = sum(entry["replay"]["replayed"] for entry in checked)
        errors = sum(entry["state"] == "error" for entry in entries)
        description = (
            f"{len(checked)} of {len(entries)} policies changed; tests {tests[0]}/{tests[1]} passed; "
            f"{changed} of {replayed} replayed decisions change"
            + (f"; {errors} policies cannot be read" if errors else "")
        )
    lines = [f"### Policy check of `{check.branch}` at `{check.commit[:12]}`: {verdict}", ""]
    if check.error:
        lines.append(check.error)
    if entries:
        lines += ["| Policy | State | Tests | Replay over recent deployments |", "|---|---|---|---|"]
        lines += [_row(entry, platform) for entry in entries]
    lines += [
        "",
        f"Decisions before → after are counts over the deployments each policy applies to. [Details]({target})",
    ]
    return Report(check.commit, check.branch, passed, description, "\n".join(lines), target)


def _row(entry: dict[str, Any], platform: str) -> str:
    name = f"[{_cell(entry['name'])}]({platform}/policies/{entry['policy']}/)"
    if entry["state"] != "checked":
        return f"| {name} | {entry['state']} | | {_cell(entry.get('error', ''))} |"
    tests = entry["tests"]
    test_text = f"{tests['passed']}/{tests['total']} passed"
    if tests["failing"]:
        test_text += ": failing " + ", ".join(f"`{_cell(name)}`" for name in tests["failing"])
    if tests["errored"]:
        test_text += f" ({tests['errored']} errors)"
    replay = entry["replay"]
    shifts = ", ".join(
        f"{decision} {replay['before'][decision]}→{replay['after'][decision]}"
        for decision in replay["before"]
        if replay["before"][decision] or replay["after"][decision]
    )
    links = ", ".join(f"[#{pk}]({platform}/deployments/{pk}/)" for pk in replay["deployments"])
    replay_text = f"{replay['replayed']} replayed, {replay['changed']} decisions change"
    replay_text += f" ({shifts})" if shifts else ""
    replay_text += f": {links}" if links else ""
    if replay["policy_errors"]:
        replay_text += f"; the policy errors on {replay['policy_errors']}"
    state = "passed" if entry["passed"] else "failed"
    return f"| {name} | {state} | {test_text} | {replay_text} |"


def _cell(text: str) -> str:
    """Text in a Markdown table cell: one line, no column breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")[:300]


# ------------------------------------------------------------------------------------------ resending


def resend_lost_branch_checks() -> list[int]:
    """Periodic: wake a worker again for checks still queued, or done with their report still pending,
    long after their task was sent. Returns their ids."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS)
    lost = PolicyBranchCheck.objects.filter(enqueued_at__lt=resend_before).filter(
        status=ReplayStatus.QUEUED
    ) | PolicyBranchCheck.objects.filter(
        enqueued_at__lt=resend_before,
        status__in=(ReplayStatus.DONE, ReplayStatus.FAILED),
        report_state=ReportState.PENDING,
    )
    resent = list(lost.order_by("pk").values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH])
    for check_id in resent:
        PolicyBranchCheck.objects.filter(pk=check_id).update(enqueued_at=now)
        wakeups.wake("policies_app.tasks.branch_check_task", check_id)
    if resent:
        logger.warning("resent %d branch checks: %s", len(resent), resent)
    return resent
