"""Git for policies synced from a repository (no Django here): a bare mirror per repository, fetched
incrementally, read without a checkout.

- ``resolve`` turns a branch, tag or commit into a commit id. It asks the remote first (``ls-remote``:
  no objects move); only when the mirror lacks that commit does it fetch, and a fetch into an existing
  mirror transfers only the objects it does not hold. Branches are fetched with ``+`` so a force-push
  simply moves the branch.
- ``tree`` lists the files under a path at a commit and ``read`` their contents, from the mirror's
  object database (``ls-tree``, ``cat-file --batch``): nothing is written out.

Credentials never appear on a command line or in a URL: https passwords go in an ``http.extraHeader``
given through git's environment configuration, scoped to the repository's URL; an ssh key is written
to a private temporary file for the one command. Git's own and the user's configuration are ignored,
prompts are off, and only the file, git, http(s) and ssh transports are allowed.

Where git may go is decided by the caller: a local path or ``file://`` URL only under one of
``local_roots``; a remote only through ``route``, called before every command that reaches it, which
checks the host now (the egress guard) and says how git must reach the address it checked (a
``GitRoute``: ``git_arguments()`` for git's command line, ``ssh_options`` for ssh's). ``route`` raises
ValueError to refuse.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import posixpath
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies_app.iac.file_sandbox import (
    LOCAL_SOURCE_REFUSED,
    NO_LOCAL_SOURCES,
    SCP_LIKE,
    LocalRoots,
    local_location,
)

_URL = re.compile(r"^(?:https?|ssh|git|file)://[^\s]+$", re.IGNORECASE)
_PASSWORD_IN_URL = re.compile(r"^[a-z]+://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)
_FULL_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024

# What git says, and which of the user's inputs it points at.
_CREDENTIAL_PROBLEMS = (
    "authentication failed",
    "could not read username",
    "could not read password",
    "permission denied",
    "access denied",
    "invalid username or password",
    "http basic",
    "the requested url returned error: 401",
    "the requested url returned error: 403",
    "host key verification failed",
    "terminal prompts disabled",
)


class GitSourceError(Exception):
    """The repository cannot be read as asked. ``field`` names the input at fault: url, revision,
    path or credentials."""

    def __init__(self, message: str, field: str = "url") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class GitCredentials:
    username: str = ""
    password: str = ""
    ssh_private_key: str = ""
    ssh_known_hosts: str = ""

    def secrets(self) -> list[str]:
        return [secret for secret in (self.password, self.ssh_private_key) if secret]


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative to the path asked for
    blob: str
    size: int
    symlink: bool


def validated_repository_url(url: str, local_roots: LocalRoots = NO_LOCAL_SOURCES) -> str:
    """The URL as it will be used; GitSourceError(field="url") when it is not one we can fetch from. A
    local path or file:// URL is one only under ``local_roots``; whether it exists is never said."""
    url = (url or "").strip()
    if not url or url.startswith("-"):
        raise GitSourceError("A git URL (https://, ssh://, git@host:path) is required.")
    if _PASSWORD_IN_URL.match(url):
        raise GitSourceError("Do not put a password in the URL; give it as the repository's password.")
    if url.startswith("/") or url.lower().startswith("file:"):
        if local_roots.refusal(local_location(url) or "") is not None:
            raise GitSourceError(LOCAL_SOURCE_REFUSED)
        return url
    if _URL.match(url) or SCP_LIKE.match(url):
        return url
    raise GitSourceError(f"{url!r} is not a git URL (https://, ssh://, git@host:path).")


def validated_path(path: str) -> str:
    """A folder of the repository, relative to its root ("" for the root)."""
    candidate = (path or "").strip().strip("/")
    if "\\" in candidate or any(part in ("..",) for part in candidate.split("/")):
        raise GitSourceError(f"path {path!r} must be a folder inside the repository, without '..'.", "path")
    normalised = posixpath.normpath(candidate) if candidate else ""
    return "" if normalised == "." else normalised


def validated_revision(revision: str) -> str:
    revision = (revision or "").strip()
    if revision.startswith("-") or any(char in revision for char in " \t\n~^:?*[\\") or ".." in revision:
        raise GitSourceError(f"{revision!r} is not a branch, tag or commit.", "revision")
    return revision


class GitMirror:
    """A repository's bare mirror in ``cache_dir``; every method is safe to call from several processes."""

    def __init__(
        self,
        url: str,
        credentials: GitCredentials,
        cache_dir: str,
        timeout_s: float = 120,
        *,
        local_roots: LocalRoots = NO_LOCAL_SOURCES,
        route: Callable[[str], Any] | None = None,
    ) -> None:
        self.url = validated_repository_url(url, local_roots)
        self.credentials = credentials
        self.timeout_s = timeout_s
        self.route = route
        key = hashlib.sha256(self.url.encode()).hexdigest()[:24]
        self.directory = Path(cache_dir).resolve() / f"{key}.git"

    # ---------------------------------------------------------------------------------------- running

    @contextlib.contextmanager
    def _environment(self, ssh_options: Sequence[str] = ()) -> Iterator[dict[str, str]]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GIT_", "SSH_ASKPASS")) and key != "SSH_AUTH_SOCK"
        }
        env.update(
            GIT_TERMINAL_PROMPT="0",
            GIT_ALLOW_PROTOCOL="file:git:http:https:ssh",
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            LC_ALL="C",
        )
        credentials = self.credentials
        if credentials.password and self.url.lower().startswith(("http://", "https://")):
            token = base64.b64encode(f"{credentials.username}:{credentials.password}".encode()).decode()
            env.update(
                GIT_CONFIG_COUNT="1",
                GIT_CONFIG_KEY_0=f"http.{self.url}.extraHeader",
                GIT_CONFIG_VALUE_0=f"Authorization: Basic {token}",
            )
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="policy-git-") as private:
            known_hosts = Path(f"{self.directory}.known_hosts")
            checking = "accept-new"  # the first host key seen is kept and required from then on
            if credentials.ssh_known_hosts:
                known_hosts = Path(private) / "known_hosts"
                known_hosts.write_text(credentials.ssh_known_hosts.strip() + "\n")
                checking = "yes"
            ssh = ["ssh", "-F", os.devnull, "-o", "BatchMode=yes", "-o", f"StrictHostKeyChecking={checking}"]
            ssh += ["-o", f"UserKnownHostsFile={known_hosts}"]
            if credentials.ssh_private_key:
                key = Path(private) / "key"
                key.touch(mode=0o600)
                key.write_text(credentials.ssh_private_key.strip() + "\n")
                ssh += ["-i", str(key), "-o", "IdentitiesOnly=yes"]
            env["GIT_SSH_COMMAND"] = shlex.join([*ssh, *ssh_options])
            yield env

    def _scrub(self, text: str) -> str:
        for secret in self.credentials.secrets():
            text = text.replace(secret, "***")
        return text

    def _remote_route(self, what: str) -> tuple[list[str], Sequence[str]]:
        """Checked now, before the command that reaches the remote: git's arguments and ssh's options."""
        if self.route is None or local_location(self.url) is not None:
            return [], ()
        try:
            route = self.route(self.url)
        except ValueError as refused:
            raise GitSourceError(f"{what}: {refused}", "url") from None
        return route.git_arguments(), route.ssh_options

    def _git(
        self,
        arguments: list[str],
        what: str,
        *,
        stdin: bytes | None = None,
        field: str = "url",
        remote: bool = False,
    ) -> bytes:
        git_arguments, ssh_options = self._remote_route(what) if remote else ([], ())
        with self._environment(ssh_options) as env:
            try:
                result = subprocess.run(
                    ["git", *git_arguments, *arguments],
                    input=stdin,
                    capture_output=True,
                    env=env,
                    timeout=self.timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise GitSourceError(
                    f"{what}: git did not finish within {self.timeout_s:g} s", field
                ) from None
        if result.returncode != 0:
            message = self._scrub(_last_lines(result.stderr.decode("utf-8", "replace")))
            if any(problem in message.lower() for problem in _CREDENTIAL_PROBLEMS):
                field = "credentials"
            raise GitSourceError(f"{what}: {message}", field)
        return result.stdout

    def _mirror(self, *arguments: str) -> list[str]:
        return ["--git-dir", str(self.directory), *arguments]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.directory}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # --------------------------------------------------------------------------------------- resolving

    def _has_commit(self, commit: str) -> bool:
        if not _FULL_COMMIT.match(commit) or not self.directory.is_dir():
            return False
        try:
            self._git(self._mirror("cat-file", "-e", f"{commit}^{{commit}}"), "reading the cache")
        except GitSourceError:
            return False
        return True

    def _peel(self, object_id: str, revision: str) -> str:
        try:
            output = self._git(
                self._mirror("rev-parse", "--verify", "--end-of-options", f"{object_id}^{{commit}}"),
                f"resolving {revision or 'the default branch'!r}",
                field="revision",
            )
        except GitSourceError:
            raise GitSourceError(
                f"{revision!r} is not a branch, tag or commit of {self.url}", "revision"
            ) from None
        return output.decode().strip()

    def _listed(self, revision: str) -> str | None:
        """The commit (or tag object) the remote names ``revision`` (or its default branch) now."""
        wanted = revision or "HEAD"
        patterns = [wanted]
        if revision:
            patterns = [f"refs/heads/{revision}", f"refs/tags/{revision}", f"refs/tags/{revision}^{{}}"]
        listing = self._git(
            ["ls-remote", "--", self.url, *patterns], f"reaching {self.url}", remote=True
        ).decode()
        refs = dict(reversed(line.split("\t", 1)) for line in listing.splitlines() if "\t" in line)
        if not revision:
            return refs.get("HEAD")
        for name in (f"refs/heads/{revision}", f"refs/tags/{revision}^{{}}", f"refs/tags/{revision}"):
            if name in refs:
                return refs[name]
        return None

    def _fetch(self) -> None:
        if not self.directory.is_dir():
            self._git(["init", "--bare", "--quiet", str(self.directory)], "creating the repository cache")
        self._git(
            self._mirror(
                "fetch",
                "--quiet",
                "--force",
                "--prune",
                "--no-tags",
                "--",
                self.url,
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ),
            f"fetching {self.url}",
            remote=True,
        )

    def resolve(self, revision: str) -> str:
        """The commit ``revision`` (a branch, tag or commit; empty: the default branch) names now, with
        the mirror holding it afterwards."""
        revision = validated_revision(revision)
        with self._locked():
            if revision and self._has_commit(revision.lower()):
                return revision.lower()  # a full commit id we hold never changes: no need to ask the remote
            listed = self._listed(revision)
            if listed is None and not _HEX.match(revision):
                if not revision:
                    raise GitSourceError(f"{self.url} has no default branch (is it empty?)", "url")
                raise GitSourceError(f"{revision!r} is not a branch, tag or commit of {self.url}", "revision")
            if listed is None or not self._has_object(listed):
                self._fetch()
            return self._peel(listed or revision, revision)

    def _has_object(self, object_id: str) -> bool:
        if not self.directory.is_dir():
            return False
        try:
            self._git(self._mirror("cat-file", "-e", object_id), "reading the cache")
        except GitSourceError:
            return False
        return True

    # ----------------------------------------------------------------------------------------- reading

    def tree(self, commit: str, path: str) -> list[TreeEntry]:
        """Every file under ``path`` at ``commit`` (paths relative to ``path``); submodules are left out."""
        path = validated_path(path)
        arguments = ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]
        if path:
            arguments += ["--", f"{path}/"]
        output = self._git(self._mirror(*arguments), f"listing {path or 'the repository'} at {commit[:12]}")
        entries = []
        for record in output.decode("utf-8", "surrogateescape").split("\0"):
            if not record:
                continue
            meta, name = record.split("\t", 1)
            mode, kind, blob, size = meta.split()
            if kind != "blob":
                continue
            relative = name[len(path) + 1 :] if path else name
            entries.append(TreeEntry(relative, blob, int(size), mode == "120000"))
        if path and not entries:
            raise GitSourceError(f"the folder {path!r} does not exist at commit {commit[:12]}", "path")
        return entries

    def read(self, entries: list[TreeEntry]) -> dict[str, bytes]:
        """The contents of some files of ``tree`` (by their path), within size limits."""
        for entry in entries:
            if entry.size > MAX_FILE_BYTES:
                raise GitSourceError(f"{entry.path} is larger than {MAX_FILE_BYTES // 1024} KB", "path")
        if sum(entry.size for entry in entries) > MAX_TOTAL_BYTES:
            raise GitSourceError(
                f"the policy's files are larger than {MAX_TOTAL_BYTES // (1024 * 1024)} MB", "path"
            )
        if not entries:
            return {}
        batch = "".join(f"{entry.blob}\n" for entry in entries).encode()
        output = self._git(self._mirror("cat-file", "--batch"), "reading files", stdin=batch)
        contents: dict[str, bytes] = {}
        position = 0
        for entry in entries:
            header_end = output.index(b"\n", position)
            size = int(output[position:header_end].split()[2])
            contents[entry.path] = output[header_end + 1 : header_end + 1 + size]
            position = header_end + 1 + size + 1
        return contents


def _last_lines(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("hint:")]
    return " ".join(lines[-2:]) if lines else "git failed"
