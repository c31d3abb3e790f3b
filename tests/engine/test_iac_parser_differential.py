"""The recursive-descent parser (iac/hcl_descent.py) against the generated LALR parser (iac/hcl_lalr.py):
the same syntax nodes with the same positions, or it leaves the text to the LALR parser. Syntax errors
always come from the LALR parser, so they read as before."""

import subprocess
from pathlib import Path

import pytest

from policies_app.iac import hcl_descent, hcl_native
from policies_app.iac.template_syntax import ConfigSyntaxError

ROOT = Path(__file__).resolve().parents[2]


def lalr(text: str, start: str, file: str = "main.tf", line: int = 1, column: int = 1):
    """The LALR parser's nodes, or the error it raises (type and message)."""
    with hcl_native.lalr_only():
        try:
            return hcl_native.run_parser(text, start, file, line, column)
        except Exception as error:  # noqa: BLE001 - compared, not handled
            return ("error", type(error).__name__, str(error))


def descent(text: str, start: str, file: str = "main.tf", line: int = 1, column: int = 1):
    try:
        return hcl_descent.parse(text, start, file, line, column)
    except Exception:  # noqa: BLE001 - Unsupported, or an error the LALR parser must report
        return None


def repository_tf_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.tf") if ".venv" not in p.parts and ".git" not in p.parts)


def test_every_tf_file_of_the_repository_parses_to_the_same_nodes_on_the_fast_path():
    files = repository_tf_files()
    assert len(files) > 40
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not text.endswith("\n"):
            text += "\n"
        expected = lalr(text, "start", str(path))
        assert not isinstance(expected, tuple), (path, expected)
        got = descent(text, "start", str(path))
        assert got is not None, f"{path} left the fast path"
        assert repr(got) == repr(expected), path


# Valid texts the fast path must take (and agree on).
FAST = [
    "a = 1\n",
    "a = -12\n",
    "a = -1\n",
    "a = - 1\n",
    "a = -1.5e3\n",
    "a = 1.5\n",
    "a = 1e5\n",
    "a = x - 1\n",
    'a = "x"\n',
    'a = "a\\nb\\u00e9 \\\\ $x %y"\n',
    'a = "${x}"\n',
    'a = "a${x}b"\n',
    'a = "$${x}"\n',
    'a = "a %%{x} b"\n',
    'a = "  ${~ x ~}  "\n',
    'a = "%{ if x }y%{ else }z%{ endif }"\n',
    'a = "%{~ for k, v in m ~}${k}=${v}%{ endfor }"\n',
    'a = "${a["k"]}"\n',
    'a = "${x == \\"a\\"}"\n',
    'a = "${ {b = 1}.b }"\n',
    "a = <<EOT\nhello ${x}\nEOT\n",
    "a = <<-EOT\n  hi\n    ${y}\n  EOT\nb = 2\n",
    "a = <<EOT\nEOT\n",
    "a = [1, 2,\n 3,\n]\n",
    "a = []\n",
    "a = {}\n",
    "a = { b = 1, c = 2 }\n",
    'a = {\n b = 1\n c = "x"\n}\n',
    "a = {b=1 c=2}\n",
    'a = { (k) = 1, "s" = 2, x.y = 3, true = 4, in = 5, for_each = 6, d: 7 }\n',
    "a = [for x in xs : x if x != null]\n",
    "a = [for i, x in xs : x]\n",
    "a = {for k, v in m : k => v...}\n",
    "a = {for k, v in m : upper(k) => v if v}\n",
    "a = [\n for x in xs :\n x\n ]\n",
    "a = x ? y : z\n",
    "a = x ?\n y :\n z\n",
    "a = x\n ? y\n : z\n",
    "a = a || b && c == d < e + f * g % h\n",
    "a = (a + b) * c != !d\n",
    "a = -x.y\n",
    "a = 1 +\n 2\n",
    "a = 1\n + 2\n",
    "a = 1 # c\n + 2\n",
    "a = x\nb = 1\n",
    "a = (\n  # c\n  x == null\n  # d\n  ? 1\n  # e\n  : 2\n)\n",
    "a = x + y\n\n+ z\n",
    "a = w + x * y\n\n* z\n",
    "a = v || x + y\n\n&& z\n",
    "a = [for k in ks : k + 1\n if k]\n",
    "a = x + y\n\nb = 2\n",
    "a = f()\n",
    "a = f(x, y...)\n",
    "a = f(\n x,\n y,\n)\n",
    "a = provider::ns::f(1)\n",
    'a = core::upper("x")\n',
    "a = x[0]\n",
    "a = x.0.y\n",
    "a = x[*].y\n",
    "a = x.*.y[0]\n",
    "a = x[*].y[0].z\n",
    "a = x[*][*]\n",
    "a = x.true\n",
    'a = x["k"][1]\n',
    'resource "a" "b" {\n  count = 2\n}\n',
    "b {}\n",
    "b { a = 1 }\n",
    'b "x" y {\n}\n',
    "b\n{\n}\n",
    "in {}\n",
    'variable "v" {\n  type = list(object({ a = string }))  # c\n  default = []\n}\n',
    'variable "v" { type = string }\n',
    'variable "v" {\n  type = map(string)\n}\n',
    'variable "v" {\n  type = string\n  default = "x"\n}\n',
    'variable "v" {\n  default = 1\n  type = number}\n',
    "a = 1 b = 2\n",
    "# c\n// d\n/* e\n f */\na = 1\n",
    "a = 1 /* c */\n",
    '\r\na = 1\r\nb = "x"\r\n',
    'a = "multi\nline"\n',
    # braces: counted only inside interpolations (where a "}" may end one), whatever strings hold
    'a = "${ {a = 1}.a }"\n',
    'a = "${jsonencode({a = "x${b}", c = {d = "}"}})}"\n',
    'a = "%{ for k, v in {x = "{"} }${k}%{ endfor }"\n',
    'a = {\n  b = "${c}"\n  d = { e = "}}{{" }\n}\n',
    'x {\n  y = "a${b["}"]}c"\n}\n',
    'a = <<EOT\n${ {b = 1}.b } }\nEOT\nc = "}"\n',
    'a = "${"${"${x}"}"}"\n',
    # plain characters of strings, next to what is not plain
    'a = "$${x} %%{y} $x %z \\" "\n',
    'a = "plain $ and % chars"\nb = "trailing $"\nc = "100%"\nd = "\\u0041"\n',
    'a = "x${y}$"\nb = "x${y}%"\n',
    # operators: a newline before a continuing one joins the lines; "=" and "==", "!" and "!="
    "a = 1\n  + 2\nb = x\n  == y\nc = !x\nd = x != y\ne = {for k, v in m: k => v}\n",
]

# Texts the fast path may leave to the LALR parser (valid or not): the result must be the LALR
# parser's either way.
ANY = [
    'c = "$${"\n',  # an escape the grammar's string terminal does not take
    "a = x -1\n",
    "a = f(x)-1\n",
    "a = -1-2.5\n",
    "a = x.0.1\n",
    "a = { for = 1 }\n",
    "true {}\n",
    'b "${x}" {}\n',
    'variable "v" {\n  type = a || b\n}\n',
    'variable "v" {\n  type = a ? b : c\n}\n',
    'a = \\"x\\"\n',
    "a = /* c */ 1\n",
    "a = 1\na = 2\n",
    "a = \n",
    "a = (\n",
    'a = "x\n',
    'a = "${x"\n',
    "}\n",
    "a = x.\n",
    "a == 1\n",
    "a = [for]\n",
    "a = 1 ~\n",
    'a = "%{ bogus }"\n',
    'a = "%{ if x }"\n',
    "a = f(x,...)\n",
    "a = 1\n\n+ 2\n",
    "a = x * y + z\n\n* w\n",
    "a = (x\n  ? 1 : 2)\n",
    "a = x [*]\n",
    'a = { "a" = 1 "b" }\n',
    "a = <<EOT\nno end\n",
    "a = 1 /* c\n",
    "a = b << c\n",
]

EXPRESSIONS = ["x", "  x + 1", 'var.a["b"]', '"${x}"', "x ? 1 : 2", "-12", "-1", "[for x in y: x]", "a b"]


@pytest.mark.parametrize("text", FAST)
def test_the_fast_path_takes_these_and_agrees(text):
    expected = lalr(text, "start")
    assert not isinstance(expected, tuple), expected
    got = descent(text, "start")
    assert got is not None, "left the fast path"
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("text", FAST + ANY)
def test_whatever_the_fast_path_returns_is_the_lalr_parsers_result(text):
    expected = lalr(text, "start")
    got = descent(text, "start")
    if got is not None:
        assert repr(got) == repr(expected)
    # and through the entry point the result (or error) is exactly the LALR parser's
    try:
        through = hcl_native.run_parser(text, "start", "main.tf")
    except Exception as error:  # noqa: BLE001
        through = ("error", type(error).__name__, str(error))
    assert repr(through) == repr(expected)


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_expressions_at_an_offset_agree(text):
    expected = lalr(text.rstrip(), "expression", "vars.tfvars", 3, 7)
    got = descent(text.rstrip(), "expression", "vars.tfvars", 3, 7)
    if got is not None:
        assert repr(got) == repr(expected)


def test_syntax_errors_name_the_place_as_the_grammar_does():
    with pytest.raises(ConfigSyntaxError) as raised:
        hcl_native.parse_native('resource "a" "b" {\n  count = \n}\n', "main.tf")
    with hcl_native.lalr_only(), pytest.raises(ConfigSyntaxError) as before:
        hcl_native.parse_native('resource "a" "b" {\n  count = \n}\n', "main.tf")
    assert str(raised.value) == str(before.value)
    assert (raised.value.file, raised.value.line) == ("main.tf", 2)


def mirrored_tf_files(limit_per_repository: int = 30) -> list[tuple[str, str]]:
    """(name, text) of .tf files from the public module snapshots on this machine (IAC_MODULE_MIRRORS),
    the first ``limit_per_repository`` of each repository in path order."""
    from tests.engine.real_modules import MIRRORS

    found = []
    for git_dir in sorted(MIRRORS.glob("*/repo")):
        listed = subprocess.run(
            ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "HEAD", "--name-only"],
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        names = [name for name in listed if name.endswith((".tf", ".tofu"))][:limit_per_repository]
        if not names:
            continue
        batch = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            input="".join(f"HEAD:{name}\n" for name in names).encode(),
            capture_output=True,
        ).stdout
        offset = 0
        for name in names:
            header_end = batch.index(b"\n", offset)
            size = int(batch[offset:header_end].split()[2])
            data = batch[header_end + 1 : header_end + 1 + size]
            offset = header_end + 1 + size + 1
            try:
                found.append((f"{git_dir.parent.name}/{name}", data.decode("utf-8")))
            except UnicodeDecodeError:
                continue
    return found


def test_public_modules_parse_to_the_same_nodes_and_every_valid_file_takes_the_fast_path():
    """Measured once over all 5,409 .tf files of the snapshots: no difference, and the 448 left to the
    LALR parser were all files it refuses (provider test data with Go templates). This checks a sample."""
    files = mirrored_tf_files()
    if not files:
        pytest.skip("no module repository snapshots on this machine (IAC_MODULE_MIRRORS)")
    for name, text in files:
        if text.startswith("\ufeff"):
            text = text[1:]
        if not text.endswith("\n"):
            text += "\n"
        expected = lalr(text, "start", name)
        got = descent(text, "start", name)
        if isinstance(expected, tuple):
            assert got is None, name
        else:
            assert got is not None, f"{name} left the fast path"
            assert repr(got) == repr(expected), name
