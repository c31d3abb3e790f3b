"""Editing policies in the product (for those who may author them): the editor (CodeMirror, built into
static/policies_app/editor/ by bin/build-editor), with modules to add, rename and remove, a syntax check as
one types shown at its line (policy_editor.js calls POST /api/v1/policies/check/) and "Try it" on the text
not saved (POST /api/v1/policies/{id}/try-unsaved/); and the catalog of ready policies to install."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from policies_app import access
from policies_app.errors import DomainError, Forbidden, Invalid
from policies_app.models import ApprovalPolicy
from policies_app.policies import catalog
from policies_app.policies.authoring import create_policy, require_author, revise_policy
from policies_app.policies.content import PolicyContent
from policies_app.web.catalog_forms import ParametersForm
from policies_app.web.policy_forms import PolicyEditForm
from policies_app.web.policy_views import try_choices

STARTER_MODULE = {
    "filename": "main.rego",
    "source": 'package env0\n\nimport rego.v1\n\npending contains "review this deployment" if {\n\ttrue\n}\n',
}


def _forbidden(request: HttpRequest, refusal: DomainError) -> HttpResponse:
    return render(request, "403.html", {"exception": refusal.message}, status=refusal.http_status)


def _posted_modules(request: HttpRequest) -> list[dict[str, str]]:
    names, sources = request.POST.getlist("filename"), request.POST.getlist("source")
    return [
        {"filename": name.strip(), "source": source.replace("\r\n", "\n")}
        for name, source in zip(names, sources, strict=False)
        if name.strip() or source.strip()
    ]


@login_required
@require_http_methods(["GET", "POST"])
def policy_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """A new policy (pk None) or the next revision of one; "Save" activates it when its tests pass,
    "Save as draft" keeps it aside to try and replay."""
    try:
        require_author(request.user)
    except Forbidden as refusal:
        return _forbidden(request, refusal)
    policy = get_object_or_404(ApprovalPolicy.objects.select_related("repository"), pk=pk) if pk else None
    latest = policy.latest_revision if policy else None
    current = PolicyContent.of_revision(latest) if latest else None
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        form = PolicyEditForm(request.POST)
        modules = _posted_modules(request)
        if form.is_valid():
            try:
                policy = _save(policy, form.cleaned_data, modules, request)
                return redirect("web:policy-detail", pk=policy.pk)
            except Invalid as refusal:
                errors = refusal.errors
    else:
        initial: dict[str, Any] = {"rego_version": "v1", "enforcement": "hard-mandatory"}
        if policy is not None:
            initial = {
                "name": policy.name,
                "description": policy.description,
                "rego_version": current.rego_version,
                "enforcement": current.enforcement,
                "data": "" if current.data is None else json.dumps(current.data, indent=2, sort_keys=True),
            }
        form = PolicyEditForm(initial=initial)
        modules = (
            [{"filename": name, "source": source} for name, source in current.modules]
            if current
            else [STARTER_MODULE]
        )
    context = {
        "policy": policy,
        "form": form,
        "modules": modules,
        "errors": errors,
        "read_only": policy is not None and policy.from_repository,
        "latest": latest,
        # "Try it" on the editor's text offers the deployments the policy page's "Try it" offers.
        "try_choices": try_choices(request, policy)
        if policy is not None and not policy.from_repository
        else [],
    }
    return render(request, "web/policy_edit.html", context, status=400 if errors or form.errors else 200)


def _save(
    policy: ApprovalPolicy | None,
    cleaned: dict[str, Any],
    modules: list[dict[str, str]],
    request: HttpRequest,
) -> ApprovalPolicy:
    fields = {name: cleaned[name] for name in ("name", "description", "rego_version", "enforcement", "data")}
    if policy is None:
        return create_policy(**fields, modules=modules, user=request.user)
    revise_policy(policy, **fields, modules=modules, draft="draft" in request.POST, user=request.user)
    return policy


@login_required
@require_http_methods(["GET", "POST"])
def policy_catalog(request: HttpRequest) -> HttpResponse:
    """The catalog of ready policies; installing one (POST, ``entry``) creates an ordinary policy."""
    may_author = access.may_author_policies(request.user)
    entries = list(catalog.catalog().values())
    forms_by_entry = {entry.slug: ParametersForm(prefix=entry.slug, entry=entry) for entry in entries}
    errors: dict[str, list[str]] = {}
    chosen = request.POST.get("entry", "")
    if request.method == "POST":
        if not may_author:
            return _forbidden(
                request, Forbidden("Only organisation admins and policy authors may install policies.")
            )
        if chosen not in forms_by_entry:
            errors = {"entry": [f"The catalog has no entry {chosen!r}."]}
        else:
            form = forms_by_entry[chosen] = ParametersForm(
                request.POST, prefix=chosen, entry=catalog.entry(chosen)
            )
            if form.is_valid():
                try:
                    installed = catalog.install(
                        chosen,
                        name=form.cleaned_data["name"],
                        parameters=form.parameters(),
                        user=request.user,
                    )
                    return redirect("web:policy-detail", pk=installed.pk)
                except DomainError as refusal:
                    errors = refusal.errors if isinstance(refusal, Invalid) else {"detail": [refusal.message]}
    context = {
        "entries": [(entry, forms_by_entry[entry.slug]) for entry in entries],
        "may_author": may_author,
        "errors": errors,
        "chosen": chosen,
    }
    refused = errors or (chosen in forms_by_entry and forms_by_entry[chosen].errors)
    return render(request, "web/policy_catalog.html", context, status=400 if refused else 200)
