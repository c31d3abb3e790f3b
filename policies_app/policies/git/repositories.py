"""Policy repositories: where policies are synced from, with their secrets (write-only: encrypted at
rest, never shown, only whether each is set), and who sees them. Their URL is checked by the egress
guard (a remote) or the file sandbox's local roots (a local path) when saved, and again at every fetch."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet

from policies_app import access, audit
from policies_app.choices import ReviewApi
from policies_app.errors import Invalid
from policies_app.guards import egress, file_sandbox
from policies_app.models import PolicyRepository
from policies_app.policies.authoring import require_author
from policies_app.policies.git.mirrors import GitSourceError, validated_repository_url

SECRET_FIELDS = ("password", "ssh_private_key", "ssh_known_hosts", "webhook_secret", "review_token")
# Where pushes to other branches are reported (policies/git/review_reports.py).
REVIEW_FIELDS = ("review_api", "review_api_url", "review_project")


def save_repository(
    repository: PolicyRepository | None, user: AbstractBaseUser | None, **fields: Any
) -> PolicyRepository:
    """Create a repository, or change one. A secret left out stays as it is; an empty one is removed."""
    require_author(user)
    repository = repository or PolicyRepository()
    before = repository_summary(repository) if repository.pk else None
    if "name" in fields:
        name = (fields["name"] or "").strip()
        if not name:
            raise Invalid({"name": ["A name is required."]})
        if PolicyRepository.objects.filter(name=name).exclude(pk=repository.pk).exists():
            raise Invalid({"name": [f"A repository named {name!r} already exists."]})
        repository.name = name
    if "url" in fields or repository.pk is None:
        repository.url = checked_repository_url(fields.get("url", ""))
    for name in ("username", *SECRET_FIELDS):
        if name in fields and fields[name] is not None:
            setattr(repository, name, fields[name])
    for name in REVIEW_FIELDS:
        if name in fields and fields[name] is not None:
            setattr(repository, name, (fields[name] or "").strip())
    if "review_api" in fields and repository.review_api not in ReviewApi.values:
        raise Invalid(
            {"review_api": [f"Must be one of: {', '.join(v for v in ReviewApi.values if v)}, or empty."]}
        )
    if "review_api_url" in fields and repository.review_api_url:
        repository.review_api_url = checked_review_api_url(repository.review_api_url)
    with transaction.atomic():
        repository.save()
        audit.record(
            user,
            "policy_repository.changed" if before else "policy_repository.created",
            repository,
            before=before,
            after=repository_summary(repository),
        )
    return repository


def repository_summary(repository: PolicyRepository) -> dict[str, Any]:
    """What may be shown of a repository: never a secret, only whether it is set."""
    return {
        "name": repository.name,
        "url": repository.url,
        "username": repository.username,
        **{name: getattr(repository, name) for name in REVIEW_FIELDS},
        **{f"has_{name}": bool(getattr(repository, name)) for name in SECRET_FIELDS},
    }


def checked_repository_url(url: str) -> str:
    """A repository URL as it will be used: a remote whose host the egress guard allows now, or a local
    path under LOCAL_REPOSITORY_ROOTS. Invalid naming ``url`` otherwise (and never whether a path exists)."""
    try:
        url = validated_repository_url(url, file_sandbox.local_roots())
        if egress.is_network_git_url(url):
            egress.check_git_url(url)
    except (GitSourceError, egress.EgressRefused) as problem:
        raise Invalid({"url": [str(problem)]}) from None
    return url


def checked_review_api_url(url: str) -> str:
    """The review API's root as it will be called: https (http only to an address the operator allowed),
    a host the egress guard allows now; it is checked again at every call."""
    refusal = egress.refusal_to_reach(url)
    if refusal is not None:
        raise Invalid({"review_api_url": [refusal]})
    return url.rstrip("/")


def visible_repositories(user: AbstractBaseUser) -> QuerySet[PolicyRepository]:
    """Repositories are organisation-wide, like policies: policy authors and organisation roles see them."""
    if access.may_author_policies(user) or access.grants(user).sees_everything:
        return PolicyRepository.objects.all()
    return PolicyRepository.objects.none()
