"""Policies whose source is a git repository: syncing a policy to a new revision (the repositories and
their secrets are in repositories.py; push webhooks, which wake a sync, in push_webhooks.py).

Syncing resolves the policy's revision (a branch, tag or commit) to a commit, reads the policy's
folder at that commit (folders.py) and, when what the policy says changed, records a revision
holding the commit; its tests run and it becomes active when they pass. A sync that fails (the
repository cannot be reached, the revision is gone, policies.hcl is wrong, the engine refuses a module)
is recorded on the policy and changes nothing else: the active revision stays in force.

A sync is bounded in time as sync_clock.py says; a sync that runs out of time is a recorded failure too.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from policies_app import audit
from policies_app.choices import RegoVersion
from policies_app.errors import Invalid
from policies_app.guards import egress, file_sandbox
from policies_app.models import ApprovalPolicy, PolicyRepository, PolicyRevision
from policies_app.ops import metrics
from policies_app.policies.authoring import require_author, require_name_free, store_revision
from policies_app.policies.content import PolicyContent, validated_content
from policies_app.policies.engine import require_compiles, run_content_tests
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
    validated_path,
    validated_revision,
)
from policies_app.policies.git.sync_clock import SyncClock, SyncTookTooLong, unfinished_sync_message

logger = logging.getLogger(__name__)


def _mirror(repository: PolicyRepository, timeout_s: float) -> GitMirror:
    credentials = GitCredentials(
        repository.username, repository.password, repository.ssh_private_key, repository.ssh_known_hosts
    )
    return GitMirror(
        repository.url,
        credentials,
        settings.POLICY_REPOSITORY_CACHE_DIR,
        timeout_s,
        local_roots=file_sandbox.local_roots(),
        route=egress.git_route,
    )


# ------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class FolderAtCommit:
    commit: str
    policies: dict[str, DeclaredPolicy]


def read_repository_folder(
    repository: PolicyRepository, path: str, revision: str, clock: SyncClock
) -> FolderAtCommit:
    """The policies of a folder at the commit ``revision`` names now. Raises GitSourceError (with the
    input at fault), FolderError (with file and line) or SyncTookTooLong."""
    left = clock.require_time("fetching the repository")
    mirror = _mirror(repository, min(settings.POLICY_GIT_TIMEOUT_SECONDS, left))
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


def declared_content(declared: DeclaredPolicy, rego_version: str) -> PolicyContent:
    return validated_content(
        declared.rego_version or rego_version,
        [{"filename": name, "source": source} for name, source in declared.modules],
        declared.data,
        declared.enforcement,
    )


def field_errors(problem: Exception) -> dict[str, list[str]]:
    if isinstance(problem, GitSourceError):
        return {{"url": "repository"}.get(problem.field, problem.field): [problem.message]}
    if isinstance(problem, FolderError):
        return {"path": [str(problem)]}
    if isinstance(problem, SyncTookTooLong):
        return {"repository": [problem.message]}
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
    require_name_free(name)
    clock = SyncClock()
    try:
        path, revision = validated_path(path), validated_revision(revision)
        folder = read_repository_folder(repository, path, revision, clock)
        declared = choose(folder.policies, declared_name, name)
        content = declared_content(declared, rego_version)
        clock.require_time("checking the policy")
        require_compiles(name, content)
        clock.require_time("running the policy's tests")
    except (GitSourceError, FolderError, Invalid, SyncTookTooLong) as problem:
        raise Invalid(field_errors(problem)) from None
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
            revision = validated_revision(revision)
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
    clock = SyncClock()
    try:
        folder = read_repository_folder(
            first.repository, first.repository_path, first.repository_revision, clock
        )
    except (GitSourceError, FolderError, SyncTookTooLong) as problem:
        errors = field_errors(problem)
        for policy in policies:
            _record_sync_error(policy, errors)
        return [SyncOutcome(policy, errors=errors) for policy in policies]
    return [_apply_folder(policy, folder, user, clock, draft=draft) for policy in policies]


def _sync_one(
    policy: ApprovalPolicy, repository: PolicyRepository, path: str, revision: str, user: Any, *, draft: bool
) -> SyncOutcome:
    clock = SyncClock()
    try:
        folder = read_repository_folder(repository, path, revision, clock)
    except (GitSourceError, FolderError, SyncTookTooLong) as problem:
        return SyncOutcome(policy, errors=field_errors(problem))
    return _apply_folder(policy, folder, user, clock, draft=draft, record=False)


def _apply_folder(
    policy: ApprovalPolicy,
    folder: FolderAtCommit,
    user: Any,
    clock: SyncClock,
    *,
    draft: bool,
    record: bool = True,
) -> SyncOutcome:
    """Make a revision of what the folder says for ``policy``, if that differs from its newest one.
    ``record``: keep the sync's outcome on the policy (not for a draft synced from another branch)."""
    latest = policy.latest_revision
    try:
        declared = choose(folder.policies, policy.declared_name, policy.name)
        content = declared_content(declared, latest.rego_version if latest else RegoVersion.V1)
        changed = latest is None or PolicyContent.of_revision(latest) != content
        if changed:
            clock.require_time(f"checking {policy.name}")
            require_compiles(policy.name, content)
            clock.require_time(f"running the tests of {policy.name}")
    except (FolderError, Invalid, SyncTookTooLong) as problem:
        errors = field_errors(problem)
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


def record_unfinished_sync(policy_id: int) -> None:
    """A sync that a worker's time limit interrupted: recorded on every policy that follows the folder."""
    policy = ApprovalPolicy.objects.filter(pk=policy_id, repository__isnull=False).first()
    if policy is None:
        return
    errors = {"repository": [unfinished_sync_message(settings.POLICY_SYNC_TIME_LIMIT_SECONDS)]}
    for follower in ApprovalPolicy.objects.filter(
        repository=policy.repository_id,
        repository_path=policy.repository_path,
        repository_revision=policy.repository_revision,
    ):
        _record_sync_error(follower, errors)


def _record_sync_error(policy: ApprovalPolicy, errors: dict[str, list[str]], commit: str = "") -> None:
    message = "; ".join(f"{field}: {' '.join(problems)}" for field, problems in errors.items())
    if commit:
        message = f"at commit {commit[:12]}: {message}"
    logger.warning("syncing policy %s failed: %s", policy.name, message)
    metrics.SYNC_FAILURES.inc()
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
            metrics.SYNC_FAILURES.inc()
    return outcomes


def check_connection(repository: PolicyRepository, user: AbstractBaseUser | None) -> str:
    """Whether ``repository`` can be read now with its credentials ("test connection"): the commit its
    default branch names. Invalid names the input at fault (git's message, secrets scrubbed)."""
    require_author(user)
    try:
        return _mirror(repository, settings.POLICY_GIT_TIMEOUT_SECONDS).resolve("")
    except GitSourceError as problem:
        raise Invalid({problem.field: [problem.message]}) from None
