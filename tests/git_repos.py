"""Real git repositories for tests: a working copy that commits and pushes to a bare "origin", which
the platform syncs from (a local path, as a repository on a server would be)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(directory: Path, *arguments: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(directory), *arguments], capture_output=True, text=True, env=_ENV, check=False
    )
    assert result.returncode == 0, f"git {' '.join(arguments)}: {result.stderr}"
    return result.stdout.strip()


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.origin = root / "origin.git"
        self.work = root / "work"
        subprocess.run(["git", "init", "--bare", "-q", "-b", "main", str(self.origin)], check=True, env=_ENV)
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.work)], check=True, env=_ENV)
        git(self.work, "remote", "add", "origin", str(self.origin))

    @property
    def url(self) -> str:
        return str(self.origin)

    def write(self, files: dict[str, str | None]) -> None:
        """Write (or, for None, delete) files of the working copy."""
        for name, text in files.items():
            path = self.work / name
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def commit(self, files: dict[str, str | None], message: str = "change", push: bool = True) -> str:
        self.write(files)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        if push:
            git(self.work, "push", "-q", "origin", f"HEAD:refs/heads/{self.branch}")
        return self.head()

    @property
    def branch(self) -> str:
        return git(self.work, "rev-parse", "--abbrev-ref", "HEAD")

    def head(self) -> str:
        return git(self.work, "rev-parse", "HEAD")

    def checkout(self, branch: str, create: bool = False) -> None:
        git(self.work, "checkout", "-q", *(["-b"] if create else []), branch)

    def tag(self, name: str) -> None:
        git(self.work, "tag", "-a", name, "-m", name)
        git(self.work, "push", "-q", "origin", f"refs/tags/{name}")

    def force_push_rewrite(self, files: dict[str, str | None], message: str = "rewritten") -> str:
        """Drop the last commit and push another in its place with --force."""
        git(self.work, "reset", "-q", "--hard", "HEAD~1")
        self.commit(files, message, push=False)
        git(self.work, "push", "-q", "--force", "origin", f"HEAD:refs/heads/{self.branch}")
        return self.head()
