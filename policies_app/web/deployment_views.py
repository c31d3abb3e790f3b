"""Pages of deployments: the queue, a deployment with its evaluations, approving, rejecting, cancelling.
Who may see and do what comes from access.py, what happens from the use cases: a page the user may not
see answers 404, a refusal of a use case is shown on the page with its status (``_refused``)."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from .. import access
from ..choices import CANCELLABLE_STATUSES, Capability, DeploymentStatus
from ..deployments import cancel_deployment, record_approval
from ..environments import masked_input
from ..errors import DomainError
from ..models import Deployment, PolicyRevision
from .forms import ApprovalForm, DeploymentFilterForm

QUEUE_PAGE_SIZE = 50


@login_required
@require_GET
def deployment_queue(request: HttpRequest) -> HttpResponse:
    environments = access.visible_environments(request.user)
    # Without any filter in the URL the queue shows what waits for someone: the pending deployments.
    data = request.GET if "status" in request.GET else {"status": DeploymentStatus.PENDING_APPROVAL}
    form = DeploymentFilterForm(data, environments=[(e.pk, str(e)) for e in environments])
    deployments = access.visible_deployments(request.user)
    if form.is_valid():
        if form.cleaned_data["status"]:
            deployments = deployments.filter(status=form.cleaned_data["status"])
        if form.cleaned_data["environment"] is not None:
            deployments = deployments.filter(environment_id=form.cleaned_data["environment"])
    else:
        deployments = deployments.none()
    page = Paginator(deployments, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "web/deployment_queue.html",
        {"form": form, "page": page, "query": query.urlencode()},
    )


def _visible_deployment(request: HttpRequest, pk: int) -> Deployment:
    return get_object_or_404(access.visible_deployments(request.user), pk=pk)


def _render_deployment(
    request: HttpRequest,
    deployment: Deployment,
    *,
    form: ApprovalForm | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    project = deployment.environment.project
    pending = deployment.status == DeploymentStatus.PENDING_APPROVAL
    held = access.grants(request.user)
    evaluations = deployment.evaluations.prefetch_related(
        Prefetch("policy_revisions", queryset=PolicyRevision.objects.select_related("policy"))
    )
    context: dict[str, Any] = {
        "deployment": deployment,
        "project": project,
        "evaluations": evaluations,
        "approvals": deployment.approvals.select_related("user"),
        "events": deployment.events.select_related("actor"),
        "pinned_revisions": deployment.policy_revisions.select_related("policy"),
        "may_approve": pending and held.can(Capability.APPROVE, project),
        "may_cancel": deployment.status in CANCELLABLE_STATUSES and held.can(Capability.DEPLOY, project),
        "approval_form": form or ApprovalForm(),
        "error": error,
    }
    return render(request, "web/deployment_detail.html", context, status=status)


@login_required
@require_GET
def deployment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _render_deployment(request, _visible_deployment(request, pk))


@login_required
@require_POST
def deployment_decide(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject; record_approval holds every rule (role, self-approval, still pending, once)."""
    deployment = _visible_deployment(request, pk)
    form = ApprovalForm(request.POST)
    if not form.is_valid():
        return _render_deployment(
            request, deployment, form=form, error="Choose approve or reject.", status=400
        )
    try:
        record_approval(deployment, request.user, form.cleaned_data["decision"], form.cleaned_data["comment"])
    except DomainError as refusal:
        return _refused(request, deployment, refusal, form)
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
def deployment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    deployment = _visible_deployment(request, pk)
    try:
        cancel_deployment(deployment, request.user)
    except DomainError as refusal:
        return _refused(request, deployment, refusal)
    return redirect("web:deployment-detail", pk=deployment.pk)


@login_required
@require_GET
def evaluation_input(request: HttpRequest, pk: int, evaluation_pk: int) -> HttpResponse:
    """The exact input an evaluation gave the engine, to debug a policy or replay it in a dry run."""
    deployment = _visible_deployment(request, pk)
    evaluation = get_object_or_404(deployment.evaluations, pk=evaluation_pk)
    body = evaluation.input_json
    if evaluation.sensitive_variables:
        body = json.dumps(masked_input(json.loads(body), evaluation.sensitive_variables))
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = (
        f'inline; filename="deployment-{deployment.pk}-evaluation-{evaluation.pk}.json"'
    )
    return response
