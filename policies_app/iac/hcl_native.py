"""Native syntax files (``.tf``/``.tofu``) -> ast.File.

The grammar work lives in expressions_parser (shared with templates and single expressions); this
module only adapts a whole file: text normalisation the grammar needs, and the start symbol.
"""

from __future__ import annotations

from policies_app.iac import ast
from policies_app.iac.expressions_parser import ConfigSyntaxError, run_parser


def parse_native(text: str, path: str) -> ast.File:
    """Parse the text of a native-syntax file; raises ConfigSyntaxError naming path:line:column."""
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of the configuration
        text = text[1:]
    # The grammar ends attributes and heredocs on a newline token; a file whose last line has no
    # newline would otherwise fail on its last attribute.
    if not text.endswith("\n"):
        text += "\n"
    body = run_parser(text, "start", path)
    if not isinstance(body, ast.Body):  # pragma: no cover - the start rule always yields a body
        raise ConfigSyntaxError(path, 1, 1, "not a configuration file")
    return ast.File(path, body)
