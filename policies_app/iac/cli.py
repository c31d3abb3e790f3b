"""Command line: evaluate a configuration directory and print the document as JSON.

``python -m policies_app.iac DIR --var NAME=VALUE --var-file FILE --cache-dir DIR`` and the Django
command ``manage.py iac_evaluate`` both call ``main``. Exit status: 0, or 1 when there is an error
diagnostic, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from policies_app.iac.configuration import evaluate_configuration
from policies_app.iac.variables import parse_var_flag


def _help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's own formatter, given the terminal's width as shutil would find it: argparse builds a
    formatter on every start (add_argument checks each argument with one) and, without a width, imports
    shutil (with bz2 and lzma) to ask it, a few milliseconds of a start-up that should stay under 0.1 s."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return argparse.HelpFormatter(prog, width=(columns if columns > 0 else 80) - 2)


def build_parser(prog: str = "python -m policies_app.iac") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        formatter_class=_help_formatter,
        description="Evaluate a Terraform/OpenTofu configuration "
        "statically and print its outputs, resources and diagnostics as JSON.",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", help="the root module's directory")
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a root variable, as terraform -var does (repeatable)",
    )
    parser.add_argument(
        "--var-file",
        action="append",
        default=[],
        metavar="FILE",
        help="a .tfvars or .tfvars.json file (repeatable, later files win)",
    )
    parser.add_argument(
        "--source-root",
        default=None,
        metavar="DIR",
        help="the template's whole source, which local modules and file functions may read (default: "
        "the git work tree holding the directory, else the directory itself)",
    )
    parser.add_argument(
        "--provider-schema",
        default=None,
        metavar="FILE",
        help="the output of `terraform providers schema -json` for the template's providers (default: "
        "providers-schema.json in the directory, if there is one)",
    )
    parser.add_argument(
        "--sensitive-var",
        action="append",
        default=[],
        metavar="NAME",
        help="a root variable to hold sensitive though the configuration does not declare it so: the "
        "document then says where values derived from it are (sensitive_paths) (repeatable)",
    )
    parser.add_argument("--cache-dir", default=None, help="where parsed files are cached between runs")
    parser.add_argument("--compact", action="store_true", help="print the JSON on one line")


def parse_var_flags(flags: Sequence[str]) -> dict[str, str]:
    """``--var NAME=VALUE`` flags as a dict (later flags win); ValueError naming the bad flag."""
    variables: dict[str, str] = {}
    for flag in flags:
        name, value = parse_var_flag(flag)
        variables[name] = value
    return variables


def default_source_root(directory: str) -> str:
    """The top of the git work tree holding ``directory`` (a template's checkout), else ``directory``."""
    current = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return os.path.abspath(directory)
        current = parent


def run(
    directory: str,
    var: Sequence[str],
    var_file: Sequence[str],
    cache_dir: str | None,
    compact: bool,
    out: TextIO,
    err: TextIO,
    source_root: str | None = None,
    provider_schema: str | None = None,
    sensitive_var: Sequence[str] = (),
) -> int:
    """Evaluate and print; returns the exit status."""
    try:
        variables = parse_var_flags(var)
    except ValueError as error:
        err.write(f"error: {error}\n")
        return 2
    schema = None
    if provider_schema is not None:
        try:
            with open(provider_schema, encoding="utf-8") as handle:
                schema = json.load(handle)
        except (OSError, ValueError) as error:
            err.write(f"error: --provider-schema {provider_schema}: {error}\n")
            return 2
    document = evaluate_configuration(
        directory,
        variables=variables,
        var_files=list(var_file),
        cache_dir=cache_dir,
        source_root=source_root or default_source_root(directory),
        provider_schema=schema,
        sensitive_variables=sensitive_var,
    )
    # One write: Django's OutputWrapper ends every write() with a newline, and json.dump writes per token.
    out.write(json.dumps(document, indent=None if compact else 2, ensure_ascii=False) + "\n")
    errors = [d for d in document["diagnostics"] if d["severity"] == "error"]
    for diagnostic in errors:
        # file:line:col, as compilers print it; the parts not known are left out.
        parts = (diagnostic.get("file"), diagnostic.get("line"), diagnostic.get("column"))
        where = ":".join(str(part) for part in parts if part is not None)
        where = f"{where}: " if where else ""
        err.write(f"error: {where}{diagnostic['summary']}: {diagnostic['detail']}\n")
    return 1 if errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    return run(
        arguments.directory,
        arguments.var,
        arguments.var_file,
        arguments.cache_dir,
        arguments.compact,
        sys.stdout,
        sys.stderr,
        arguments.source_root,
        arguments.provider_schema,
        arguments.sensitive_var,
    )
