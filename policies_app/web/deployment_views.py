"""Pages of deployments: the queue, a deployment with its plan summary, approval progress and comments,
approving, rejecting, cancelling, commenting. Who may see and do what comes from access.py and the use cases: a page the user
may not see answers 404, a refusal of a use case is shown on the page with its status (``_refused``),
and the buttons shown are exactly the actions deployments.available_actions allows."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from policies_app import access
from policies_app.choices import FINAL_STATUSES, DeploymentStatus, DeploymentType
from policies_app.deployments import comments, inbox, requirements, stored_inputs, waivers
from policies_app.deployments.approvals import available_actions, cancel_deployment, record_approval
from policies_app.deployments.lifecycle import queued_reason
from policies_app.deployments.plan_view import shown_plan_view
from policies_app.errors import DomainError, Invalid
from policies_app.models import Deployment, PolicyRevision
from policies_app.notifications.approval_emails import approvers_still_to_act
from policies_app.projects.tree import ProjectTree
from policies_app.web.forms import ApprovalForm, QueueFilterForm

QUEUE_PAGE_SIZE = 50
SORT_COLUMNS = [("-created", "Created"), ("environment", "Environment"), ("status", "Status")]
# The deployments whose page (and so whose plan) the user has opened while they waited, kept in a cookie
# signed for that user (no write to the database on a page view): the queue offers to approve those from
# the row itself. Only a convenience: approving runs the same use case and checks whatever the cookie says.
SEEN_PLANS = "seen_plans"
SEEN_PLANS_KEPT = 100
SEEN_PLANS_MAX_AGE = 7 * 24 * 3600


def _seen_plans(request: HttpRequest) -> list[int]:
    text = request.get_signed_cookie(
        SEEN_PLANS, default="", salt=f"seen-plans:{request.user.pk}", max_age=SEEN_PLANS_MAX_AGE
    )
    return [int(pk) for pk in text.split(",") if pk.isdigit()]


def _remember_seen(request: HttpRequest, response: HttpResponse, deployment: Deployment) -> None:
    seen = _seen_plans(request)
    if deployment.status != DeploymentStatus.PENDING_APPROVAL or deployment.pk in seen:
        return
    response.set_signed_cookie(
        SEEN_PLANS,
        ",".join(str(pk) for pk in [*seen, deployment.pk][-SEEN_PLANS_KEPT:]),
        salt=f"seen-plans:{request.user.pk}",
        max_age=SEEN_PLANS_MAX_AGE,
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )


@login_required
@require_GET
def deployment_queue(request: HttpRequest) -> HttpResponse:
    """ "Waiting for me" unless another view is asked for; every filter in the URL, so a view can be shared."""
    form = QueueFilterForm(request.GET)
    if form.is_valid():
        filters = form.filters()
        deployments = inbox.deployments_for(request.user, filters)
    else:
        filters = inbox.QueueFilters(view=request.GET.get("view", "waiting"))
        deployments = Deployment.objects.none()
    page = Paginator(
        deployments.select_related("environment__project", "deployer"), QUEUE_PAGE_SIZE
    ).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    without_sort = query.copy()
    without_sort.pop("sort", None)
    tabs = query.copy()
    for key in ("view", "page"):
        tabs.pop(key, None)
    seen = set(_seen_plans(request))
    rows = inbox.queue_rows(list(page.object_list))
    return render(
        request,
        "web/deployment_queue.html",
        {
            "form": form,
            "filters": filters,
            "page": page,
            "rows": rows,
            # Approving from the row: only what waits for this user, whose plan they opened, and not a
            # destroy (its approval asks for an explicit confirmation on its page).
            "quick_approve": {
                row.deployment.pk
                for row in rows
                if filters.view == "waiting"
                and row.deployment.pk in seen
                and row.deployment.type != DeploymentType.DESTROY
            },
            "query": query.urlencode(),
            "query_without_sort": without_sort.urlencode(),
            "tab_query": tabs.urlencode(),
            "views": [("waiting", "Waiting for me"), ("mine", "My deployments"), ("all", "All")],
            "narrowed_to": _narrowed_to(request, filters),
            "sort_columns": SORT_COLUMNS,
        },
    )


def _narrowed_to(request: HttpRequest, filters: inbox.QueueFilters) -> list[tuple[str, str, str]]:
    """The project and environment the queue is narrowed to, as (what, name, URL without it)."""
    narrowed = []
    for key, visible in (("project", access.visible_projects), ("environment", access.visible_environments)):
        pk = getattr(filters, key)
        if pk is not None:
            found = visible(request.user).filter(pk=pk).first()
            without = request.GET.copy()
            without.pop(key, None)
            without.pop("page", None)
            narrowed.append((key, str(found) if found else f"#{pk}", without.urlencode()))
    return narrowed


def _visible_deployment(request: HttpRequest, pk: int) -> Deployment:
    return get_object_or_404(access.visible_deployments(request.user), pk=pk)


def _live_context(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """Everything on the page that changes while the deployment moves: status, progress, actions."""
    project = deployment.environment.project
    tree = ProjectTree.around([project], with_policies=False)
    approvals = list(deployment.approvals.select_related("user"))
    acted = {approval.user_id for approval in approvals}
    actions = available_actions(request.user, deployment, tree, acted)
    evaluations = list(
        deployment.evaluations.prefetch_related(
            Prefetch("policy_revisions", queryset=PolicyRevision.objects.select_related("policy"))
        )
    )
    pending = deployment.status == DeploymentStatus.PENDING_APPROVAL
    plan = shown_plan_view(deployment)
    still_to_act = approvers_still_to_act(deployment, tree, acted) if pending else []
    return {
        "deployment": deployment,
        "project_name": tree.full_name(project),
        "approvals": approvals,
        "still_to_act": still_to_act,
        "requirements": requirements.progress_for(evaluations, approvals, still_to_act),
        "latest_evaluation": evaluations[-1] if evaluations else None,
        "older_evaluations": list(reversed(evaluations[:-1])),
        "events": deployment.events.select_related("actor"),
        "actions": actions,
        "is_destroy": deployment.type == DeploymentType.DESTROY,
        "queued_reason": queued_reason(deployment.queued_behind_id)
        if deployment.status == DeploymentStatus.QUEUED and deployment.queued_behind_id
        else "",
        "revision": deployment.revision or deployment.environment.template.revision,
        "revision_from_template": not deployment.revision and bool(deployment.environment.template.revision),
        "summary": plan.summary,
        "plan_text": plan.text,
        "version": live_version(deployment, len(approvals), len(evaluations)),
        "final": deployment.status in FINAL_STATUSES,
    }


def live_version(deployment: Deployment, approvals: int, evaluations: int) -> str:
    return f"{deployment.status}:{deployment.updated_at.timestamp()}:{approvals}:{evaluations}"


WAIVABLE_STATUSES = frozenset({DeploymentStatus.DENIED, DeploymentStatus.PENDING_APPROVAL})


def _render_deployment(
    request: HttpRequest,
    deployment: Deployment,
    *,
    form: ApprovalForm | None = None,
    error: str = "",
    status: int = 200,
    comment_body: str = "",
    comment_error: str = "",
) -> HttpResponse:
    thread = list(comments.thread(deployment))
    context = {
        **_live_context(request, deployment),
        "approval_form": form or ApprovalForm(),
        "error": error,
        "poll_ms": int(settings.DEPLOYMENT_PAGE_POLL_SECONDS * 1000),
        # A policy blocks it: an approver may set that policy aside for a while (the environment's page).
        "may_waive": deployment.status in WAIVABLE_STATUSES
        and waivers.may_grant(request.user, deployment.environment.project),
        "comments": thread,
        "removable_comments": {c.pk for c in thread if comments.may_remove(request.user, c)},
        "may_comment": comments.may_comment(request.user, deployment),
        "comment_body": comment_body,
        "comment_error": comment_error,
        "comment_max": comments.MAX_BODY,
    }
    return render(request, "web/deployment_detail.html", context, status=status)


@login_required
@require_GET
def deployment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    deployment = _visible_deployment(request, pk)
    response = _render_deployment(request, deployment)
    _remember_seen(request, response, deployment)
    return response


@login_required
@require_GET
def deployment_live(request: HttpRequest, pk: int) -> JsonResponse:
    """What the page polls: the changing part of the page, and a version to tell whether it changed."""
    deployment = _visible_deployment(request, pk)
    context = {**_live_context(request, deployment), "approval_form": ApprovalForm()}
    html = render_to_string("web/_deployment_live.html", context, request=request)
    return JsonResponse({"version": context["version"], "final": context["final"], "html": html})


@login_required
@require_POST
def deployment_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject; record_approval holds every rule (role, self-approval, still pending, once)."""
    deployment = _visible_deployment(request, pk)
    form = ApprovalForm(request.POST, destroy=deployment.type == DeploymentType.DESTROY)
    if not form.is_valid():
        problems = " ".join(error for errors in form.errors.values() for error in errors)
        return _render_deployment(request, deployment, form=form, error=problems, status=400)
    decision = form.cleaned_data["decision"]
    try:
        record_approval(deployment, request.user, decision, form.cleaned_data["comment"])
    except DomainError as refusal:
        return _refused(request, deployment, refusal, form)
    deployment.refresh_from_db()
    verb = "approved" if decision == "approve" else "rejected"
    if deployment.status == DeploymentStatus.PENDING_APPROVAL:
        outcome = "it still waits for other approvals"  # "it is now pending approval" read as no progress
    else:
        outcome = f"it is now {deployment.get_status_display().lower()}"
    messages.success(request, f"You {verb} deployment #{deployment.pk}; {outcome}.")
    if request.POST.get("back") == "queue":
        # Approved from the queue's row: back to what still waits, the next row ready for the keyboard.
        return redirect(f"{reverse('web:deployment-queue')}?view=waiting")
    return redirect("web:deployment-detail", pk=deployment.pk)


def _refused(
    request: HttpRequest, deployment: Deployment, refusal: DomainError, form: ApprovalForm | None = None
) -> HttpResponse:
    """The web's one translation of a use case's refusal: the page again, with why and the error's status."""
    deployment.refresh_from_db()
    return _render_deployment(
        request, deployment, form=form, error=refusal.message, status=refusal.http_status
    )


@login_required
@require_POST
def deployment_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """Post a comment; refused or invalid, the page again with the text kept and why beside it."""
    deployment = _visible_deployment(request, pk)
    body = request.POST.get("body", "")
    try:
        comment = comments.post_comment(request.user, deployment, body)
    except Invalid as invalid:
        problems = " ".join(invalid.errors.get("body", [invalid.message]))
        return _render_deployment(request, deployment, comment_body=body, comment_error=problems, status=400)
    except DomainError as refusal:
        return _refused(request, deployment, refusal)
    return redirect(f"{reverse('web:deployment-detail', args=[deployment.pk])}#comment-{comment.pk}")


@login_required
@require_POST
def deployment_comment_remove(request: HttpRequest, pk: int, comment_pk: int) -> HttpResponse:
    deployment = _visible_deployment(request, pk)
    try:
        comments.remove_comment(request.user, comments.comment_in(deployment, comment_pk))
    except DomainError as refusal:
        return _refused(request, deployment, refusal)
    messages.success(request, "The comment is removed.")
    return redirect(f"{reverse('web:deployment-detail', args=[deployment.pk])}#comments")


@login_required
@require_POST
def deployment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    deployment = _visible_deployment(request, pk)
    try:
        cancel_deployment(deployment, request.user)
    except DomainError as refusal:
        return _refused(request, deployment, refusal)
    messages.success(request, f"Deployment #{deployment.pk} is cancelled.")
    return redirect("web:deployment-detail", pk=deployment.pk)


@login_required
@require_GET
def evaluation_input(request: HttpRequest, pk: int, evaluation_pk: int) -> HttpResponse:
    """The exact input an evaluation gave the engine, to debug a policy or replay it in a dry run."""
    deployment = _visible_deployment(request, pk)
    evaluation = get_object_or_404(deployment.evaluations, pk=evaluation_pk)
    shown = stored_inputs.shown_input(evaluation)
    if shown is None:
        return HttpResponse(stored_inputs.purged_detail(evaluation), content_type="text/plain", status=410)
    response = HttpResponse(shown, content_type="application/json")
    response["Content-Disposition"] = (
        f'inline; filename="deployment-{deployment.pk}-evaluation-{evaluation.pk}.json"'
    )
    return response
