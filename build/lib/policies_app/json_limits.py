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
    check(document)
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


def _child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check(document: Any, path: str = "") -> None:
    """Check depth, NUL characters and numbers of an already parsed document, without recursion."""
    limit = settings.JSON_MAX_DEPTH
    stack: list[tuple[Any, str, int]] = [(document, path, 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict):
            if depth > limit:
                raise JSONDocumentError(f"nested deeper than {limit} levels", where)
            for key, item in value.items():
                if "\x00" in key:
                    raise JSONDocumentError("a key contains the NUL character (\\u0000)", where)
                stack.append((item, _child_path(where, key), depth + 1))
        elif isinstance(value, list):
            if depth > limit:
                raise JSONDocumentError(f"nested deeper than {limit} levels", where)
            stack.extend((item, _child_path(where, index), depth + 1) for index, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise JSONDocumentError("contains the NUL character (\\u0000)", where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise JSONDocumentError("is not a finite number", where)
