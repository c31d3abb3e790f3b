"""Turn the engines' error texts into (file, line, column, message) a policy author can act on."""

from __future__ import annotations

import re
from dataclasses import dataclass

_REGORUS_LOCATION = re.compile(r"-->\s*(?P<file>[^\n]+?):(?P<line>\d+):(?P<column>\d+)")
_REGORUS_MESSAGE = re.compile(r"^error:\s*(?P<message>.+)$", re.MULTILINE)
_BACKTRACE = re.compile(r"\n\s*Stack backtrace:.*", re.DOTALL)
# rego-cpp prints length-prefixed strings: (error 6:p.rego|50|1 (errormsg 27:Invalid arithmetic operator)
_REGOPY_ERROR = re.compile(r"\(error(?=[\s)])(?:\s+(?P<flen>\d+):)?")
_REGOPY_MESSAGE = re.compile(r"\(errormsg\s+(?P<mlen>\d+):")
_REGOPY_SPAN = re.compile(r"^\|(?P<offset>\d+)\|(?P<length>\d+)")


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


def _line_column(source: str, byte_offset: int) -> tuple[int, int]:
    prefix = source.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")
    line = prefix.count("\n") + 1
    column = len(prefix) - (prefix.rfind("\n") + 1) + 1
    return line, column


def parse_regopy_errors(text: str, sources: dict[str, str]) -> list[EngineErrorText]:
    """rego-cpp's error sequence: file names and messages are length-prefixed, positions are byte offsets."""
    errors: list[EngineErrorText] = []
    for match in _REGOPY_ERROR.finditer(text):
        file = line = column = None
        rest = text[match.end() :]
        if match["flen"]:
            file = rest[: int(match["flen"])]
            span = _REGOPY_SPAN.match(rest[int(match["flen"]) :])
            if span and file in sources:
                line, column = _line_column(sources[file], int(span["offset"]))
        message_match = _REGOPY_MESSAGE.search(rest)
        if message_match:
            start = message_match.end()
            message = rest[start : start + int(message_match["mlen"])]
        else:
            message = "engine error"
        errors.append(EngineErrorText(file or None, line, column, message))
    if not errors:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        errors.append(EngineErrorText(None, None, None, lines[0] if lines else "engine error"))
    return errors
