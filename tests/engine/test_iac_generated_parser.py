"""The native-syntax parser is generated at build time (iac/hcl_parser_build.py writes iac/hcl_lalr.py,
which is committed): it must match the grammar and the Lark it was generated from, and a process that
parses must neither read a grammar nor import Lark or python-hcl2."""

import subprocess
import sys
from pathlib import Path

from policies_app.iac import hcl_native, hcl_parser_build

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_parser_is_up_to_date_with_the_grammar_and_lark():
    assert hcl_parser_build.is_up_to_date(), (
        "policies_app/iac/hcl_lalr.py is out of date: run python -m policies_app.iac.hcl_parser_build"
    )


def test_a_changed_grammar_makes_the_generated_parser_out_of_date(monkeypatch):
    changed = hcl_native.grammar_text() + "\n// another rule\n"
    monkeypatch.setattr(hcl_parser_build, "grammar_text", lambda: changed)
    assert not hcl_parser_build.is_up_to_date()


def test_the_post_lexer_continues_lines_into_the_operators_python_hcl2_does():
    from hcl2.postlexer import OPERATOR_TYPES

    assert hcl_native.OPERATOR_TYPES == OPERATOR_TYPES


def test_parsing_loads_no_grammar_nor_lark():
    code = (
        "import sys\n"
        "from policies_app.iac import hcl_native\n"
        "parsed = hcl_native.parse_native('a = 1 +\\n  2\\nb = \"${var.x}\"\\n', 'main.tf')\n"
        "assert sorted(parsed.body.attributes) == ['a', 'b'], parsed\n"
        "loaded = sorted(name for name in sys.modules if name.split('.')[0] in ('lark', 'hcl2'))\n"
        "assert not loaded, loaded\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_start_up_imports_neither_parser_nor_function_families_until_needed():
    """A run served from the parse cache never parses, and one whose expressions call no function
    never needs the function library: both stay unimported (start-up time)."""
    code = (
        "import sys\n"
        "import policies_app.iac.cli\n"
        "from policies_app.iac import hcl_native\n"
        "hcl_native.parse_native('a = [for x in y : x]\\n', 'main.tf')\n"
        "loaded = sorted(m for m in sys.modules if m == 'policies_app.iac.hcl_lalr'\n"
        "                or m.startswith('policies_app.iac.functions.') and m.split('.')[-1] in\n"
        "                ('collection', 'strings', 'encoding', 'filesystem', 'hashing', 'rsa'))\n"
        "assert not loaded, loaded\n"
        "from policies_app.iac.functions import SUPPORTED_FUNCTIONS\n"
        "assert 'upper' in SUPPORTED_FUNCTIONS and 'policies_app.iac.functions.strings' in sys.modules\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
