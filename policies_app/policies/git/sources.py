"""Policies whose source is a git repository: the repositories and their secrets, syncing a policy to
a new revision, and push webhooks.

Syncing resolves the policy's revision (a branch, tag or commit) to a commit, reads the policy's
folder at that commit (policy_folders.py) and, when what the policy says changed, records a revision
holding the commit; its tests run and it becomes active when they pass. A sync that fails (the
repository cannot be reached, the revision is gone, policies.hcl is wrong, the engine refuses a module)
is recorded on the policy and changes nothing else: the active revision stays in force.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from policies_app import access, audit
from policies_app.choices import RegoVersion
from policies_app.errors import Forbidden, Invalid
from policies_app.guards import egress
from policies_app.models import ApprovalPolicy, PolicyRepository, PolicyRevision
from policies_app.policies.authoring import (
    PolicyContent,
    check_content,
    check_new_name,
    require_author,
    run_content_tests,
    store_revision,
    validated_content,
)
from policies_app.policies.git.folders import (
    DATA_FILES,
    DECLARATIONS,
    DeclaredPolicy,
    FolderError,
    choose,
    read_folder,
)
from policies_app.policies.git.mirrors import (
    GitCredentials,
    GitMirror,
    GitSourceError,
    check_path,
    check_repository_url,
    check_revision,
)

logger = logging.getLogger(__name__)

SECRET_FIELDS = ("password", "ssh_private_key", "ssh_known_hosts", "webhook_secret")


# ------------------------------------------------------------------------------------- repositories


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
        **{f"has_{name}": bool(getattr(repository, name)) for name in SECRET_FIELDS},
    }


def checked_repository_url(url: str) -> str:
    """A repository URL as it will be used: a remote whose host the egress guard allows now, or a local
    path under LOCAL_REPOSITORY_ROOTS. Invalid naming ``url`` otherwise (and never whether a path exists)."""
    try:
        url = check_repository_url(url, settings.LOCAL_REPOSITORY_ROOTS)
        if egress.is_network_git_url(url):
            egress.check_git_url(url)
    except (GitSourceError, egress.EgressRefused) as problem:
        raise Invalid({"url": [str(problem)]}) from None
    return url


def _mirror(repository: PolicyRepository) -> GitMirror:
    credentials = GitCredentials(
        repository.username, repository.password, repository.ssh_private_key, repository.ssh_known_hosts
    )
    return GitMirror(
        repository.url,
        credentials,
        settings.POLICY_REPOSITORY_CACHE_DIR,
        settings.POLICY_GIT_TIMEOUT_SECONDS,
        local_roots=settings.LOCAL_REPOSITORY_ROOTS,
        route=egress.git_route,
    )


# ------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class FolderAtCommit:
    commit: str
    policies: dict[str, DeclaredPolicy]


def read_repository_folder(repository: PolicyRepository, path: str, revision: str) -> FolderAtCommit:
    """The policies of a folder at the commit ``revision`` names now. Raises GitSourceError (with the
    input at fault) or FolderError (with file and line)."""
    mirror = _mirror(repository)
    commit = mirror.resolve(revision)
    entries = mirror.tree(commit, path)
    linked = [
        e.path
        for e in entries
        if e.symlink and (e.path.endswith(".rego") or e.path in (DECLARATIONS, *DATA_FILES))
    ]
    if linked:
        raise FolderError("is a symbolic link; policies are read from regular files only", linked[0])
    by_path = {entry.path: entry for entry in entries if not entry.symlink}
    policies = read_folder(list(by_path), lambda paths: mirror.read([by_path[path] for path in paths]))
    return FolderAtCommit(commit, policies)


def _content(declared: DeclaredPolicy, rego_version: str) -> PolicyContent:
    return validated_content(
        declared.rego_version or rego_version,
        [{"filename": name, "source": source} for name, source in declared.modules],
        declared.data,
        declared.enforcement,
    )


def _field_errors(problem: Exception) -> dict[str, list[str]]:
    if isinstance(problem, GitSourceError):
        return {{"url": "repository"}.get(problem.field, problem.field): [problem.message]}
    if isinstance(problem, FolderError):
        return {"path": [str(problem)]}
    if isinstance(problem, Invalid):
        return problem.errors
    raise problem


def create_synced_policy(
    *,
    name: str,
    repository: PolicyRepository,
    path: str = "",
    revision: str = "",
    declared_name: str = "",
    rego_version: str = RegoVersion.V1,
    description: str = "",
    user: AbstractBaseUser | None = None,
) -> ApprovalPolicy:
    """A policy that follows a folder of a repository, created from what the folder says now (its first
    revision is active when its tests pass). A folder that cannot be read stores nothing: Invalid names
    the input at fault."""
    require_author(user)
    check_new_name(name)
    try:
        path, revision = check_path(path), check_revision(revision)
        folder = read_repository_folder(repository, path, revision)
        declared = choose(folder.policies, declared_name, name)
        content = _content(declared, rego_version)
        check_content(name, content)
    except (GitSourceError, FolderError, Invalid) as problem:
        raise Invalid(_field_errors(problem)) from None
    report = run_content_tests(name, content)
    with transaction.atomic():
        policy = ApprovalPolicy.objects.create(
            name=name,
            description=declared.description if declared.description is not None else description,
            repository=repository,
            repository_path=path,
            repository_revision=revision,
            declared_name=declared.name,
            synced_commit=folder.commit,
            synced_at=timezone.now(),
        )
        revision_row = store_revision(policy, content, report, user=user, commit=folder.commit)
        audit.record(user, "policy.created", policy, after=_sync_summary(policy, revision_row))
    return policy


# ------------------------------------------------------------------------------------------ syncing


@dataclass
class SyncOutcome:
    """What one sync did to one policy."""

    policy: ApprovalPolicy
    commit: str = ""
    revision: PolicyRevision | None = None  # the revision it created, if any
    errors: dict[str, list[str]] | None = None  # why it failed, by the input at fault

    @property
    def activated(self) -> bool:
        return self.revision is not None and self.policy.active_revision_id == self.revision.pk

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.pk,
            "commit": self.commit,
            "revision": self.revision.number if self.revision else None,
            "activated": self.activated,
            "tests": self.revision.tests_status if self.revision else None,
            "errors": self.errors,
        }


def sync_policy(
    policy: ApprovalPolicy,
    *,
    user: AbstractBaseUser | None = None,
    revision: str | None = None,
    draft: bool = False,
) -> list[SyncOutcome]:
    """Sync a policy (and every policy that follows the same folder at the same revision: one fetch,
    one read). ``revision`` syncs another branch, tag or commit instead, as a draft of this policy
    only; ``draft`` keeps the new revision from being activated."""
    require_author(user)
    if not policy.from_repository:
        raise Invalid({"repository": [f"{policy.name} is not synced from a repository."]})
    if revision is not None:
        try:
            revision = check_revision(revision)
        except GitSourceError as problem:
            raise Invalid({"revision": [problem.message]}) from None
        return [_sync_one(policy, policy.repository, policy.repository_path, revision, user, draft=True)]
    group = list(
        ApprovalPolicy.objects.filter(
            repository=policy.repository_id,
            repository_path=policy.repository_path,
            repository_revision=policy.repository_revision,
        ).select_related("repository", "active_revision")
    )
    return _sync_group(group, user, draft=draft)


def _sync_group(
    policies: list[ApprovalPolicy], user: AbstractBaseUser | None, *, draft: bool
) -> list[SyncOutcome]:
    first = policies[0]
    try:
        folder = read_repository_folder(first.repository, first.repository_path, first.repository_revision)
    except (GitSourceError, FolderError) as problem:
        errors = _field_errors(problem)
        for policy in policies:
            _record_sync_error(policy, errors)
        return [SyncOutcome(policy, errors=errors) for policy in policies]
    return [_apply_folder(policy, folder, user, draft=draft) for policy in policies]


def _sync_one(
    policy: ApprovalPolicy, repository: PolicyRepository, path: str, revision: str, user: Any, *, draft: bool
) -> SyncOutcome:
    try:
        folder = read_repository_folder(repository, path, revision)
    except (GitSourceError, FolderError) as problem:
        return SyncOutcome(policy, errors=_field_errors(problem))
    return _apply_folder(policy, folder, user, draft=draft, record=False)


def _apply_folder(
    policy: ApprovalPolicy, folder: FolderAtCommit, user: Any, *, draft: bool, record: bool = True
) -> SyncOutcome:
    """Make a revision of what the folder says for ``policy``, if that differs from its newest one.
    ``record``: keep the sync's outcome on the policy (not for a draft synced from another branch)."""
    latest = policy.latest_revision
    try:
        declared = choose(folder.policies, policy.declared_name, policy.name)
        content = _content(declared, latest.rego_version if latest else RegoVersion.V1)
        changed = latest is None or PolicyContent.of_revision(latest) != content
        if changed:
            check_content(policy.name, content)
    except (FolderError, Invalid) as problem:
        errors = _field_errors(problem)
        if record:
            _record_sync_error(policy, errors, folder.commit)
        return SyncOutcome(policy, folder.commit, errors=errors)
    report = run_content_tests(policy.name, content) if changed else None
    with transaction.atomic():
        revision = None
        if changed:
            revision = store_revision(policy, content, report, user=user, draft=draft, commit=folder.commit)
            audit.record(user, "policy.synced", policy, after=_sync_summary(policy, revision))
        if record:
            fields = {"synced_commit": folder.commit, "synced_at": timezone.now(), "sync_error": ""}
            if declared.description is not None:
                fields["description"] = declared.description
            ApprovalPolicy.objects.filter(pk=policy.pk).update(**fields)
            for name, value in fields.items():
                setattr(policy, name, value)
    return SyncOutcome(policy, folder.commit, revision)


def _record_sync_error(policy: ApprovalPolicy, errors: dict[str, list[str]], commit: str = "") -> None:
    message = "; ".join(f"{field}: {' '.join(problems)}" for field, problems in errors.items())
    if commit:
        message = f"at commit {commit[:12]}: {message}"
    logger.warning("syncing policy %s failed: %s", policy.name, message)
    ApprovalPolicy.objects.filter(pk=policy.pk).update(sync_error=message, synced_at=timezone.now())
    policy.sync_error = message


def _sync_summary(policy: ApprovalPolicy, revision: PolicyRevision) -> dict[str, Any]:
    return {
        "repository": str(policy.repository),
        "path": policy.repository_path,
        "revision": revision.number,
        "commit": revision.commit,
        "tests": revision.tests_status,
        "draft": revision.draft,
        "activated": policy.active_revision_id == revision.pk,
    }


def sync_all_repository_policies() -> list[SyncOutcome]:
    """The scheduled sync: every repository policy, one fetch and read per folder and revision."""
    groups: dict[tuple[int, str, str], list[ApprovalPolicy]] = defaultdict(list)
    for policy in ApprovalPolicy.objects.filter(repository__isnull=False).select_related(
        "repository", "active_revision"
    ):
        groups[(policy.repository_id, policy.repository_path, policy.repository_revision)].append(policy)
    outcomes: list[SyncOutcome] = []
    for policies in groups.values():
        try:
            outcomes.extend(_sync_group(policies, None, draft=False))
        except Exception:  # noqa: BLE001 - one broken folder must not stop the others
            logger.exception("syncing %s failed", ", ".join(policy.name for policy in policies))
    return outcomes


# ----------------------------------------------------------------------------------------- webhooks


@dataclass(frozen=True)
class WebhookReply:
    status: int
    body: dict[str, Any]


def signature_matches(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """GitHub signs the body with the secret (X-Hub-Signature-256: sha256=<hex>); GitLab sends the
    secret itself as a token (X-Gitlab-Token). Either must match; without a secret nothing does."""
    if not secret:
        return False
    signature = headers.get("X-Hub-Signature-256", "")
    if signature.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature[len("sha256=") :])
    token = headers.get("X-Gitlab-Token", "")
    return bool(token) and hmac.compare_digest(secret.encode(), token.encode())


def receive_push(policy_id: Any, headers: Mapping[str, str], body: bytes) -> WebhookReply:
    """A push webhook for a policy's repository: checked, then a sync is queued (after commit)."""
    policy = (
        ApprovalPolicy.objects.filter(pk=policy_id, repository__isnull=False)
        .select_related("repository")
        .first()
    )
    # Unknown policy and wrong signature read the same: a webhook caller learns nothing it may not know.
    if policy is None or not signature_matches(policy.repository.webhook_secret, headers, body):
        raise Forbidden("The webhook's signature or token does not match the repository's secret.")
    event = headers.get("X-GitHub-Event") or headers.get("X-Gitlab-Event") or "push"
    if event == "ping":
        return WebhookReply(200, {"detail": "pong"})
    ref = _pushed_ref(body)
    tracked = policy.repository_revision
    if (
        ref
        and ref.startswith("refs/heads/")
        and tracked
        and ref != f"refs/heads/{tracked}"
        and "Tag" not in event
    ):
        return WebhookReply(
            202, {"detail": f"ignored: {ref} is not the branch {tracked} that the policy follows"}
        )
    from policies_app.tasks import sync_policy_task

    transaction.on_commit(lambda: sync_policy_task.delay(policy.pk))
    return WebhookReply(202, {"detail": "sync queued", "policy": policy.pk})


def _pushed_ref(body: bytes) -> str:
    if body.startswith(b"payload="):  # GitHub's form-encoded deliveries
        body = (parse_qs(body.decode("utf-8", "replace")).get("payload") or [""])[0].encode()
    try:
        document = json.loads(body or b"{}")
    except ValueError:
        return ""
    return (
        document.get("ref", "") if isinstance(document, dict) and isinstance(document.get("ref"), str) else ""
    )


def visible_repositories(user: AbstractBaseUser) -> QuerySet[PolicyRepository]:
    """Repositories are organisation-wide, like policies: policy authors and organisation roles see them."""
    if access.may_author_policies(user) or access.grants(user).sees_everything:
        return PolicyRepository.objects.all()
    return PolicyRepository.objects.none()
