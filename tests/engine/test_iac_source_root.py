"""The template's whole source, which an evaluation may read: the checkout holding the template's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies_app.iac.configuration import evaluate_configuration
from policies_app.iac.file_sandbox import LocalRoots
from policies_app.iac.sources import TemplateSourceError, checkout_template, relative_template_path
from tests.engine.test_iac_eval_support import errors, outputs, write_config
from tests.engine.test_template_sources import git


def test_the_source_root_is_the_checkout_holding_the_templates_path(tmp_path: Path):
    # Was template_source_root(directory, path), which walked up from the directory one level per part of
    # the path: through a symlink to "." ("up" below) that walked out of the checkout into the cache.
    repository = tmp_path / "repo"
    (repository / "envs" / "prod").mkdir(parents=True)
    (repository / "envs" / "prod" / "main.tf").write_text("")
    (repository / "up").symlink_to(".")
    git(repository, "init", "--quiet", "--initial-branch=main")
    git(repository, "add", ".")
    git(repository, "commit", "--quiet", "-m", "first")
    cache = tmp_path / "cache"
    roots = LocalRoots(allowed=(str(repository),))
    for path in ("envs/prod", ".", "", "up", "up/envs/prod"):
        checkout = checkout_template(str(repository), "main", path, str(cache), local_roots=roots)
        assert checkout.root == str(cache / checkout.commit)
        assert Path(checkout.directory).is_relative_to(checkout.root)
    with pytest.raises(TemplateSourceError):
        relative_template_path("../elsewhere")


def test_a_module_outside_the_templates_source_is_refused_and_its_files_never_read(tmp_path: Path):
    write_config(
        tmp_path,
        {
            "secret/main.tf": 'output "text" { value = file("${path.module}/key.txt") }\n',
            "secret/key.txt": "do not read",
            "template/envs/prod/main.tf": 'module "m" {\n  source = "../../../secret"\n}\noutput "t" { value = module.m.text }\n',
        },
    )
    document = evaluate_configuration(
        str(tmp_path / "template" / "envs" / "prod"), source_root=str(tmp_path / "template")
    )
    [problem] = errors(document)
    assert problem["summary"] == "Module outside the template" and problem["line"] == 2
    assert document["outputs"]["t"]["unknown"] is True


def test_by_default_only_the_root_modules_directory_may_be_read(tmp_path: Path):
    write_config(
        tmp_path,
        {
            "modules/m/main.tf": 'output "x" { value = 1 }\n',
            "root/main.tf": 'module "m" {\n  source = "../modules/m"\n}\noutput "x" { value = module.m.x }\n',
        },
    )
    assert [e["summary"] for e in errors(evaluate_configuration(str(tmp_path / "root")))] == [
        "Module outside the template"
    ]
    assert outputs(evaluate_configuration(str(tmp_path / "root"), source_root=str(tmp_path))) == {"x": 1}


def test_the_command_reads_the_whole_git_work_tree_by_default(tmp_path: Path):
    from io import StringIO

    from policies_app.iac.cli import default_source_root, run

    write_config(
        tmp_path,
        {
            "modules/m/main.tf": 'output "x" { value = 1 }\n',
            "envs/prod/main.tf": 'module "m" {\n  source = "../../modules/m"\n}\noutput "x" { value = module.m.x }\n',
        },
    )
    assert default_source_root(str(tmp_path / "envs" / "prod")) == str(tmp_path / "envs" / "prod")
    (tmp_path / ".git").mkdir()
    assert default_source_root(str(tmp_path / "envs" / "prod")) == str(tmp_path)
    out, err = StringIO(), StringIO()
    assert run(str(tmp_path / "envs" / "prod"), [], [], None, True, out, err) == 0
    assert '"x": {"value": 1' in out.getvalue()
    status = run(
        str(tmp_path / "envs" / "prod"), [], [], None, True, out, err, provider_schema="missing.json"
    )
    assert status == 2 and "--provider-schema missing.json" in err.getvalue()
