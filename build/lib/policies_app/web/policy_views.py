"""Pages of approval policies: the list, a policy with its revisions, and a dry run."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods

from .. import access
from ..choices import Capability
from ..errors import DomainError
from ..models import PolicyModule
from ..policies import dry_run_policy
from .forms import DryRunForm


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = access.visible_policies(request.user).prefetch_related("projects", "templates", "revisions")
    return render(request, "web/policy_list.html", {"policies": policies})


@login_required
@require_http_methods(["GET", "POST"])
def policy_detail(request: HttpRequest, pk: int) -> HttpResponse:
    policy = get_object_or_404(access.visible_policies(request.user), pk=pk)
    held = access.grants(request.user)
    revisions = list(
        policy.revisions.select_related("created_by").prefetch_related(
            Prefetch("modules", queryset=PolicyModule.objects.order_by("filename"))
        )
    )
    for revision in revisions:
        revision.data_json = (
            "" if revision.data is None else json.dumps(revision.data, indent=2, sort_keys=True)
        )
    numbers = [revision.number for revision in revisions]
    result: dict[str, Any] | None = None
    dry_run_error = ""
    if request.method == "POST":
        form = DryRunForm(request.POST, revisions=numbers)
        if form.is_valid():
            revision = next(r for r in revisions if r.number == form.cleaned_data["revision"])
            try:
                result = dry_run_policy(revision, form.cleaned_data["input_json"])
            except DomainError as refusal:
                dry_run_error = refusal.message
    else:
        form = DryRunForm(initial={"revision": numbers[0] if numbers else None}, revisions=numbers)
    context = {
        "policy": policy,
        "revisions": revisions,
        "projects": [p for p in policy.projects.all() if held.can(Capability.READ, p)],
        "templates": policy.templates.all(),
        "form": form,
        "result": result,
        "dry_run_error": dry_run_error,
    }
    return render(request, "web/policy_detail.html", context, status=400 if form.errors else 200)
