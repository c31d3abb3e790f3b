"""Template files from git or an uploaded archive (policies_app.iac.sources, policies_app.iac.template_archives)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from policies_app.iac.file_sandbox import LocalRoots
from policies_app.iac.sources import TemplateSourceError, checkout_template
from policies_app.iac.template_archives import extract_archive

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> dict:
    """A repository with main (2 commits), a tag v1 on the first, and a branch 'feature/x'."""
    path = tmp_path / "origin"
    (path / "stacks" / "web").mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / "stacks" / "web" / "main.tf").write_text('resource "terraform_data" "v1" {}\n')
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "first")
    first = git(path, "rev-parse", "HEAD")
    git(path, "tag", "-a", "v1", "-m", "release 1")
    git(path, "checkout", "--quiet", "-b", "feature/x")
    (path / "stacks" / "web" / "main.tf").write_text('resource "terraform_data" "feature" {}\n')
    git(path, "commit", "--quiet", "-am", "feature")
    feature = git(path, "rev-parse", "HEAD")
    git(path, "checkout", "--quiet", "main")
    (path / "stacks" / "web" / "main.tf").write_text('resource "terraform_data" "v2" {}\n')
    git(path, "commit", "--quiet", "-am", "second")
    second = git(path, "rev-parse", "HEAD")
    return {"path": path, "url": path.as_uri(), "first": first, "second": second, "feature": feature}


@pytest.fixture
def checkout_locally(tmp_path: Path):
    """checkout_template as the platform calls it, with the test's folder listed as a local root (the
    repositories here are local: LOCAL_REPOSITORY_ROOTS)."""
    roots = LocalRoots(allowed=(str(tmp_path),))

    def call(repository: str, revision: str | None, path: str, cache_dir: str):
        return checkout_template(repository, revision, path, cache_dir, local_roots=roots)

    return call


def main_tf(directory: str) -> str:
    return (Path(directory) / "main.tf").read_text()


# -------------------------------------------------------------------------------------- revisions


def test_it_checks_out_the_default_branch_when_no_revision_is_given(repo, tmp_path, checkout_locally):
    cache = tmp_path / "cache"
    checkout = checkout_locally(repo["url"], None, "stacks/web", str(cache))
    directory = checkout.directory

    assert checkout.commit == repo["second"]
    assert Path(directory).is_absolute()
    assert directory == str((cache / repo["second"] / "stacks" / "web").resolve())
    assert '"v2"' in main_tf(directory)


@pytest.mark.parametrize(
    ("revision", "expected_commit", "resource"),
    [
        ("v1", "first", "v1"),  # annotated tag: the commit, not the tag object
        ("feature/x", "feature", "feature"),
        ("main", "second", "v2"),
    ],
)
def test_it_resolves_tags_and_branches_to_commits(
    repo, tmp_path, revision, expected_commit, resource, checkout_locally
):
    checkout = checkout_locally(repo["url"], revision, "stacks/web", str(tmp_path / "cache"))
    directory = checkout.directory
    assert checkout.commit == repo[expected_commit]
    assert Path(directory).parent.parent.name == repo[expected_commit]
    assert f'"{resource}"' in main_tf(directory)


def test_it_accepts_full_and_abbreviated_commit_ids_and_a_local_repository_path(
    repo, tmp_path, checkout_locally
):
    cache = str(tmp_path / "cache")
    by_full = checkout_locally(repo["url"], repo["feature"], "stacks/web", cache).directory
    by_short = checkout_locally(str(repo["path"]), repo["first"][:10], "stacks/web", cache).directory
    assert '"feature"' in main_tf(by_full)
    assert '"v1"' in main_tf(by_short)


def test_it_follows_a_branch_that_moved_since_the_last_checkout(repo, tmp_path, checkout_locally):
    cache = str(tmp_path / "cache")
    before = checkout_locally(repo["url"], "main", "stacks/web", cache).directory
    (repo["path"] / "stacks" / "web" / "main.tf").write_text('resource "terraform_data" "v3" {}\n')
    git(repo["path"], "commit", "--quiet", "-am", "third")
    after = checkout_locally(repo["url"], "main", "stacks/web", cache).directory

    assert before != after
    assert '"v3"' in main_tf(after) and '"v2"' in main_tf(before)


def test_the_same_commit_is_checked_out_once_and_reused(repo, tmp_path, checkout_locally):
    cache = tmp_path / "cache"
    first = checkout_locally(repo["url"], "main", "stacks/web", str(cache)).directory
    marker = Path(first) / "marker-left-by-the-test"
    marker.write_text("still here")
    checkout_root = cache / repo["second"]
    inode = checkout_root.stat().st_ino
    mirror = next((cache / ".repos").glob("*.git"))
    mirror_inode = mirror.stat().st_ino
    fetched_at = (mirror / "FETCH_HEAD").stat().st_mtime_ns

    # Same commit through another name (full id), another path and the local-path form of the URL.
    again = checkout_locally(repo["url"], repo["second"], "stacks", str(cache)).directory
    assert Path(again) == Path(first).parent
    assert marker.read_text() == "still here"
    assert checkout_root.stat().st_ino == inode
    assert mirror.stat().st_ino == mirror_inode
    # The branch name again: the remote is asked where main points, but nothing is fetched.
    assert checkout_locally(repo["url"], "main", "stacks/web", str(cache)).directory == first
    assert (mirror / "FETCH_HEAD").stat().st_mtime_ns == fetched_at
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [repo["second"]]


def test_it_returns_the_repository_root_for_an_empty_or_dot_path(repo, tmp_path, checkout_locally):
    cache = str(tmp_path / "cache")
    assert checkout_locally(repo["url"], "v1", "", cache) == checkout_locally(repo["url"], "v1", ".", cache)


# --------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("revision", "path", "message"),
    [
        ("no-such-branch", "stacks/web", "unknown revision 'no-such-branch'"),
        ("deadbeef", "stacks/web", "unknown revision 'deadbeef'"),
        ("main", "../outside", "leaves the repository"),
        ("main", "stacks/../../outside", "leaves the repository"),
        ("main", "/etc", "must be relative"),
        ("main", "stacks/missing", "does not exist"),
        ("main", "stacks/web/main.tf", "is not a directory"),
        ("--upload-pack=touch /tmp/pwned", "stacks", "is not a branch, tag or commit id"),
    ],
)
def test_it_rejects_bad_revisions_and_paths(repo, tmp_path, revision, path, message, checkout_locally):
    with pytest.raises(TemplateSourceError, match=message):
        checkout_locally(repo["url"], revision, path, str(tmp_path / "cache"))


def test_it_rejects_a_repository_that_is_neither_a_directory_nor_reachable(tmp_path, checkout_locally):
    with pytest.raises(TemplateSourceError, match="no such directory"):
        checkout_locally(str(tmp_path / "nothing-here"), None, "", str(tmp_path / "cache"))
    with pytest.raises(TemplateSourceError, match="listing"):
        checkout_locally((tmp_path / "nothing-here").as_uri(), None, "", str(tmp_path / "cache"))
    with pytest.raises(TemplateSourceError, match="not a git URL"):
        checkout_locally("--config=core.sshCommand=x", None, "", str(tmp_path / "cache"))


def test_it_refuses_a_commit_holding_a_symlink_out_of_the_template(repo, tmp_path, checkout_locally):
    (repo["path"] / "stacks" / "web" / "secrets.tf").symlink_to("/etc/passwd")
    git(repo["path"], "add", ".")
    git(repo["path"], "commit", "--quiet", "-m", "sneaky")
    cache = tmp_path / "cache"
    with pytest.raises(TemplateSourceError, match="symlink 'stacks/web/secrets.tf' points outside"):
        checkout_locally(repo["url"], "main", "stacks/web", str(cache))
    assert not (cache / git(repo["path"], "rev-parse", "HEAD")).exists()


def test_a_plain_directory_is_used_in_place_and_has_no_revisions(tmp_path, checkout_locally):
    plain = tmp_path / "plain" / "stack"
    plain.mkdir(parents=True)
    checkout = checkout_locally(str(tmp_path / "plain"), None, "stack", str(tmp_path / "cache"))
    assert checkout.directory == str(plain.resolve())
    assert checkout.commit is None
    with pytest.raises(TemplateSourceError, match="plain directory: it has no revision 'main'"):
        checkout_locally(str(tmp_path / "plain"), "main", "stack", str(tmp_path / "cache"))


# --------------------------------------------------------------------------------------- archives


def tar_gz(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_it_extracts_a_tar_gz_and_reuses_it_for_the_same_bytes(tmp_path):
    payload = tar_gz({"stack/main.tf": b'resource "terraform_data" "a" {}\n'}, {"stack/alias.tf": "main.tf"})
    directory = extract_archive(payload, str(tmp_path / "cache"))

    assert Path(directory).is_absolute()
    assert (Path(directory) / "stack" / "main.tf").read_bytes().startswith(b"resource")
    assert (Path(directory) / "stack" / "alias.tf").read_text() == (
        Path(directory) / "stack" / "main.tf"
    ).read_text()
    (Path(directory) / "marker").write_text("kept")
    assert extract_archive(payload, str(tmp_path / "cache")) == directory
    assert (Path(directory) / "marker").read_text() == "kept"
    assert extract_archive(tar_gz({"other.tf": b""}), str(tmp_path / "cache")) != directory


def test_it_extracts_a_zip(tmp_path):
    directory = extract_archive(zip_bytes({"a/b/main.tf": b"# zip\n"}), str(tmp_path / "cache"))
    assert (Path(directory) / "a" / "b" / "main.tf").read_text() == "# zip\n"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (lambda: tar_gz({"../evil.tf": b"x"}), "leaves the archive folder"),
        (lambda: tar_gz({"/etc/evil.tf": b"x"}), "has an absolute path"),
        (lambda: tar_gz({"a/../../evil.tf": b"x"}), "leaves the archive folder"),
        (lambda: tar_gz({}, {"link": "/etc/passwd"}), "links to '/etc/passwd', outside the archive"),
        (lambda: tar_gz({}, {"a/link": "../../etc"}), "outside the archive"),
        (lambda: zip_bytes({"../evil.tf": b"x"}), "leaves the archive folder"),
        (lambda: zip_bytes({"C:/evil.tf": b"x"}), "has an absolute path"),
        (lambda: b"not an archive at all", "neither a zip nor a tar"),
    ],
)
def test_it_rejects_a_malicious_or_broken_archive_and_leaves_nothing_behind(tmp_path, payload, message):
    cache = tmp_path / "cache"
    with pytest.raises(TemplateSourceError, match=message):
        extract_archive(payload(), str(cache))
    assert not (tmp_path / "evil.tf").exists()
    assert [p.name for p in (cache / "archives").iterdir()] == []
