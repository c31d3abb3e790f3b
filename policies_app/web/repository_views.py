"""Pages of policy repositories: the list, one repository (its settings, whether each secret is set, the
policies synced from it with their last sync), creating and changing one, and "test connection".

Who sees them and who may change them is the API's rule (policies/git/repositories.py): policy authors
and organisation roles see them, policy authors change and test them. Secrets are write-only: the pages
say only whether each is set."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from policies_app import access
from policies_app.api.serializers.policy_repositories import PolicyRepositorySerializer
from policies_app.errors import Invalid
from policies_app.models import PolicyRepository
from policies_app.policies.git import repositories, sources
from policies_app.web.common import act
from policies_app.web.repository_forms import SECRET_LABELS, RepositoryForm


@login_required
@require_GET
def repository_list(request: HttpRequest) -> HttpResponse:
    shown = repositories.visible_repositories(request.user).order_by("name")
    context = {"repositories": shown, "may_author": access.may_author_policies(request.user)}
    return render(request, "web/repository_list.html", context)


def _stored(repository: PolicyRepository | None) -> dict[str, bool]:
    if repository is None:
        return {}
    summary = repositories.repository_summary(repository)
    return {name: summary[f"has_{name}"] for name in repositories.SECRET_FIELDS}


def _validated(form: RepositoryForm, repository: PolicyRepository | None) -> dict[str, Any]:
    """The form's inputs through the API's serializer (the same checks as the API); Invalid otherwise."""
    serializer = PolicyRepositorySerializer(repository, data=form.payload(), partial=repository is not None)
    if not serializer.is_valid():
        raise Invalid(
            {name: [str(problem) for problem in problems] for name, problems in serializer.errors.items()}
        )
    return dict(serializer.validated_data)


@login_required
@require_http_methods(["GET", "POST"])
def repository_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    repository = None
    if pk is not None:
        repository = get_object_or_404(repositories.visible_repositories(request.user), pk=pk)
    if not access.may_author_policies(request.user):
        raise Http404("Only organisation admins and policy authors may do this.")
    initial = repositories.repository_summary(repository) if repository else {}
    form = RepositoryForm(request.POST or None, initial=initial, stored=_stored(repository))

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            form.add_error(name if name in form.fields else None, problems)
        context = {"form": form, "repository": repository, "error": error}
        return render(request, "web/repository_form.html", context, status=status)

    if request.method == "GET":
        return page()
    if not form.is_valid():
        return page(status=400)
    return act(
        request,
        lambda: repositories.save_repository(repository, request.user, **_validated(form, repository)),
        done=lambda saved: f"Repository {saved.name} is saved.",
        then=lambda saved: reverse("web:repository-detail", args=[saved.pk]),
        page=page,
    )


@login_required
@require_GET
def repository_detail(request: HttpRequest, pk: int) -> HttpResponse:
    repository = get_object_or_404(repositories.visible_repositories(request.user), pk=pk)
    return _detail_page(request, repository)


def _detail_page(
    request: HttpRequest,
    repository: PolicyRepository,
    connection: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    summary = repositories.repository_summary(repository)
    context = {
        "repository": repository,
        "summary": summary,
        # Named as the form names them ("SSH private key"), not by their field names.
        "secrets": [(SECRET_LABELS[name], summary[f"has_{name}"]) for name in repositories.SECRET_FIELDS],
        "policies": repository.policies.order_by("name"),
        "may_author": access.may_author_policies(request.user),
        "connection": connection,
    }
    return render(request, "web/repository_detail.html", context, status=status)


@login_required
@require_POST
def repository_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Reach the repository now with its credentials and say what its default branch names, or why not."""
    repository = get_object_or_404(repositories.visible_repositories(request.user), pk=pk)
    if not access.may_author_policies(request.user):
        raise Http404("Only organisation admins and policy authors may do this.")
    try:
        commit = sources.check_connection(repository, request.user)
    except Invalid as refusal:
        problems = "; ".join(
            f"{field}: {problem}" for field, items in refusal.errors.items() for problem in items
        )
        return _detail_page(request, repository, {"ok": "", "message": problems}, status=400)
    messages.success(request, f"Connected: the default branch of {repository.name} is at {commit[:12]}.")
    return redirect("web:repository-detail", pk=repository.pk)
