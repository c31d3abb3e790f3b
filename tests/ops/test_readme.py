"""The README's commands work as written: every manage.py command it names exists, and every
policy-gate command line it shows is accepted by the gate's own parser."""

import re
import shlex
from pathlib import Path

from django.core.management import get_commands

from policy_gate import gate

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def command_lines(program: str) -> list[str]:
    return [line.strip() for line in README.splitlines() if line.strip().startswith(program)]


def test_every_manage_py_command_in_the_readme_exists():
    named = set(re.findall(r"manage\.py (\w+)", README))
    assert named, "the README names no manage.py command"
    assert named <= set(get_commands()), named - set(get_commands())
    assert "drf_create_token" not in named


def test_every_policy_gate_line_of_the_readme_parses(monkeypatch):
    monkeypatch.setenv("PLATFORM_TOKEN", "t")
    lines = command_lines("policy-gate ")
    assert {line.split()[1] for line in lines} == {"deploy", "complete"}
    for line in lines:
        gate.build_parser().parse_args(shlex.split(line)[1:])


def test_the_readme_documents_every_exit_code_of_the_gate():
    for code in (
        gate.EXIT_RELEASED,
        gate.EXIT_ERROR,
        gate.EXIT_PENDING,
        gate.EXIT_STOPPED,
        gate.EXIT_TIMED_OUT,
    ):
        assert re.search(rf"^\| {code} \|", README, re.M), code
