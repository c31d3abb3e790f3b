"""Getting a template's files onto disk: a git revision or an uploaded archive, cached and checked.

Layout of ``cache_dir`` (one per worker host; every function here is safe to call from several
processes at once):

- ``<commit>/``          a git commit's files (full 40- or 64-hex id), shared by every template and
                          deployment that uses that commit: a commit id names its content, so two
                          repositories holding the same commit share one checkout.
- ``archives/<sha256>/``  an uploaded archive's files, keyed by the archive's sha256.
- ``.repos/<key>.git``    a bare mirror per repository URL, fetched again only when a revision is
                          not already in it.

A finished directory appears by an atomic rename, so a reader never sees half a checkout, and a
crashed worker leaves only a ``.tmp-*`` directory behind (safe to delete).

Git runs as a subprocess with prompts disabled and only the file, git, http(s) and ssh transports
allowed (no ``ext::`` commands). A caller that passes ``route`` decides where git may go over the
network: it is called with the repository URL before every command that reaches a remote, raises
ValueError to refuse, and returns how git must reach the address it checked (``git_arguments()`` for
git's command line, ``ssh_options`` for ssh's); the platform passes its egress guard. Submodules are not fetched. A checkout or archive holding a symlink
that points outside itself is refused: the configuration loader would otherwise read files from the
worker's disk.

Why this module is long: one cache with one set of guarantees (atomic publication, per-key locks,
no link escaping the checkout) shared by its two ways in, a git revision and an uploaded archive.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 300
MAX_ARCHIVE_MEMBERS = 20_000
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # uncompressed; stops a zip bomb before it fills the disk

_URL = re.compile(r"^(?:https?|ssh|git|file)://", re.IGNORECASE)
_SCP_LIKE = re.compile(r"^[\w.+-]+@[\w.-]+:")  # git@github.com:org/repo.git
_HEX_REVISION = re.compile(r"^[0-9a-fA-F]{4,64}$")
_FULL_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class TemplateSourceError(ValueError):
    """The template's files cannot be provided; the message says which input is wrong and why."""


# ---------------------------------------------------------------------------------------------- git


@dataclass(frozen=True)
class Checkout:
    directory: str  # the absolute directory of the template's path
    commit: str | None  # the commit it was read at; None for a plain local directory


def checkout_template(
    repository: str,
    revision: str | None,
    path: str,
    cache_dir: str,
    *,
    route: Callable[[str], Any] | None = None,
) -> Checkout:
    """The absolute directory of ``path`` inside ``repository`` at ``revision``, and that commit.

    ``repository`` is a git URL (https://, ssh://, git@host:..., file://), a local git repository, or
    a plain local directory (then ``revision`` must be None and the directory is used in place).
    ``revision`` is a branch, tag or commit id; None means the remote's default branch.
    """
    relative = _safe_relative_path(path)
    if not repository or repository.startswith("-"):
        raise TemplateSourceError(f"repository {repository!r} is not a git URL or a directory")
    if not (_URL.match(repository) or _SCP_LIKE.match(repository)):
        local = Path(repository).expanduser()
        if not local.is_dir():
            raise TemplateSourceError(f"repository {repository!r}: no such directory and not a git URL")
        if not _is_git_top_level(local):
            if revision is not None:
                raise TemplateSourceError(
                    f"repository {repository!r} is a plain directory: it has no revision {revision!r}"
                )
            return Checkout(_inside(local.resolve(), relative, f"path {path!r}"), None)
        repository = str(local.resolve())

    cache = Path(cache_dir).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    mirror = cache / ".repos" / (hashlib.sha256(repository.encode()).hexdigest()[:24] + ".git")
    remote = _Remote(repository, route if _URL.match(repository) or _SCP_LIKE.match(repository) else None)
    with _locked(mirror.with_suffix(".lock")):
        commit = _resolve_commit(remote, revision, mirror)
    target = cache / commit
    if not target.is_dir():
        _materialise_commit(mirror, commit, target)
    return Checkout(_inside(target, relative, f"path {path!r} at commit {commit[:12]}"), commit)


@dataclass(frozen=True)
class _Remote:
    url: str
    route: Callable[[str], Any] | None

    def git(self, arguments: list[str], what: str) -> str:
        """A git command that reaches the remote, routed as ``route`` says (checked again each time)."""
        if self.route is None:
            return _git(arguments, what)
        try:
            route = self.route(self.url)
        except ValueError as refused:
            raise TemplateSourceError(f"{what}: {refused}") from None
        ssh = [os.environ.get("GIT_SSH_COMMAND") or "ssh", *map(shlex.quote, route.ssh_options)]
        return _git([*route.git_arguments(), *arguments], what, {"GIT_SSH_COMMAND": " ".join(ssh)})


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
                raise TemplateSourceError(f"checking out {commit[:12]} failed: {_last_line(result.stderr)}")
        _refuse_escaping_links(files, f"commit {commit[:12]}")
        _publish(files, target)
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


def _git(arguments: list[str], what: str, extra_env: dict[str, str] | None = None) -> str:
    try:
        result = subprocess.run(
            ["git", *arguments],
            capture_output=True,
            text=True,
            env={**_git_env(), **(extra_env or {})},
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TemplateSourceError(f"{what}: git did not answer within {GIT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        raise TemplateSourceError(f"{what}: {_last_line(result.stderr)}")
    return result.stdout


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",  # never wait for a password on a worker
        "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
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


# ------------------------------------------------------------------------------------------ archives


def extract_archive(archive_bytes: bytes, cache_dir: str) -> str:
    """Unpack an uploaded .tar.gz (or .tar, .tar.bz2, .tar.xz) or .zip; return its absolute directory.

    The directory is ``cache_dir/archives/<sha256 of the bytes>/`` and is reused for the same bytes.
    Refused (TemplateSourceError): absolute member names, members leaving the directory with ``..``,
    symlinks or hard links pointing outside it, devices and fifos, more than MAX_ARCHIVE_MEMBERS
    members or MAX_ARCHIVE_BYTES unpacked. A single top-level folder is kept, not stripped.
    """
    digest = hashlib.sha256(archive_bytes).hexdigest()
    root = Path(cache_dir).resolve() / "archives"
    target = root / digest
    if target.is_dir():
        return str(target)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        files = staging / "files"
        files.mkdir()
        if archive_bytes[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
            _extract_zip(archive_bytes, files)
        else:
            _extract_tar(archive_bytes, files)
        _refuse_escaping_links(files, "the archive")
        _publish(files, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def _extract_zip(archive_bytes: bytes, destination: Path) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    except zipfile.BadZipFile as error:
        raise TemplateSourceError(f"the archive is not a valid zip file: {error}") from None
    with archive:
        members = archive.infolist()
        _check_totals(len(members), sum(member.file_size for member in members))
        for member in members:
            _safe_member_name(member.filename)
            mode = member.external_attr >> 16
            if (mode & 0o170000) == 0o120000:
                raise TemplateSourceError(
                    f"archive member {member.filename!r} is a symlink; zip symlinks are refused"
                )
        try:
            archive.extractall(destination)
        except (zipfile.BadZipFile, OSError, RuntimeError) as error:
            raise TemplateSourceError(f"the archive could not be unpacked: {error}") from None


def _extract_tar(archive_bytes: bytes, destination: Path) -> None:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:*")
    except tarfile.TarError as error:
        raise TemplateSourceError(f"the archive is neither a zip nor a tar file: {error}") from None
    with archive:
        try:
            members = archive.getmembers()
        except (tarfile.TarError, EOFError, OSError) as error:
            raise TemplateSourceError(f"the archive is damaged: {error}") from None
        _check_totals(len(members), sum(member.size for member in members if member.isfile()))
        for member in members:
            name = _safe_member_name(member.name)
            if member.issym() or member.islnk():
                link = member.linkname
                # A symlink is relative to its own folder; a hard link names another member.
                base = posixpath.dirname(name) if member.issym() else ""
                if link.startswith("/") or _escapes(posixpath.join(base, link)):
                    raise TemplateSourceError(
                        f"archive member {member.name!r} links to {link!r}, outside the archive"
                    )
            elif not (member.isfile() or member.isdir()):
                raise TemplateSourceError(f"archive member {member.name!r} is not a file, folder or link")
        try:
            # The "data" filter repeats these checks inside the standard library and drops
            # set-uid bits and ownership: defence in depth.
            archive.extractall(destination, filter="data")
        except (tarfile.TarError, OSError) as error:
            raise TemplateSourceError(f"the archive could not be unpacked: {error}") from None


def _check_totals(count: int, size: int) -> None:
    if count > MAX_ARCHIVE_MEMBERS:
        raise TemplateSourceError(f"the archive has {count} members (at most {MAX_ARCHIVE_MEMBERS})")
    if size > MAX_ARCHIVE_BYTES:
        raise TemplateSourceError(f"the archive unpacks to {size} bytes (at most {MAX_ARCHIVE_BYTES})")


def _safe_member_name(name: str) -> str:
    normalised = name.replace("\\", "/")
    if normalised.startswith("/") or re.match(r"^[A-Za-z]:", normalised):
        raise TemplateSourceError(f"archive member {name!r} has an absolute path")
    if _escapes(normalised):
        raise TemplateSourceError(f"archive member {name!r} leaves the archive folder with '..'")
    return posixpath.normpath(normalised)


def _escapes(relative: str) -> bool:
    normalised = posixpath.normpath(relative)
    return normalised == ".." or normalised.startswith("../")


# -------------------------------------------------------------------------------------------- shared


def template_source_root(directory: str, path: str) -> str:
    """The checkout (or extracted archive) that ``directory``, the template's ``path`` inside it, came
    from: what the evaluation may read (local modules in ``../modules``, files of the repository)."""
    relative = _safe_relative_path(path)
    root = Path(directory).resolve()
    for _ in Path(relative).parts if relative != "." else ():
        root = root.parent
    return str(root)


def _safe_relative_path(path: str) -> str:
    candidate = (path or "").replace("\\", "/").strip()
    if candidate.startswith("/"):
        raise TemplateSourceError(f"path {path!r} must be relative to the repository root")
    if _escapes(candidate or "."):
        raise TemplateSourceError(f"path {path!r} leaves the repository with '..'")
    return posixpath.normpath(candidate or ".")


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
    resolved_root = root.resolve()
    for folder, directories, files in os.walk(root):
        for name in [*directories, *files]:
            entry = Path(folder) / name
            if entry.is_symlink():
                pointed = entry.resolve()
                if pointed != resolved_root and resolved_root not in pointed.parents:
                    shown = entry.relative_to(root)
                    raise TemplateSourceError(f"{what}: symlink {str(shown)!r} points outside the template")


def _publish(files: Path, target: Path) -> None:
    """Move a finished directory into place; another process may have published it first."""
    try:
        os.rename(files, target)
    except OSError:
        if not target.is_dir():
            raise
