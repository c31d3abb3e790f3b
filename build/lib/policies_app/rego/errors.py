"""Turn the engines' error texts into (file, line, column, message) a policy author can act on."""

from __future__ import annotations

import re
from dataclasses import dataclass

_REGORUS_LOCATION = re.compile(r"-->\s*(?P<file>[^\n]+?):(?P<line>\d+):(?P<column>\d+)")
_REGORUS_MESSAGE = re.compile(r"^error:\s*(?P<message>.+)$", re.MULTILINE)
_BACKTRACE = re.compile(r"\n\s*Stack backtrace:.*", re.DOTALL)
# OPA: "1 error occurred: p.rego:3: rego_type_error: undefined function nosuch" (several: one per line)
_OPA_ERROR = re.compile(
    r"(?P<file>[^\s:][^:\n]*):(?P<line>\d+)(?::(?P<column>\d+))?: (?P<code>rego_\w+|eval_\w+): (?P<message>[^\n]+)"
)
_OPA_COUNT = re.compile(r"^(?:[\w ]+: )?\d+ errors? occurred:\s*")


@dataclass(frozen=True)
class EngineErrorText:
    file: str | None
    line: int | None
    column: int | None
    message: str


def parse_regorus_error(text: str) -> EngineErrorText:
    """Keep the ``error:`` line and the ``--> file:line:col`` part; drop the Rust backtrace."""
    text = _BACKTRACE.sub("", text)
    location = _REGORUS_LOCATION.search(text)
    message_match = _REGORUS_MESSAGE.search(text)
    if message_match:
        message = message_match["message"].strip()
    else:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        message = lines[0] if lines else "engine error"
    if location:
        return EngineErrorText(
            location["file"].strip(), int(location["line"]), int(location["column"]), message
        )
    return EngineErrorText(None, None, None, message)


def parse_opa_error(text: str) -> EngineErrorText:
    """The first of OPA's errors, without its count and code: ``p.rego:3: rego_type_error: ...``."""
    match = _OPA_ERROR.search(text)
    if match:
        column = int(match["column"]) if match["column"] else None
        return EngineErrorText(match["file"].strip(), int(match["line"]), column, match["message"].strip())
    lines = [line.strip() for line in _OPA_COUNT.sub("", text.strip()).splitlines() if line.strip()]
    return EngineErrorText(None, None, None, lines[0] if lines else "engine error")
