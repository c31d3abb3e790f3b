"""Pages of approval policies: the list, a policy (its source, revisions, tests, "Try it" and replays),
a revision with its test coverage, two revisions side by side, a replay's result; syncing and
publishing. The editor and the catalog are in policy_editor_views.py."""

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from policies_app import access
from policies_app.choices import ReplayStatus
from policies_app.deployments import waivers
from policies_app.errors import DomainError
from policies_app.models import ApprovalPolicy, PolicyBranchCheck, PolicyModule, PolicyReplay, PolicyRevision
from policies_app.policies import replay
from policies_app.policies.authoring import publish_revision, refusal_to_activate
from policies_app.policies.content import PolicyContent
from policies_app.policies.engine import try_revision
from policies_app.policies.git import sources
from policies_app.policies.revision_diff import diff_contents
from policies_app.web.policy_forms import DiffForm, DryRunForm, ReplayForm

RECENT_DEPLOYMENTS = 50  # offered to "Try it"


@dataclass(frozen=True)
class RevisionState:
    """Where a revision stands, as the pages show it."""

    label: str
    tone: str  # a decision whose colour it takes (the tone filter): allow, deny, pending; or neutral
    reason: str = ""


def revision_state(revision: PolicyRevision, active_revision_id: int | None) -> RevisionState:
    if revision.pk == active_revision_id:
        return RevisionState("active", "allow")
    refusal = refusal_to_activate(revision)
    if refusal is not None:
        return RevisionState("not activated", "deny", f"Recorded but not activated: {refusal.message}.")
    if revision.draft:
        return RevisionState("draft", "pending", "Saved as a draft: try it, replay it, then publish it.")
    return RevisionState("inactive", "neutral")


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = (
        access.visible_policies(request.user)
        .select_related("active_revision", "repository")
        .prefetch_related("projects", "templates", "revisions")
    )
    context = {"policies": policies, "may_author": access.may_author_policies(request.user)}
    return render(request, "web/policy_list.html", context)


def _visible_policy(request: HttpRequest, pk: int) -> ApprovalPolicy:
    return get_object_or_404(access.visible_policies(request.user).select_related("repository"), pk=pk)


def _revisions(policy: ApprovalPolicy) -> list[PolicyRevision]:
    modules = Prefetch("modules", queryset=PolicyModule.objects.order_by("filename"))
    revisions = list(policy.revisions.select_related("created_by").prefetch_related(modules))
    for revision in revisions:
        revision.state = revision_state(revision, policy.active_revision_id)
        revision.data_json = (
            "" if revision.data is None else json.dumps(revision.data, indent=2, sort_keys=True)
        )
    return revisions


def try_choices(request: HttpRequest, policy: ApprovalPolicy) -> list[tuple[int, str]]:
    """Recent deployments the user may see, of environments the policy applies to: their recorded
    inputs can be tried."""
    deployments = replay.recorded_deployments(
        policy, RECENT_DEPLOYMENTS, access.visible_deployments(request.user).select_related("environment")
    )
    return [
        (
            deployment.pk,
            f"#{deployment.pk} {deployment.environment.name} {deployment.type} "
            f"({deployment.decision or deployment.status}, {deployment.created_at:%Y-%m-%d %H:%M})",
        )
        for deployment in deployments
    ]


@login_required
@require_http_methods(["GET", "POST"])
def policy_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The policy, and "Try it": a revision on a pasted input or on a past deployment's recorded input."""
    policy = _visible_policy(request, pk)
    if request.method != "POST":
        return _render_policy(request, policy)
    revisions = _revisions(policy)
    form = DryRunForm(
        request.POST, revisions=[r.number for r in revisions], deployments=try_choices(request, policy)
    )
    if not form.is_valid():
        return _render_policy(request, policy, revisions=revisions, form=form, status=400)
    revision = next(r for r in revisions if r.number == form.cleaned_data["revision"])
    try:
        input_json, secrets = replay.input_to_try(
            request.user, form.cleaned_data.get("deployment") or None, form.cleaned_data.get("input_json")
        )
        result = try_revision(revision, input_json, explain=True, secrets=secrets)
    except DomainError as refusal:
        return _render_policy(request, policy, revisions=revisions, form=form, try_error=refusal.message)
    return _render_policy(request, policy, revisions=revisions, form=form, result=result)


def _render_policy(
    request: HttpRequest,
    policy: ApprovalPolicy,
    *,
    revisions: list[PolicyRevision] | None = None,
    form: DryRunForm | None = None,
    result: dict[str, Any] | None = None,
    try_error: str = "",
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    revisions = revisions if revisions is not None else _revisions(policy)
    numbers = [revision.number for revision in revisions]
    active = next((r for r in revisions if r.pk == policy.active_revision_id), None)
    newest = revisions[0] if revisions else None
    if form is None:
        initial = {"revision": (active or newest).number if newest else None}
        form = DryRunForm(initial=initial, revisions=numbers, deployments=try_choices(request, policy))
    may_author = access.may_author_policies(request.user)
    applies_nowhere = not replay.environments_applying(policy).exists()
    context = {
        "policy": policy,
        "revisions": revisions,
        "active": active,
        "newest": newest,
        "form": form,
        "result": result,
        "dry_run_error": try_error,
        "error": error,
        "may_author": may_author,
        "diff_form": DiffForm(revisions=numbers, initial=_diff_initial(numbers)),
        "replay_form": ReplayForm(
            revisions=numbers,
            environments=_replay_environments(request, applies_nowhere),
            initial={"revision": numbers[0] if numbers else None},
        ),
        "replays": _replays(policy) if replay.may_read_replays(request.user) else None,
        # Pull request checks read like replays: the same readers, counts and deployment ids only.
        "branch_checks": _branch_checks(policy)
        if policy.repository_id and replay.may_read_replays(request.user)
        else None,
        # Where it is set aside now, among the environments and projects the user sees.
        "waivers": list(waivers.visible_waivers(request.user).filter(waivers.in_force(), policy=policy)),
        "applies_nowhere": applies_nowhere,
    }
    return render(request, "web/policy_detail.html", context, status=status)


def _diff_initial(numbers: list[int]) -> dict[str, int]:
    return {"old": numbers[1], "new": numbers[0]} if len(numbers) > 1 else {}


def _replay_environments(request: HttpRequest, applies_nowhere: bool) -> list[tuple[int, str]]:
    """What a policy attached nowhere yet may be replayed over (nothing to choose otherwise)."""
    if not applies_nowhere or not access.may_author_policies(request.user):
        return []
    return [(environment.pk, str(environment)) for environment in replay.environments_to_offer(request.user)]


def _replays(policy: ApprovalPolicy) -> list[PolicyReplay]:
    replays = PolicyReplay.objects.filter(revision__policy=policy).select_related("revision", "requested_by")
    return list(replays[:10])


def _branch_checks(policy: ApprovalPolicy) -> list[dict[str, Any]]:
    """The repository's latest branch checks, each with what it found of this policy."""
    checks = PolicyBranchCheck.objects.filter(repository=policy.repository_id)[:10]
    return [
        {
            "check": check,
            "mine": next(
                (e for e in (check.summary or {}).get("policies", []) if e.get("policy") == policy.pk), None
            ),
        }
        for check in checks
    ]


@login_required
@require_GET
def policy_revision(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """One revision: its modules with the lines its tests covered, its data and its tests."""
    policy = _visible_policy(request, pk)
    revision = next((r for r in _revisions(policy) if r.number == number), None)
    if revision is None:
        raise Http404("No such revision.")
    coverage = {
        item["file"]: (set(item["covered"]), set(item["not_covered"]))
        for item in ((revision.tests_report or {}).get("coverage") or {}).get("files", [])
    }
    modules = []
    for module in revision.modules.all():
        covered, missed = coverage.get(module.filename, (set(), set()))
        lines = [
            (number, text, "covered" if number in covered else "missed" if number in missed else "")
            for number, text in enumerate(module.source.splitlines(), start=1)
        ]
        modules.append({"filename": module.filename, "is_test": module.is_test, "lines": lines})
    data = None if revision.data is None else json.dumps(revision.data, indent=2, sort_keys=True)
    context = {"policy": policy, "revision": revision, "modules": modules, "data": data}
    return render(request, "web/policy_revision.html", context)


@login_required
@require_GET
def policy_diff(request: HttpRequest, pk: int) -> HttpResponse:
    policy = _visible_policy(request, pk)
    revisions = {revision.number: revision for revision in _revisions(policy)}
    form = DiffForm(request.GET, revisions=sorted(revisions, reverse=True))
    if not form.is_valid():
        return render(request, "web/policy_diff.html", {"policy": policy, "form": form}, status=400)
    old, new = revisions[form.cleaned_data["old"]], revisions[form.cleaned_data["new"]]
    files = diff_contents(PolicyContent.of_revision(old), PolicyContent.of_revision(new))
    context = {"policy": policy, "form": form, "old": old, "new": new, "files": files}
    return render(request, "web/policy_diff.html", context)


def _refused(request: HttpRequest, policy: ApprovalPolicy, refusal: DomainError) -> HttpResponse:
    """A refused action on a policy: its page again, saying why, with the refusal's status."""
    return _render_policy(request, policy, error=refusal.message, status=refusal.http_status)


@login_required
@require_POST
def policy_sync(request: HttpRequest, pk: int) -> HttpResponse:
    """Sync now; a failed sync is recorded on the policy, and its page shows why. With a branch, tag or
    commit, that revision is synced as a draft of the policy instead (its failure is only shown)."""
    policy = _visible_policy(request, pk)
    branch = request.POST.get("revision", "").strip()
    try:
        outcomes = sources.sync_policy(policy, user=request.user, revision=branch or None)
    except DomainError as refusal:
        return _refused(request, policy, refusal)
    mine = next(outcome for outcome in outcomes if outcome.policy.pk == policy.pk)
    if branch and mine.errors:
        problems = "; ".join(f"{field}: {' '.join(texts)}" for field, texts in mine.errors.items())
        return _render_policy(request, policy, error=f"Syncing {branch} failed: {problems}", status=400)
    return redirect("web:policy-detail", pk=policy.pk)


@login_required
@require_POST
def policy_publish(request: HttpRequest, pk: int) -> HttpResponse:
    policy = _visible_policy(request, pk)
    revision = policy.revisions.filter(number=request.POST.get("revision") or 0).first()
    if revision is None:
        raise Http404("No such revision.")
    try:
        publish_revision(policy, revision, request.user)
    except DomainError as refusal:
        return _refused(request, policy, refusal)
    return redirect("web:policy-detail", pk=policy.pk)


@login_required
@require_POST
def policy_replay_start(request: HttpRequest, pk: int) -> HttpResponse:
    policy = _visible_policy(request, pk)
    numbers = list(policy.revisions.order_by("-number").values_list("number", flat=True))
    applies_nowhere = not replay.environments_applying(policy).exists()
    form = ReplayForm(
        request.POST, revisions=numbers, environments=_replay_environments(request, applies_nowhere)
    )
    if not form.is_valid():
        problems = "; ".join(problem for problems in form.errors.values() for problem in problems)
        return _render_policy(request, policy, error=problems, status=400)
    try:
        started = replay.start_replay(
            policy,
            user=request.user,
            revision_number=form.cleaned_data["revision"],
            limit=form.cleaned_data["limit"],
            environments=form.cleaned_data["environments"],
        )
    except DomainError as refusal:
        return _refused(request, policy, refusal)
    return redirect("web:policy-replay", pk=policy.pk, replay_pk=started.pk)


@login_required
@require_GET
def policy_replay(request: HttpRequest, pk: int, replay_pk: int) -> HttpResponse:
    policy = _visible_policy(request, pk)
    try:
        replay.require_replay_reader(request.user)
    except DomainError as refusal:
        return _refused(request, policy, refusal)
    found = get_object_or_404(
        PolicyReplay.objects.select_related("revision", "requested_by"), pk=replay_pk, revision__policy=policy
    )
    context = {
        "policy": policy,
        "replay": found,
        "result": replay.result_shown_to(request.user, found.result),
        "running": found.status in (ReplayStatus.QUEUED, ReplayStatus.RUNNING),
        "state": revision_state(found.revision, policy.active_revision_id),
        "may_author": access.may_author_policies(request.user),
    }
    return render(request, "web/policy_replay.html", context)
