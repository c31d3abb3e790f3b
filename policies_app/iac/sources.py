"""Getting a template's files onto disk from git, cached and checked (uploaded archives: template_archives.py).

A template's files come from a remote git repository, an uploaded archive, or a local directory (or
local git repository, or ``file://`` URL) under a root the operator listed; every other local path is
refused, with one message whether or not it exists (file_sandbox.LocalRoots). Each source is its own
root: the checkout of one commit, one extracted archive, the listed directory itself. The evaluation
reads nothing outside it (``Checkout.root``).

Layout of ``cache_dir`` (one per worker host; every function here is safe to call from several
processes at once):

- ``<commit>/``          a git commit's files (full 40- or 64-hex id), shared by every template and
                          deployment that uses that commit: a commit id names its content, so two
                          repositories holding the same commit share one checkout. It is the source
                          root of whoever reads it, so it holds nothing but that commit.
- ``archives/<sha256>/``  an uploaded archive's files, keyed by the archive's sha256 (template_archives.py).
- ``.repos/<key>.git``    a bare mirror per repository URL, fetched again only when a revision is
                          not already in it.

No template can name a path in this cache: local sources never lie in it (the platform's own
directories are forbidden even under a listed root), and an evaluation reads only its own root.

A finished directory appears by an atomic rename, so a reader never sees half a checkout, and a
crashed worker leaves only a ``.tmp-*`` directory behind (safe to delete).

Git runs as a subprocess with prompts disabled and only the git, http(s) and ssh transports allowed
for remote repositories (``file`` only for a listed local one; no ``ext::`` commands). A caller that
passes ``route`` decides where git may go over the network: it is called with the repository URL before
every command that reaches a remote, raises ValueError to refuse, and returns how git must reach the
address it checked (``git_arguments()`` for git's command line, ``ssh_options`` for ssh's); the platform
passes its egress guard. Submodules are not fetched. A checkout or directory holding a symlink that points outside itself is refused: the
configuration loader would otherwise read files from the worker's disk. Messages name paths relative
to the repository, never the cache's place on the server.

Why this module is long: one cache with one set of guarantees (atomic publication, per-key locks,
no link escaping the checkout) shared by a git revision and a listed local directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies_app.iac.file_sandbox import (
    NO_LOCAL_SOURCES,
    LocalRoots,
    escapes,
    escaping_link,
    local_location,
    scrub,
)

GIT_TIMEOUT_S = 300
CACHE_LABEL = "(template cache)"  # how messages name the cache directory

_HEX_REVISION = re.compile(r"^[0-9a-fA-F]{4,64}$")
_FULL_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class TemplateSourceError(ValueError):
    """The template's files cannot be provided; the message says which input is wrong and why."""


# ---------------------------------------------------------------------------------------------- git


@dataclass(frozen=True)
class Checkout:
    directory: str  # the absolute directory of the template's path
    commit: str | None  # the commit it was read at; None for a plain local directory
    root: str  # the source root: the commit's checkout or the listed local directory, holding ``directory``


def checkout_template(
    repository: str,
    revision: str | None,
    path: str,
    cache_dir: str,
    *,
    local_roots: LocalRoots = NO_LOCAL_SOURCES,
    route: Callable[[str], Any] | None = None,
) -> Checkout:
    """The absolute directory of ``path`` inside ``repository`` at ``revision``, that commit, and the
    source root an evaluation may read.

    ``repository`` is a remote git URL (https://, ssh://, git@host:...), or a local git repository,
    ``file://`` URL or plain directory under one of ``local_roots`` (a plain directory is used in place,
    and then ``revision`` must be None). ``revision`` is a branch, tag or commit id; None means the
    remote's default branch.
    """
    relative = relative_template_path(path)
    if not repository or repository.startswith("-"):
        raise TemplateSourceError(f"repository {repository!r} is not a git URL or a directory")
    local = local_location(repository)
    allow_file = local is not None
    if local is not None:
        refusal = local_roots.refusal(local)
        if refusal is not None:
            raise TemplateSourceError(f"repository {repository!r}: {refusal}")
        if local == repository:  # a path, not a file:// URL (which git itself opens)
            directory = Path(local)
            if not directory.is_dir():
                raise TemplateSourceError(f"repository {repository!r}: no such directory and not a git URL")
            if not _is_git_top_level(directory):
                if revision is not None:
                    raise TemplateSourceError(
                        f"repository {repository!r} is a plain directory: it has no revision {revision!r}"
                    )
                root = directory.resolve()
                _refuse_escaping_links(root, f"repository {repository!r}")
                return Checkout(_inside(root, relative, f"path {path!r}"), None, str(root))
            repository = str(directory.resolve())

    cache = Path(cache_dir).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    mirror = cache / ".repos" / (hashlib.sha256(repository.encode()).hexdigest()[:24] + ".git")
    with _locked(mirror.with_suffix(".lock")):
        try:
            commit = _resolve_commit(
                _Remote(repository, None if allow_file else route, allow_file), revision, mirror
            )
        except TemplateSourceError as problem:
            raise TemplateSourceError(scrub(str(problem), str(cache), CACHE_LABEL)) from None
    target = cache / commit
    if not target.is_dir():
        _materialise_commit(mirror, commit, target)
    return Checkout(_inside(target, relative, f"path {path!r} at commit {commit[:12]}"), commit, str(target))


@dataclass(frozen=True)
class _Remote:
    url: str
    route: Callable[[str], Any] | None
    allow_file: bool  # a listed local repository, opened with git's file transport

    def git(self, arguments: list[str], what: str) -> str:
        """A git command that reaches the remote, routed as ``route`` says (checked again each time)."""
        if self.route is None:
            return _git(arguments, what, allow_file=self.allow_file)
        try:
            route = self.route(self.url)
        except ValueError as refused:
            raise TemplateSourceError(f"{what}: {refused}") from None
        ssh = [os.environ.get("GIT_SSH_COMMAND") or "ssh", *map(shlex.quote, route.ssh_options)]
        return _git([*route.git_arguments(), *arguments], what, extra_env={"GIT_SSH_COMMAND": " ".join(ssh)})


def _resolve_commit(remote: _Remote, revision: str | None, mirror: Path) -> str:
    """The commit id ``revision`` names now, with the mirror holding that commit afterwards."""
    repository = remote.url
    wanted = "HEAD" if revision is None else revision
    if wanted.startswith("-") or any(char in wanted for char in " \t\n~^:?*[\\"):
        raise TemplateSourceError(f"revision {revision!r} is not a branch, tag or commit id")
    held = _held_commit(mirror, revision.lower()) if revision is not None and mirror.is_dir() else None
    if held is not None:
        return held  # a full id we already hold never changes: skip the remote
    # Ask the remote first (cheap, no object transfer): a branch moves, so the mirror cannot answer it.
    # The second pattern asks for the peeled line of an annotated tag (the commit it points at).
    listed = remote.git(
        ["ls-remote", "--", repository, wanted, f"{wanted}^{{}}"], what=f"listing {repository!r}"
    )
    commit = _pick_ref(listed, wanted)
    if commit is None and revision is not None and not _HEX_REVISION.match(revision):
        raise TemplateSourceError(f"unknown revision {revision!r} in {repository!r}")
    if commit is None and revision is None:
        raise TemplateSourceError(f"repository {repository!r} has no default branch (is it empty?)")
    if not mirror.is_dir():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        _git(["init", "--bare", "--quiet", str(mirror)], what="creating the repository cache")
    held = _held_commit(mirror, commit) if commit is not None else None
    if held is not None:
        return held
    remote.git(
        [
            "-C",
            str(mirror),
            "fetch",
            "--quiet",
            "--force",
            "--prune",
            "--",
            repository,
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ],
        what=f"fetching {repository!r}",
    )
    if commit is None:
        # A commit id, possibly abbreviated, that is not a ref name: look it up among fetched objects.
        assert revision is not None
        found = _commit_in_mirror(mirror, revision)
        if found is None:
            raise TemplateSourceError(f"unknown revision {revision!r} in {repository!r}")
        return found
    held = _held_commit(mirror, commit)
    if held is None:
        raise TemplateSourceError(f"revision {wanted!r} resolved to {commit} but fetching it failed")
    return held


def _pick_ref(ls_remote_output: str, wanted: str) -> str | None:
    refs: dict[str, str] = {}
    for line in ls_remote_output.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    if wanted == "HEAD":
        return refs.get("HEAD")
    # An annotated tag lists the tag object and, with ^{}, the commit it points at: we want the commit.
    for name in (f"refs/heads/{wanted}", f"refs/tags/{wanted}^{{}}", f"refs/tags/{wanted}", wanted):
        if name in refs:
            return refs[name]
    return None


def _held_commit(mirror: Path, object_id: str) -> str | None:
    """The commit a full object id stands for when the mirror holds it, else None."""
    return _commit_in_mirror(mirror, object_id) if _FULL_COMMIT.match(object_id) else None


def _commit_in_mirror(mirror: Path, name: str) -> str | None:
    """The full id of the commit ``name`` (an id, possibly abbreviated, or a tag object, which peels to
    its commit) stands for in the mirror, else None."""
    result = subprocess.run(
        [
            "git",
            "-C",
            str(mirror),
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{name}^{{commit}}",
        ],
        capture_output=True,
        text=True,
        env=_git_env(),
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else None


def _materialise_commit(mirror: Path, commit: str, target: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        files = staging / "files"
        files.mkdir()
        # read-tree + checkout-index writes exactly the commit's tree (git archive would honour
        # export-ignore attributes and silently drop files).
        env = {**_git_env(), "GIT_INDEX_FILE": str(staging / "index")}
        for arguments in (
            ["read-tree", commit],
            ["--work-tree", str(files), "checkout-index", "--all", "--force"],
        ):
            result = subprocess.run(
                ["git", "--git-dir", str(mirror), *arguments],
                capture_output=True,
                text=True,
                env=env,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
            if result.returncode != 0:
                problem = scrub(_last_line(result.stderr), str(target.parent), CACHE_LABEL)
                raise TemplateSourceError(f"checking out {commit[:12]} failed: {problem}")
        _refuse_escaping_links(files, f"commit {commit[:12]}")
        publish_directory(files, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _is_git_top_level(directory: Path) -> bool:
    """Whether ``directory`` is a repository itself: a bare one, or a work tree's top level (a plain
    directory that merely sits inside some other repository is not that repository). One git call."""
    result = subprocess.run(
        [
            "git",
            "-C",
            str(directory),
            "rev-parse",
            "--is-bare-repository",
            "--is-inside-work-tree",
            "--absolute-git-dir",
            "--show-prefix",
        ],
        capture_output=True,
        text=True,
        env=_git_env(),
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        return False
    bare, in_work_tree, git_dir, prefix = (result.stdout.split("\n") + ["", "", "", ""])[:4]
    if bare == "true":
        return Path(git_dir).resolve() == directory.resolve()
    return in_work_tree == "true" and prefix == ""


def _git(
    arguments: list[str], what: str, allow_file: bool = False, extra_env: dict[str, str] | None = None
) -> str:
    try:
        result = subprocess.run(
            ["git", *arguments],
            capture_output=True,
            text=True,
            env={**_git_env(allow_file), **(extra_env or {})},
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TemplateSourceError(f"{what}: git did not answer within {GIT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise TemplateSourceError(f"{what}: {_last_line(result.stderr)}")
    return result.stdout


def _git_env(allow_file: bool = False) -> dict[str, str]:
    """The environment of every git command; the file transport only for a listed local repository."""
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",  # never wait for a password on a worker
        "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh" if allow_file else "git:http:https:ssh",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "git failed"


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -------------------------------------------------------------------------------------------- shared


def relative_template_path(path: str) -> str:
    """The template's ``path`` as a normalised relative path; TemplateSourceError when it is absolute or
    leaves the repository with '..'."""
    candidate = (path or "").replace("\\", "/").strip()
    if candidate.startswith("/"):
        raise TemplateSourceError(f"path {path!r} must be relative to the repository root")
    if escapes(candidate or "."):
        raise TemplateSourceError(f"path {path!r} leaves the repository with '..'")
    return posixpath.normpath(candidate or ".")


def template_directory(root: str, path: str, what: str) -> str:
    """The absolute directory of the template's ``path`` inside the source ``root`` (an extracted
    archive, a checkout); TemplateSourceError, naming it as ``what``, when it leaves the root, is
    missing or is not a directory."""
    return _inside(Path(root).resolve(), relative_template_path(path), what)


def _inside(root: Path, relative: str, what: str) -> str:
    candidate = (root / relative).resolve()
    if candidate != root and root not in candidate.parents:
        raise TemplateSourceError(f"{what} leaves the repository (through a symlink)")
    if not candidate.exists():
        raise TemplateSourceError(f"{what} does not exist")
    if not candidate.is_dir():
        raise TemplateSourceError(f"{what} is not a directory")
    return str(candidate)


def _refuse_escaping_links(root: Path, what: str) -> None:
    shown = escaping_link(str(root))
    if shown is not None:
        raise TemplateSourceError(f"{what}: symlink {shown!r} points outside the template")


def publish_directory(files: Path, target: Path) -> None:
    """Move a finished directory into place; another process may have published it first."""
    try:
        os.rename(files, target)
    except OSError:
        if not target.is_dir():
            raise
