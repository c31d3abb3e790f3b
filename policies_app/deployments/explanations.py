"""Why a policy decided as it did: each fired rule with its file and line, and the input values it read.

Computed on OPA (rego/reads.py) for the policies whose messages people read (deny, pending, warn), at the
cost of one more evaluation each, bounded in time (its own timeout) and in size. Never on the way to a
decision: the evaluation is recorded with ``explanations_due_at`` set (the due work, in its row), a worker
then computes them (``explain_evaluation``, woken through wakeups.py) and a sweeper sends the task again
when it was lost (``resend_due_explanations``). Until then the pages and the API say that the explanation
is being prepared. It fails soft: a policy whose explanation cannot be had keeps its decision, with no
explanation.

The values come from the input as people may see it (guards/masking.py ``shown_document``): a value
read at a sensitive path is the mask, and no string shown holds a sensitive value."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from policies_app import rego, wakeups
from policies_app.deployments import stored_inputs
from policies_app.guards.masking import MASK, Sensitivity, scrub, secrets_of, shown_document
from policies_app.models import Evaluation, PolicyRevision
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
                    # A path is the input's keys a rule read, and a rule may read at a key it computed
                    # from a sensitive value: the path is scrubbed as the value is.
                    {
                        "path": scrub(path_text(path), secrets),
                        "value": _scrubbed_value(_value_at(shown, path), secrets),
                    }
                    for path in item["reads"]
                ],
            }
        )
    return explanation


def _scrubbed_value(value: Any, secrets: frozenset[str]) -> Any:
    small = _small(value)
    return scrub(small, secrets) if isinstance(small, str) and small != MASK else small


def _wanted(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in outcomes if o.get("decision") in EXPLAINED_DECISIONS and o.get("policy_id")]


def explanations_due(outcomes: list[dict[str, Any]]) -> bool:
    """Whether any outcome is one whose messages people read, and so gets an explanation."""
    return bool(_wanted(outcomes))


def wake_explanations(evaluation_id: int) -> None:
    """Have a worker explain the evaluation once the transaction that recorded it commits."""
    wakeups.wake("policies_app.tasks.explain_evaluation_task", evaluation_id)


def explain_evaluation(evaluation_id: int) -> bool:
    """Compute and store the explanations an evaluation is due (the task's work). Safe to run twice: work
    found done is skipped, and only a row still due is written. Returns whether it stored them."""
    evaluation = Evaluation.objects.filter(pk=evaluation_id, explanations_due_at__isnull=False).first()
    if evaluation is None:
        return False
    input_json = stored_inputs.input_of(evaluation)
    outcomes = [dict(outcome) for outcome in evaluation.outcomes or []]
    if input_json:  # None or "" once purged: nothing left to explain with
        revisions = list(evaluation.policy_revisions.select_related("policy").prefetch_related("modules"))
        document = json.loads(input_json)
        sensitivity = Sensitivity.of(evaluation)
        secrets = secrets_of(document, sensitivity)
        explain_outcomes(outcomes, revisions, input_json, document, sensitivity, secrets)
    for outcome in _wanted(outcomes):
        outcome.setdefault("explanation", [])  # no longer "being prepared", even when none could be had
    return bool(
        Evaluation.objects.filter(pk=evaluation_id, explanations_due_at__isnull=False).update(
            outcomes=outcomes, explanations_due_at=None
        )
    )


def resend_due_explanations() -> list[int]:
    """Send again the explanation tasks still due a while after they were sent (the broker was down, the
    message was lost, the worker died). Returns the evaluations' ids."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS)
    due = Evaluation.objects.filter(explanations_due_at__lt=resend_before).order_by("explanations_due_at")
    resent = list(due.values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH])
    if resent:
        with transaction.atomic():  # the tasks are sent once the new send time is committed
            Evaluation.objects.filter(pk__in=resent).update(explanations_due_at=now)
            for evaluation_id in resent:
                wake_explanations(evaluation_id)
        logger.warning("resent the explanations of %d evaluations: %s", len(resent), resent)
    return resent


def explain_outcomes(
    outcomes: list[dict[str, Any]],
    revisions: list[PolicyRevision],
    input_json: str,
    document: Any,
    sensitivity: Sensitivity,
    secrets: frozenset[str],
) -> None:
    """Add ``explanation`` to each outcome whose decision people read (in place)."""
    wanted = _wanted(outcomes)
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
