"""Why a policy decided as it did: each fired rule with its file and line, and the input values it read.

Computed on OPA (rego/reads.py) for the policies whose messages people read (deny, pending, warn), after
the decision, at the cost of one more evaluation each, bounded in time (its own timeout) and in size.
It fails soft: a policy whose explanation cannot be had keeps its decision, with no explanation.

The values come from the input as people may see it (guards/masking.py ``shown_document``): a value
read at a sensitive path is the mask, and no string shown holds a sensitive value."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings

from policies_app import rego
from policies_app.guards.masking import MASK, Sensitivity, scrub, shown_document
from policies_app.models import PolicyRevision
from policies_app.policies.engine import policy_source

logger = logging.getLogger(__name__)

EXPLAINED_DECISIONS = ("deny", "pending", "warn")
MAX_VALUE_LENGTH = 120


def path_text(path: list[Any]) -> str:
    """``["input", "plan", "resource_changes", 3, "acl"]`` as Rego writes it: input.plan.resource_changes[3].acl."""
    text = str(path[0]) if path else ""
    for key in path[1:]:
        if isinstance(key, int):
            text += f"[{key}]"
        elif key.isidentifier():
            text += f".{key}"
        else:
            text += f"[{json.dumps(key)}]"
    return text


def _value_at(document: Any, path: list[Any]) -> Any:
    node = document
    for key in path[1:]:  # path[0] is "input"
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return None
    return node


def _small(value: Any) -> Any:
    """A value short enough to show beside a message: scalars as they are, else JSON cut short."""
    if isinstance(value, str):
        return value if len(value) <= MAX_VALUE_LENGTH else value[:MAX_VALUE_LENGTH] + "…"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = json.dumps(value, sort_keys=True)
    return value if len(text) <= MAX_VALUE_LENGTH else text[:MAX_VALUE_LENGTH] + "…"


def explanation_of(
    revision: PolicyRevision, input_json: str, shown: Any, secrets: frozenset[str]
) -> list[dict[str, Any]]:
    """The fired rules of one revision on an input: [{message, rule, file, line, reads: [{path, value}]}],
    values read from ``shown`` (the input as people may see it). Empty when it cannot be had."""
    try:
        fired = rego.explain_reads(
            policy_source(revision),
            input_json,
            timeout_s=settings.POLICY_EXPLANATION_TIMEOUT_SECONDS,
            memory_mb=settings.POLICY_ENGINE_MEMORY_MB,
        )
    except (rego.PolicyCompileError, rego.EngineBusyError, rego.EngineUnavailableError) as problem:
        # The decision stands; only its explanation is missing.
        logger.warning("no explanation for %s: %s", revision, scrub(str(problem), secrets))
        return []
    explanation = []
    for item in fired:
        message = item.get("message")
        explanation.append(
            {
                "message": scrub(message, secrets) if isinstance(message, str) else None,
                "rule": item["rule"],
                "file": item["file"],
                "line": item["line"],
                "reads": [
                    {"path": path_text(path), "value": _scrubbed_value(_value_at(shown, path), secrets)}
                    for path in item["reads"]
                ],
            }
        )
    return explanation


def _scrubbed_value(value: Any, secrets: frozenset[str]) -> Any:
    small = _small(value)
    return scrub(small, secrets) if isinstance(small, str) and small != MASK else small


def explain_outcomes(
    outcomes: list[dict[str, Any]],
    revisions: list[PolicyRevision],
    input_json: str,
    document: Any,
    sensitivity: Sensitivity,
    secrets: frozenset[str],
) -> None:
    """Add ``explanation`` to each outcome whose decision people read (in place)."""
    wanted = [o for o in outcomes if o.get("decision") in EXPLAINED_DECISIONS and o.get("policy_id")]
    if not wanted:
        return
    revision_of = {(r.policy_id, r.number): r for r in revisions}
    shown = shown_document(document, sensitivity)
    for outcome in wanted:
        revision = revision_of.get((outcome["policy_id"], outcome["revision"]))
        if revision is not None:
            outcome["explanation"] = explanation_of(revision, input_json, shown, secrets)


def _reading(item: dict[str, Any], limit: int) -> str:
    text = f"{item['rule']} rule at {item['file']}:{item['line']}"
    reads = item.get("reads") or []
    if reads:
        text += ", read " + ", ".join(f"{r['path']} = {json.dumps(r['value'])}" for r in reads[:limit])
        if len(reads) > limit:
            text += f" (+{len(reads) - limit} more)"
    return text


def _gave(given: Any, shown: str) -> bool:
    """Whether the message a rule gave is the one shown, which an enforcement level ("[advisory] ...")
    or a waiver ("waived by X until T: ...") may have prefixed."""
    return isinstance(given, str) and (
        shown == given or shown.endswith(f"] {given}") or shown.endswith(f": {given}")
    )


def why_lines(explanation: list[dict[str, Any]] | None, message: str) -> list[str]:
    """How each fired rule that gave ``message`` reads, beside the message on a page: "from deny rule
    at main.rego:12, read input.x = "y"". A message an enforcement level prefixed ("[advisory] ...")
    or a waiver marked ("waived by X until T: ...") is matched without its prefix."""
    return [
        "from " + _reading(item, 5)
        for item in explanation or []
        if isinstance(item, dict) and _gave(item.get("message"), message)
    ]


def short_why(outcomes: list[dict[str, Any]] | None, message: str) -> str:
    """One line for an email: the first rule that gave ``message`` and the first value it read ("deny
    rule at main.rego:12, read input.x = "y""), empty when no outcome explains it."""
    for outcome in outcomes or []:
        for item in (outcome.get("explanation") or []) if isinstance(outcome, dict) else []:
            if isinstance(item, dict) and _gave(item.get("message"), message):
                return _reading(item, 1)[:200]
    return ""
