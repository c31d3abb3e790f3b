"""Module directories: which files count, .tofu precedence, override merging, the parse cache and
parallel parsing."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from policies_app.iac import loader, parse_cache, syntax_nodes
from policies_app.iac.loader import ConfigSyntaxError, load_module, parse_file

from .iac_render import render_body


def write(directory: Path, files: dict[str, str | dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        text = json.dumps(content) if isinstance(content, dict) else content
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def names(module: loader.ModuleFiles) -> list[str]:
    return [os.path.basename(f.path) for f in module.files]


def merged(module: loader.ModuleFiles) -> list[str]:
    out: list[str] = []
    for f in module.files:
        out.extend(render_body(f.body))
    return out


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    # each test sees parsing as a new process would (the in-process memo is an optimisation only)
    monkeypatch.setattr(loader, "_memo", loader.OrderedDict())
    monkeypatch.setattr(loader, "_memo_bytes", 0)


# ---- which files ----


def test_it_loads_all_four_suffixes_in_lexical_order_and_skips_other_files(tmp_path):
    write(
        tmp_path,
        {
            "b.tf": "b = 1\n",
            "a.tf.json": {"locals": {"a": 1}},
            "c.tofu": "c = 1\n",
            "d.tofu.json": {"locals": {"d": 1}},
            "notes.txt": "x",
            ".hidden.tf": "h = 1\n",
            "backup.tf~": "x = 1\n",
            "#lock.tf#": "x = 1\n",
            "vars.tfvars": "x = 1\n",
        },
    )
    (tmp_path / "sub.tf").mkdir()
    module = load_module(str(tmp_path))
    assert names(module) == ["a.tf.json", "b.tf", "c.tofu", "d.tofu.json"]
    assert module.ignored == []


def test_it_lets_a_tofu_file_replace_the_tf_file_of_the_same_name(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": "a = 1\n",
            "main.tofu": "a = 2\n",
            "x.tf.json": {"locals": {"x": 1}},
            "x.tofu.json": {"locals": {"x": 2}},
            "y.tf.json": {"locals": {"y": 1}},
            "y.tofu": "y = 1\n",
        },
    )
    module = load_module(str(tmp_path))
    assert names(module) == ["main.tofu", "x.tofu.json", "y.tf.json", "y.tofu"]
    assert module.ignored == ["main.tf", "x.tf.json"]
    assert merged(module)[0] == "a = 2"


def test_it_reports_a_broken_file_with_its_path_line_and_column(tmp_path):
    write(tmp_path, {"ok.tf": "a = 1\n", "broken.tf": 'resource "a" "b" {\n  x = [1, 2\n}\n'})
    with pytest.raises(ConfigSyntaxError) as info:
        load_module(str(tmp_path))
    assert info.value.file == str(tmp_path / "broken.tf")
    assert info.value.line == 3
    assert str(info.value).startswith(f"{tmp_path / 'broken.tf'}:3:")


def test_it_rejects_a_file_that_is_not_utf8(tmp_path):
    (tmp_path / "bad.tf").write_bytes(b'a = "ok"\nb = "\xff"\n')
    with pytest.raises(ConfigSyntaxError) as info:
        load_module(str(tmp_path))
    assert info.value.line == 2


# ---- overrides ----

BASE = """
resource "aws_instance" "web" {
  ami           = "ami-1"
  instance_type = "t2.micro"
  ebs_block_device {
    size = 1
  }
  ebs_block_device {
    size = 2
  }
  network_interface {
    id = "n"
  }
  lifecycle {
    ignore_changes        = [tags]
    create_before_destroy = false
  }
  provisioner "local-exec" {
    command = "one"
  }
}
"""


def test_it_merges_override_attributes_one_by_one_and_replaces_nested_blocks_per_type(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": BASE,
            "override.tf": """
resource "aws_instance" "web" {
  ami = "ami-2"
  ebs_block_device {
    size = 3
  }
  lifecycle {
    create_before_destroy = true
  }
  provisioner "remote-exec" {
    inline = ["two"]
  }
}
""",
        },
    )
    module = load_module(str(tmp_path))
    assert names(module) == ["main.tf"]
    assert module.overrides == ["override.tf"]
    assert merged(module) == [
        'resource "aws_instance" "web" {',
        '  ami = "ami-2"',
        '  instance_type = "t2.micro"',
        "  ebs_block_device {",
        "    size = 3",
        "  }",
        "  network_interface {",
        '    id = "n"',
        "  }",
        "  lifecycle {",
        "    ignore_changes = [tags]",
        "    create_before_destroy = true",
        "  }",
        '  provisioner "remote-exec" {',
        '    inline = ["two"]',
        "  }",
        "}",
    ]
    # the override's values keep their own position, for error messages
    attrs = module.files[0].body.blocks[0].body.attributes
    assert attrs["ami"].pos.file.endswith("override.tf")
    assert attrs["instance_type"].pos.file.endswith("main.tf")


def test_it_applies_override_files_in_lexical_order_later_ones_winning(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": 'variable "v" {\n  default = 1\n}\n',
            "b_override.tf": 'variable "v" {\n  default = 3\n}\n',
            "a_override.tf.json": {"variable": {"v": {"default": 2, "description": "from a"}}},
        },
    )
    module = load_module(str(tmp_path))
    assert module.overrides == ["a_override.tf.json", "b_override.tf"]
    assert merged(module) == ['variable "v" {', "  default = 3", '  description = "from a"', "}"]


def test_it_merges_locals_by_name_whatever_block_they_are_in(tmp_path):
    write(
        tmp_path,
        {
            "a.tf": "locals {\n  a = 1\n  b = 2\n}\n",
            "b.tf": "locals {\n  c = 3\n}\n",
            "override.tf": "locals {\n  b = 20\n  c = 30\n}\n",
        },
    )
    assert merged(load_module(str(tmp_path))) == [
        "locals {",
        "  a = 1",
        "  b = 20",
        "}",
        "locals {",
        "  c = 30",
        "}",
    ]


def test_it_merges_outputs_modules_and_providers_by_name_and_alias(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": 'output "o" {\n  value = 1\n}\nmodule "m" {\n  source = "./m"\n  x = 1\n}\n'
            'provider "aws" {\n  region = "a"\n}\nprovider "aws" {\n  alias = "w"\n  region = "b"\n}\n',
            "x_override.tf": 'output "o" {\n  value = 2\n}\nmodule "m" {\n  x = 2\n}\n'
            'provider "aws" {\n  alias = "w"\n  region = "c"\n}\n',
        },
    )
    assert merged(load_module(str(tmp_path))) == [
        'output "o" {',
        "  value = 2",
        "}",
        'module "m" {',
        '  source = "./m"',
        "  x = 2",
        "}",
        'provider "aws" {',
        '  region = "a"',
        "}",
        'provider "aws" {',
        '  alias = "w"',
        '  region = "c"',
        "}",
    ]


def test_it_merges_terraform_settings_one_by_one(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": 'terraform {\n  required_version = ">= 1.0"\n  backend "s3" {\n    bucket = "b"\n  }\n'
            '  required_providers {\n    aws = { source = "hashicorp/aws", version = "~> 4.0" }\n'
            '    random = { source = "hashicorp/random" }\n  }\n}\n',
            "override.tf": 'terraform {\n  required_version = ">= 1.5"\n  cloud {\n    organization = "o"\n  }\n'
            '  required_providers {\n    aws = { source = "hashicorp/aws", version = "~> 5.0" }\n  }\n}\n',
        },
    )
    assert merged(load_module(str(tmp_path))) == [
        "terraform {",
        '  required_version = ">= 1.5"',
        "  required_providers {",
        '    random = {"source"="hashicorp/random"}',
        '    aws = {"source"="hashicorp/aws", "version"="~> 5.0"}',
        "  }",
        "  cloud {",
        '    organization = "o"',
        "  }",
        "}",
    ]


def test_it_keeps_an_override_terraform_block_when_no_file_has_one(tmp_path):
    write(
        tmp_path,
        {"main.tf": "locals {\n  a = 1\n}\n", "override.tf": 'terraform {\n  required_version = "1"\n}\n'},
    )
    assert merged(load_module(str(tmp_path)))[-3:] == ["terraform {", '  required_version = "1"', "}"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            'resource "aws_instance" "other" {\n  ami = "x"\n}\n',
            'missing base resource configuration.*"other"',
        ),
        ("locals {\n  nope = 1\n}\n", 'missing base local value.*"nope"'),
        ('variable "nope" {\n  default = 1\n}\n', "missing base variable"),
        ('resource "aws_instance" "web" {\n  depends_on = [x.y]\n}\n', "depends_on may not be used"),
        ("moved {\n  from = a.b\n  to = a.c\n}\n", "cannot be overridden"),
    ],
)
def test_it_rejects_overrides_that_terraform_refuses(tmp_path, override, message):
    write(tmp_path, {"main.tf": BASE, "web_override.tf": override})
    with pytest.raises(ConfigSyntaxError, match=message) as info:
        load_module(str(tmp_path))
    assert info.value.file == str(tmp_path / "web_override.tf")


# ---- the parse cache ----

CONFIG = 'resource "terraform_data" "a" {\n  input = "${var.x}-1"\n}\n'


def test_it_reuses_a_cached_parse_without_parsing_again(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    write(tmp_path / "m", {"main.tf": CONFIG})
    first = load_module(str(tmp_path / "m"), cache_dir=str(cache))
    assert list(cache.rglob("*.ast"))
    monkeypatch.setattr(loader, "_memo", loader.OrderedDict())

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again instead of using the cache")

    monkeypatch.setattr(loader, "_parse_text", no_parsing)
    second = load_module(str(tmp_path / "m"), cache_dir=str(cache))
    assert second.files == first.files


def test_it_rebinds_a_cached_parse_to_the_path_of_the_file_with_the_same_content(tmp_path, monkeypatch):
    cache = str(tmp_path / "cache")
    write(tmp_path / "one", {"main.tf": CONFIG})
    write(tmp_path / "two", {"copy.tf": CONFIG})
    parse_file(str(tmp_path / "one" / "main.tf"), cache_dir=cache)
    monkeypatch.setattr(loader, "_memo", loader.OrderedDict())
    monkeypatch.setattr(loader, "_parse_text", lambda *a: pytest.fail("parsed again"))
    copy = parse_file(str(tmp_path / "two" / "copy.tf"), cache_dir=cache)
    expected = str(tmp_path / "two" / "copy.tf")
    block = copy.body.blocks[0]
    template = block.body.attributes["input"].expr
    assert copy.path == expected
    assert block.pos.file == expected
    assert template.parts[0].expr.pos == syntax_nodes.Pos(expected, 2, 14)


def _entry(cache: Path) -> Path:
    (entry,) = cache.rglob("*.ast")
    return entry


def _other_version_entry(entry: Path) -> bytes:
    data = entry.read_bytes()
    version = parse_cache.parser_version()
    return data.replace(version, b"0" * len(version), 1)


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: entry.read_bytes()[: len(entry.read_bytes()) // 2],  # truncated
        lambda entry: os.urandom(500),  # random bytes
        lambda entry: pickle.dumps({"not": "a file"}),  # a valid pickle of something else
        lambda entry: entry.read_bytes()[:-3] + b"zzz",  # damaged payload, checksum catches it
        _other_version_entry,  # written by another parser version
        lambda entry: (
            entry.read_bytes()[: len(parse_cache.MAGIC) + 36] + pickle.dumps(["x"])
        ),  # foreign payload
    ],
    ids=["truncated", "random", "foreign-pickle", "damaged", "other-version", "foreign-payload"],
)
def test_it_ignores_and_rebuilds_a_bad_cache_entry(tmp_path, monkeypatch, damage):
    cache = tmp_path / "cache"
    path = write(tmp_path / "m", {"main.tf": CONFIG}) / "main.tf"
    good = parse_file(str(path), cache_dir=str(cache))
    entry = _entry(cache)
    entry.write_bytes(damage(entry))
    monkeypatch.setattr(loader, "_memo", loader.OrderedDict())
    calls = []
    real = loader._parse_text
    monkeypatch.setattr(loader, "_parse_text", lambda *a: calls.append(a) or real(*a))
    again = parse_file(str(path), cache_dir=str(cache))
    assert calls, "the damaged entry was used instead of parsing"
    assert again == good
    # and the entry was rewritten: a third load comes from the cache
    assert parse_cache.load(str(cache), entry.stem, str(path)) == good


def test_it_refuses_to_unpickle_anything_but_syntax_tree_classes(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    blob = pickle.dumps(Evil())
    with pytest.raises(pickle.UnpicklingError):
        parse_cache.loads_file(blob, "x.tf")


def test_it_caches_json_and_native_parses_of_the_same_bytes_separately(tmp_path):
    cache = str(tmp_path / "cache")
    text = '{"locals": {"a": 1}}'
    write(tmp_path / "m", {"a.tf.json": text})
    as_json = parse_file(str(tmp_path / "m" / "a.tf.json"), cache_dir=cache)
    assert render_body(as_json.body) == ["locals {", "  a = 1", "}"]
    (tmp_path / "m" / "b.tf").write_text(text)
    with pytest.raises(ConfigSyntaxError):
        parse_file(str(tmp_path / "m" / "b.tf"), cache_dir=cache)


def test_it_still_loads_when_the_cache_folder_cannot_be_written(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    write(tmp_path / "m", {"main.tf": CONFIG})
    module = load_module(str(tmp_path / "m"), cache_dir=str(blocker / "cache"))
    assert len(module.files[0].body.blocks) == 1


# ---- parallel parsing ----


def _big_module(directory: Path, files: int = 4, resources: int = 120) -> Path:
    content = {}
    for f in range(files):
        blocks = [
            f'resource "terraform_data" "r{f}_{i}" {{\n  count = 2\n  input = {{\n'
            f'    name = "r{i}-${{count.index}}"\n    tags = merge(local.tags, {{ n = {i} }})\n  }}\n}}\n'
            for i in range(resources)
        ]
        content[f"r{f}.tf"] = "".join(blocks)
    return write(directory, content)


@pytest.fixture
def parallel_runs(monkeypatch):
    """Small inputs are parsed in parallel too (keeps the test fast); records what the pool parsed."""
    monkeypatch.setattr(loader, "_PARALLEL_MIN_BYTES", 1000)
    runs: list[dict] = []
    real = loader._parse_parallel

    def recording(bins, cache_dir):
        result = real(bins, cache_dir)
        runs.append(result)
        return result

    monkeypatch.setattr(loader, "_parse_parallel", recording)
    return runs


def run_alone(request) -> bool:
    """Parsing forks only in a single-threaded process (forking beside threads can deadlock), and earlier
    tests of a full run leave threads behind: then run the test again in a fresh interpreter."""
    if threading.active_count() == 1:
        return False
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:django",
            "-p",
            "no:cacheprovider",
            f"{__file__}::{request.node.name}",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:]
    return True


def test_it_parses_several_files_in_parallel_to_the_same_result(tmp_path, parallel_runs, request):
    if run_alone(request):
        return
    directory = _big_module(tmp_path / "m", resources=30)
    serial = load_module(str(directory), workers=1)
    assert parallel_runs == []
    loader._memo.clear()
    parallel = load_module(str(directory), workers=2, cache_dir=str(tmp_path / "cache"))
    assert len(parallel_runs) == 1 and len(parallel_runs[0]) == 4  # no silent fallback to serial
    assert parallel.files == serial.files
    assert len(list((tmp_path / "cache").rglob("*.ast"))) == 4  # the workers filled the cache too


def test_it_reports_a_syntax_error_found_by_a_parallel_worker(tmp_path, parallel_runs, request):
    if run_alone(request):
        return
    directory = _big_module(tmp_path / "m", resources=30)
    # the smallest file goes to the forked worker, not to this process
    (directory / "r3.tf").write_text("a = 1\nbroken = = 1\n")
    with pytest.raises(ConfigSyntaxError) as info:
        load_module(str(directory), workers=2)
    assert info.value.file == str(directory / "r3.tf")
    assert info.value.line == 2


@pytest.mark.terraform
@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_it_merges_overrides_to_the_values_terraform_itself_sees(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": 'locals {\n  a = "base-a"\n  b = "base-b"\n}\nvariable "v" {\n  default = "base-v"\n}\n',
            "a_override.tf": 'locals {\n  a = "first-a"\n}\nvariable "v" {\n  default = "first-v"\n}\n',
            "b_override.tf.json": {"locals": {"b": "second-b"}, "variable": {"v": {"default": "second-v"}}},
        },
    )
    result = subprocess.run(
        ["terraform", "console"],
        input="jsonencode([local.a, local.b, var.v])\n",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null"},
    )
    assert result.returncode == 0, result.stderr
    terraform_sees = json.loads(json.loads(result.stdout.strip()))
    module = load_module(str(tmp_path))
    blocks = {b.type: b for b in module.files[0].body.blocks}
    ours = [
        blocks["locals"].body.attributes["a"].expr.value,
        blocks["locals"].body.attributes["b"].expr.value,
        blocks["variable"].body.attributes["default"].expr.value,
    ]
    assert ours == terraform_sees == ["first-a", "second-b", "second-v"]


def test_it_does_not_fork_while_other_threads_run(tmp_path, parallel_runs):
    import threading

    directory = _big_module(tmp_path / "m", resources=30)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        module = load_module(str(directory), workers=2)
    finally:
        release.set()
        other.join()
    assert parallel_runs == []
    assert len(module.files) == 4


def test_it_lets_override_tofu_replace_override_tf_and_merges_data_blocks(tmp_path):
    write(
        tmp_path,
        {
            "main.tf": 'data "aws_ami" "a" {\n  most_recent = true\n  owners = ["self"]\n}\n',
            "override.tf": 'data "aws_ami" "a" {\n  owners = ["tf"]\n}\n',
            "override.tofu": 'data "aws_ami" "a" {\n  owners = ["tofu"]\n}\n',
        },
    )
    module = load_module(str(tmp_path))
    assert module.ignored == ["override.tf"]
    assert module.overrides == ["override.tofu"]
    assert merged(module) == ['data "aws_ami" "a" {', "  most_recent = true", '  owners = ["tofu"]', "}"]


def test_it_returns_an_empty_module_for_a_directory_without_configuration(tmp_path):
    write(tmp_path, {"README.md": "nothing here"})
    module = load_module(str(tmp_path))
    assert (module.files, module.ignored, module.overrides) == ([], [], [])
