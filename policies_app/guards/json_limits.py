"""Limits on JSON documents that reach the platform from outside (API bodies, pasted inputs).

A document must be storable and evaluable: nested at most ``JSON_MAX_DEPTH`` levels (the policy engines
refuse inputs nested deeper than 128, and the input wraps every document a few levels down), no NUL
character anywhere (PostgreSQL's jsonb and text columns refuse it), and only finite numbers (``1e309`` is
infinity to Python, which JSON cannot carry). A violation names the path, e.g. ``plan.resource_changes[3]``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings


class JSONDocumentError(ValueError):
    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.problem = message

    @property
    def field(self) -> str:
        """The top-level key the problem is under (the request field to name), or "" for the whole body."""
        return self.path.split(".", 1)[0].split("[", 1)[0]


def _refuse_constant(name: str) -> Any:
    raise JSONDocumentError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONDocumentError(f"the number {text} is too large")
    return value


def loads(text: str | bytes) -> Any:
    """Parse and check a JSON document; raises JSONDocumentError (a ValueError) on any violation."""
    try:
        document = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        limit = settings.JSON_MAX_DEPTH
        raise JSONDocumentError(f"nested deeper than {limit} levels", _where_too_deep(text, limit)) from None
    # Valid JSON carries a NUL only escaped: without that escape in the text, no string needs looking at.
    require_within_limits(
        document, nul_possible=("\\u0000" in text) if isinstance(text, str) else (b"\\u0000" in text)
    )
    return document


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]')


def _where_too_deep(text: str | bytes, limit: int) -> str:
    """The top-level key under which the text nests deeper than ``limit`` ("" for the body itself); read
    from the raw text, since the parser gave up before building anything."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth, last_string, top_key = 0, "", ""
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return top_key
        elif token in ("]", "}"):
            depth -= 1
        elif token == ":":
            if depth == 1:
                top_key = last_string
        else:
            last_string = json.loads(token) if len(token) < 1000 else ""
    return ""


Trail = tuple  # (parent trail, key): a path built only when it is needed for a message


def _path(trail: Trail | None) -> str:
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    path = ""
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))
    return path


def require_within_limits(document: Any, *, nul_possible: bool = True) -> None:
    """Check the depth and the strings of a parsed document, without recursion. ``nul_possible=False``
    (the JSON text had no ``\\u0000``) skips looking at strings, which is most of the work."""
    limit = settings.JSON_MAX_DEPTH
    stack: list[tuple[Any, Trail | None, int]] = [(document, None, 1)]
    while stack:
        value, trail, depth = stack.pop()
        if isinstance(value, (dict, list)) and depth > limit:
            raise JSONDocumentError(f"nested deeper than {limit} levels", _path(trail))
        if isinstance(value, dict):
            for key, item in value.items():
                if nul_possible and "\x00" in key:
                    raise JSONDocumentError("a key contains the NUL character (\\u0000)", _path(trail))
                if nul_possible or isinstance(item, (dict, list)):
                    stack.append((item, (trail, key), depth + 1))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if nul_possible or isinstance(item, (dict, list)):
                    stack.append((item, (trail, index), depth + 1))
        elif isinstance(value, str) and "\x00" in value:
            raise JSONDocumentError("contains the NUL character (\\u0000)", _path(trail))
        elif isinstance(value, float) and not math.isfinite(value):
            raise JSONDocumentError("is not a finite number", _path(trail))
