"""How a policy input is stored: its large shared pieces (the plan, the state and configuration views) cut
out and kept once each, compressed and addressed by their hash; the rest (the skeleton) kept per
evaluation with the positions the pieces go back to. Plain data in, plain data out: no Django, so the
data migration uses it too.

The input the engine sees is ``json.dumps(document, separators=(",", ":"))``. ``encode_input`` writes the
same bytes, one top-level member at a time, so that it knows where each shared piece starts and ends;
``join_input`` puts the pieces back into the skeleton. Rebuilding is string splicing, never a new
serialisation: the input shown, replayed or tried is byte-for-byte the one the engine saw.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import zstandard

# The members of an input that are large and repeat (across a deployment's evaluations, across
# deployments of one plan or one template commit).
SHARED_MEMBERS = ("plan", "state", "configuration")
# Smaller pieces stay in the skeleton: a row and an index entry cost more than they save.
MIN_SHARED_CHARS = 256
_SEPARATORS = (",", ":")
_LEVEL = 3  # zstandard's default: a 5 MB plan in about 20 ms, to about 3 % of its size


def dumps(value: Any) -> str:
    return json.dumps(value, separators=_SEPARATORS)


def canonical_plan(plan: Any) -> str:
    """A plan's canonical text: keys sorted, no spaces. Identical plans have identical texts (and keys)."""
    return json.dumps(plan, separators=_SEPARATORS, sort_keys=True)


def document_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compress(text: str) -> bytes:
    return zstandard.ZstdCompressor(level=_LEVEL).compress(text.encode("utf-8"))


def decompress(body: bytes) -> str:
    return zstandard.ZstdDecompressor().decompress(bytes(body)).decode("utf-8")


Span = tuple[int, int]  # [start, end) of a shared piece in the input text


def encode_input(
    document: dict[str, Any], written: Mapping[str, str] | None = None
) -> tuple[str, list[Span]]:
    """The input text (exactly ``dumps(document)``) and the spans of its shared pieces. ``written``: the
    text ``dumps`` gives for some members, known beforehand (a stored plan's text), not written again."""
    parts: list[str] = []
    spans: list[Span] = []
    position = 1  # after "{"
    for index, (name, value) in enumerate(document.items()):
        head = ("," if index else "") + json.dumps(name) + ":"
        body = written[name] if written and name in written else dumps(value)
        position += len(head)
        if name in SHARED_MEMBERS and len(body) >= MIN_SHARED_CHARS:
            spans.append((position, position + len(body)))
        parts.append(head + body)
        position += len(body)
    return "{" + "".join(parts) + "}", spans


def split_input(text: str, spans: list[Span]) -> tuple[str, list[tuple[int, str]]]:
    """The skeleton (the text without its shared pieces) and each piece with the skeleton offset it goes
    back to, in order."""
    skeleton: list[str] = []
    pieces: list[tuple[int, str]] = []
    cursor = removed = 0
    for start, end in sorted(spans):
        skeleton.append(text[cursor:start])
        pieces.append((start - removed, text[start:end]))
        removed += end - start
        cursor = end
    skeleton.append(text[cursor:])
    return "".join(skeleton), pieces


def join_input(skeleton: str, pieces: list[tuple[int, str]]) -> str:
    """The input text again: each piece put back at its offset in the skeleton."""
    parts: list[str] = []
    cursor = 0
    for offset, piece in sorted(pieces, key=lambda item: item[0]):
        parts.append(skeleton[cursor:offset])
        parts.append(piece)
        cursor = offset
    parts.append(skeleton[cursor:])
    return "".join(parts)


def spans_of_stored_input(text: str) -> list[Span]:
    """The shared pieces of an input stored whole (before inputs were split): found by encoding its
    document again, and only if that gives back the very same text (else it stays whole)."""
    try:
        document = json.loads(text)
    except ValueError:
        return []
    if not isinstance(document, dict):
        return []
    encoded, spans = encode_input(document)
    return spans if encoded == text else []
