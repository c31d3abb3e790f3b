"""The file sandbox of templates (policies_app/iac/file_sandbox.py and its users), tried as an attacker
would (issue 16, finding 1): every file function, module sources, fileset patterns, symlinks in each kind
of source, hostile archives, local paths, and the messages an evaluation shows."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from policies_app.iac import template_archives
from policies_app.iac.configuration import evaluate_configuration
from policies_app.iac.file_sandbox import LOCAL_SOURCE_REFUSED, LocalRoots, relative_document
from policies_app.iac.functions import FunctionContext, FunctionError, call_function
from policies_app.iac.isolated import evaluate_configuration_isolated
from policies_app.iac.sources import TemplateSourceError, checkout_template
from policies_app.iac.template_archives import extract_archive
from policies_app.iac.values import TfSet
from tests.engine.test_iac_eval_support import errors, outputs, write_config
from tests.engine.test_template_sources import git, tar_gz

SECRET = "the server's secret"
READING_FUNCTIONS = [
    "file",
    "filebase64",
    "fileexists",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesha512",
    "filebase64sha256",
    "filebase64sha512",
]


@pytest.fixture
def server(tmp_path: Path) -> Path:
    """A server's disk: a secret beside the folder that holds the template's source root."""
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "secret-key").write_text(SECRET)
    source = tmp_path / "cache" / "archives" / "a1b2"
    write_config(
        source,
        {
            "main.tf": "",
            "files/hello.txt": "hello",
            "modules/app/main.tf": "",
            "modules/app/user.tpl": "name=${name}",
        },
    )
    return source


def context(root: Path, module: str = ".") -> FunctionContext:
    directory = str((root / module).resolve())
    return FunctionContext(module_dir=directory, source_root=str(root), cwd=str(root))


def refusal(name: str, *args, ctx: FunctionContext) -> str:
    with pytest.raises(FunctionError) as refused:
        call_function(name, list(args), ctx)
    return str(refused.value)


# --- the file functions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", READING_FUNCTIONS)
def test_every_reading_function_refuses_an_absolute_path_outside_without_naming_it(server: Path, name: str):
    secret = str(server.parents[2] / "var" / "secret-key")
    message = refusal(name, secret, ctx=context(server))
    assert "outside the template" in message
    assert str(server.parents[2]) not in message and SECRET not in message


@pytest.mark.parametrize("name", READING_FUNCTIONS)
@pytest.mark.parametrize("path", ["../../../var/secret-key", "files/../../../../var/secret-key", "~/.bashrc"])
def test_every_reading_function_refuses_to_climb_out_of_the_source_root(server: Path, name: str, path: str):
    message = refusal(name, path, ctx=context(server))
    assert "outside the template" in message and str(server.parents[2]) not in message


def test_templatefile_refuses_outside_paths_and_a_missing_file_inside_is_named_relative_to_the_root(
    server: Path,
):
    ctx = context(server)
    ctx.render_template = lambda text, filename, variables: text
    assert "outside the template" in refusal("templatefile", "../../../var/secret-key", {}, ctx=ctx)
    # An absolute path inside the root (as path.cwd or abspath() give) reads; a missing one is named
    # relative to the root, not by its place on the server.
    assert call_function("templatefile", [f"{server}/files/hello.txt", {}], ctx) == "hello"
    message = refusal("file", f"{server}/files/nope.txt", ctx=ctx)
    assert message.endswith('no file exists at "files/nope.txt"') and str(server) not in message


def test_a_module_reads_above_its_own_folder_as_long_as_it_stays_in_the_source_root(server: Path):
    # Terraform modules read "${path.module}/../../templates/..." above their directory (PITFALLS): the
    # root is the source's, not the module's.
    ctx = context(server, "modules/app")
    assert call_function("file", ["modules/app/../../files/hello.txt"], ctx) == "hello"
    assert "outside the template" in refusal("file", "modules/app/../../../x", ctx=ctx)


def test_a_symlink_inside_the_source_that_points_out_is_not_followed_by_any_function(server: Path):
    (server / "files" / "key").symlink_to(server.parents[2] / "var" / "secret-key")
    (server / "files" / "var").symlink_to(server.parents[2] / "var")
    ctx = context(server)
    for name in READING_FUNCTIONS:
        assert "outside the template" in refusal(name, "files/key", ctx=ctx)
        assert "outside the template" in refusal(name, "files/var/secret-key", ctx=ctx)
    assert call_function("fileset", ["files", "**"], ctx) == TfSet(["hello.txt"])


@pytest.mark.parametrize(
    ("base", "pattern"),
    [
        (".", "../*"),
        (".", "../../../var/*"),
        (".", "**/../../../../var/*"),
        ("..", "*"),
        ("files", "../../../../var/secret-key"),
    ],
)
def test_fileset_patterns_that_reach_out_of_the_source_root_are_refused(
    server: Path, base: str, pattern: str
):
    message = refusal("fileset", base, pattern, ctx=context(server))
    assert "outside the template" in message and str(server.parents[2]) not in message


def test_fileset_alternatives_and_absolute_bases_find_only_files_of_the_source(server: Path):
    ctx = context(server)
    assert call_function("fileset", [".", "{..,files}/*"], ctx) == TfSet(["files/hello.txt"])
    assert call_function("fileset", [str(server), "files/*"], ctx) == TfSet(["files/hello.txt"])
    message = refusal("fileset", ".", "files/[", ctx=ctx)
    assert 'failed to glob pattern "files/["' in message and str(server) not in message


def test_fileset_walks_a_symlink_loop_once(server: Path):
    (server / "files" / "again").symlink_to("..")
    (server / "files" / "twice").symlink_to("..")
    assert call_function("fileset", ["files", "**/hello.txt"], context(server)) == TfSet(["hello.txt"])


# --- module sources and one source root per template ------------------------------------------------------------


def test_one_archive_cannot_reach_another_in_the_same_cache(tmp_path: Path):
    cache = tmp_path / "cache"
    other = Path(extract_archive(tar_gz({"mod/main.tf": b'output "x" { value = "theirs" }\n'}), str(cache)))
    (other / "mod" / "secret.txt").write_text(SECRET)
    sibling = f"../{other.name}"
    ours = Path(
        extract_archive(
            tar_gz(
                {
                    "main.tf": (
                        f'module "m" {{\n  source = "{sibling}/mod"\n}}\n'
                        f'module "up" {{\n  source = "../../archives/{other.name}/mod"\n}}\n'
                        f'output "read" {{ value = file("{sibling}/mod/secret.txt") }}\n'
                        f'output "listed" {{ value = fileset("..", "*/mod/*") }}\n'
                    ).encode()
                }
            ),
            str(cache),
        )
    )
    document = evaluate_configuration(str(ours), source_root=str(ours))
    assert [e["summary"] for e in errors(document)] == [
        "Module outside the template",
        "Module outside the template",
        "Error in function call",
        "Error in function call",
    ]
    assert SECRET not in json.dumps(document)


def test_a_local_directory_with_a_symlink_out_is_refused_before_anything_reads_it(tmp_path: Path):
    repository = write_config(tmp_path / "roots" / "repo", {"web/main.tf": ""})
    roots = LocalRoots(allowed=(str(tmp_path / "roots"),))
    assert checkout_template(
        str(repository), None, "web", str(tmp_path / "cache"), local_roots=roots
    ).root == str(repository)
    (repository / "web" / "secrets.auto.tfvars").symlink_to(tmp_path / "outside.tfvars")
    with pytest.raises(
        TemplateSourceError, match="symlink 'web/secrets.auto.tfvars' points outside"
    ) as refused:
        checkout_template(str(repository), None, "web", str(tmp_path / "cache"), local_roots=roots)
    assert "outside.tfvars" not in str(refused.value)


def test_a_git_repository_symlink_through_the_path_cannot_widen_the_root(tmp_path: Path):
    repository = write_config(tmp_path / "repo", {"web/main.tf": ""})
    (repository / "web" / "back").symlink_to("..")
    git(repository, "init", "--quiet", "--initial-branch=main")
    git(repository, "add", ".")
    git(repository, "commit", "--quiet", "-m", "first")
    roots = LocalRoots(allowed=(str(repository),))
    checkout = checkout_template(
        str(repository), "main", "web/back/web", str(tmp_path / "cache"), local_roots=roots
    )
    assert checkout.root == str(tmp_path / "cache" / checkout.commit)


# --- archives ------------------------------------------------------------------------------------------------


def tar_with(*members: tarfile.TarInfo, data: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            content = (data or {}).get(member.name)
            archive.addfile(member, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, size
    return info


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (lambda: tar_with(member("../main.tf")), "leaves the archive folder"),
        (lambda: tar_with(member("/etc/cron.d/x")), "has an absolute path"),
        (lambda: tar_with(member("link", tarfile.SYMTYPE, "/etc/passwd")), "outside the archive"),
        (lambda: tar_with(member("a/link", tarfile.SYMTYPE, "../../var")), "outside the archive"),
        (lambda: tar_with(member("hard", tarfile.LNKTYPE, "../../var/secret-key")), "outside the archive"),
        (lambda: tar_with(member("hard", tarfile.LNKTYPE, "/etc/passwd")), "outside the archive"),
        (lambda: tar_with(member("disk", tarfile.BLKTYPE)), "is not a file, folder or link"),
        (lambda: tar_with(member("tty", tarfile.CHRTYPE)), "is not a file, folder or link"),
        (lambda: tar_with(member("pipe", tarfile.FIFOTYPE)), "is not a file, folder or link"),
        # Each link points inside by its text, but "up/.." resolves to the archive's parent.
        (
            lambda: tar_with(
                member("up", tarfile.SYMTYPE, "."),
                member("out", tarfile.SYMTYPE, "up/.."),
                member("out/evil.tf", size=1),
                data={"out/evil.tf": b"x"},
            ),
            "outside",
        ),
    ],
)
def test_a_hostile_archive_is_refused_writes_nothing_outside_and_leaves_nothing(tmp_path, payload, message):
    cache = tmp_path / "cache"
    with pytest.raises(TemplateSourceError, match=message) as refused:
        extract_archive(payload(), str(cache))
    assert str(tmp_path) not in str(refused.value)
    assert [p.name for p in (cache / "archives").iterdir()] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_an_archive_over_the_member_or_size_bounds_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    monkeypatch.setattr(template_archives, "MAX_ARCHIVE_MEMBERS", 3)
    many = tar_gz({f"f{i}.tf": b"" for i in range(4)})
    with pytest.raises(TemplateSourceError, match="more than 3 members"):
        extract_archive(many, str(tmp_path / "cache"))
    monkeypatch.setattr(template_archives, "MAX_ARCHIVE_BYTES", 1000)
    # A bomb: 64 MB of zeros declared by one member, a few dozen kilobytes compressed. Refused on its
    # header, before its data is inflated.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.addfile(member("zeros", size=64 * 1024 * 1024), io.BytesIO(bytes(64 * 1024 * 1024)))
    with pytest.raises(TemplateSourceError, match="unpacks to more than 1000 bytes"):
        extract_archive(buffer.getvalue(), str(tmp_path / "cache"))
    assert [p.name for p in (tmp_path / "cache" / "archives").iterdir()] == []


def test_a_zip_symlink_member_is_refused(tmp_path):
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("link")
        info.external_attr = (0o120777 << 16) | 0
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(TemplateSourceError, match="zip symlinks are refused"):
        extract_archive(buffer.getvalue(), str(tmp_path / "cache"))


# --- local directories ----------------------------------------------------------------------------------------


@pytest.fixture
def roots(tmp_path: Path) -> LocalRoots:
    (tmp_path / "roots" / "repo").mkdir(parents=True)
    (tmp_path / "platform" / "var").mkdir(parents=True)
    (tmp_path / "roots" / "escape").symlink_to(tmp_path / "platform")
    (tmp_path / "roots" / "platform-var").symlink_to(tmp_path / "platform" / "var")
    return LocalRoots(allowed=(str(tmp_path / "roots"),), forbidden=(str(tmp_path / "platform" / "var"),))


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/etc",
        "/no/such/directory",
        "{tmp}/platform",
        "{tmp}/roots/../platform",
        "{tmp}/roots/escape",  # under the root by name, elsewhere once resolved
        "{tmp}/roots/platform-var",
        "roots/repo",  # relative: depends on where the server runs
        "~/repo",
        "{tmp}/roots/repo\x00",
    ],
)
def test_a_local_path_outside_the_listed_roots_gets_one_answer_whether_or_not_it_exists(
    roots, tmp_path, path
):
    assert roots.refusal(path.format(tmp=tmp_path)) == LOCAL_SOURCE_REFUSED


def test_the_platforms_own_files_are_refused_even_under_a_listed_root(tmp_path: Path):
    (tmp_path / "srv" / "platform" / "var").mkdir(parents=True)
    (tmp_path / "srv" / "templates").mkdir()
    roots = LocalRoots(
        allowed=(str(tmp_path / "srv"),), forbidden=(str(tmp_path / "srv" / "platform" / "var"),)
    )
    assert roots.refusal(str(tmp_path / "srv" / "templates")) is None
    assert roots.refusal(str(tmp_path / "srv" / "platform" / "var" / "cache")) == LOCAL_SOURCE_REFUSED
    assert roots.refusal(str(tmp_path / "srv")) == LOCAL_SOURCE_REFUSED  # holds the platform's files
    assert LocalRoots(allowed=("/",)).refusal("/srv") == LOCAL_SOURCE_REFUSED  # "/" lists nothing


@pytest.mark.parametrize(
    "repository", ["/", "/etc", "/no/such/dir", "file:///", "file:///etc", "file://localhost/etc"]
)
def test_a_template_repository_on_the_servers_disk_is_refused_without_saying_if_it_exists(
    tmp_path, repository
):
    with pytest.raises(TemplateSourceError) as refused:
        checkout_template(repository, None, "", str(tmp_path / "cache"))
    assert str(refused.value) == f"repository {repository!r}: {LOCAL_SOURCE_REFUSED}"
    assert not (tmp_path / "cache").exists()


# --- messages ------------------------------------------------------------------------------------------------


def test_what_an_evaluation_shows_names_no_path_of_the_server(tmp_path: Path, server: Path):
    write_config(
        server,
        {
            "main.tf": """
                output "abs" { value = file("%s") }
                output "up" { value = file("../../../var/secret-key") }
                output "missing" { value = file("${path.cwd}/files/missing.txt") }
                output "tpl" { value = templatefile("${path.module}/files/broken.tpl", {}) }
                output "glob" { value = fileset(path.cwd, "[") }
                output "cwd_read" { value = file("${path.cwd}/files/hello.txt") }
                module "out" {
                  source = "../../../var"
                }
                module "broken" {
                  source = "./modules/broken"
                }
                """
            % (server.parents[2] / "var" / "secret-key"),
            "files/broken.tpl": "${nope",
            "modules/broken/main.tf": 'output "x" {\n  value = \n}\n',
        },
    )
    document = evaluate_configuration_isolated(
        str(server), variables={}, cache_dir=str(tmp_path / "parse"), timeout_s=60, source_root=str(server)
    )
    shown = json.dumps(document["diagnostics"])
    assert len(errors(document)) >= 7
    assert str(tmp_path) not in shown and SECRET not in json.dumps(document)
    assert outputs(document)["cwd_read"] == "hello"
    files = {e["file"] for e in errors(document)}
    assert files == {"main.tf", "./files/broken.tpl", "modules/broken/main.tf"}  # as the template wrote it


def test_diagnostics_naming_files_outside_the_root_lose_the_name(tmp_path: Path):
    document = {
        "diagnostics": [
            {"file": "/etc/passwd", "summary": "x", "detail": f"read {tmp_path}/root/a.tf and /etc"},
            {"file": f"{tmp_path}/root/m/main.tf", "summary": "y", "detail": f"at {tmp_path}/root"},
        ]
    }
    shown = relative_document(document, str(tmp_path / "root"), (str(tmp_path), "(server)"))["diagnostics"]
    assert [(d["file"], d["detail"]) for d in shown] == [
        (None, "read a.tf and /etc"),
        ("m/main.tf", "at ."),
    ]
    assert os.path.isabs(document["diagnostics"][0]["file"])  # the original is left alone
