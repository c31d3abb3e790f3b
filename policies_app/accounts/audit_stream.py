"""The audit log streamed to the operator's SIEM: every entry, in the chain's order, as signed JSON POSTed to
a webhook (``AUDIT_STREAM_URL``) and/or written as RFC 5424 lines to a syslog collector
(``AUDIT_STREAM_SYSLOG``, ``udp://`` or ``tcp://`` with RFC 6587 octet counting). Off unless set.

What one message holds: the entry as the chain hashed it (``models.audit.hashed_fields``: its sequence,
the hash before it, everything it says) and its own hash, so the SIEM can recompute each hash and see
that nothing is missing or out of order. An entry that records a decision (``deployment.decision.*``)
carries the decision record too: the deployment, its environment and project, the request type, the
result, every policy's outcome and messages, the engine, when, and the SHA-256 of the input the engine
saw (``stored_inputs.input_of``). Never the input or the plan themselves: messages and outcomes were
scrubbed when stored and are scrubbed again here with the input's sensitive values
(``guards/masking.py``); the entry's ``before``/``after`` were redacted when written (``audit.redacted``).

Signed as every webhook is (``webhooks.signed_headers``, Standard Webhooks, ``AUDIT_STREAM_SECRET``): over
HTTP in the ``webhook-*`` headers, in syslog as the structured data ``signature@32473`` (id, timestamp,
signature of the line's JSON). Both go through the egress guard.

The due work is in a row: ``AuditStreamCursor``, one per target, says up to which entry the stream was
delivered. ``audit.record`` wakes a sender after its transaction commits; the notifications sweeper
streams whatever a lost wake-up or a failed attempt left. A sender holds the cursor's lease, sends at most
``AUDIT_STREAM_BATCH`` entries in order and stops at the first failure (retried later with backoff): the
request that wrote the entry never waits for the SIEM, and the SIEM receives every entry, in order, at
least once (the message id, ``audit_<sequence>``, is the same on every attempt)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from policies_app import audit
from policies_app.deployments import stored_inputs
from policies_app.guards import egress, masking
from policies_app.models import AuditEntry, AuditStreamCursor, Evaluation
from policies_app.models.audit import chain_timestamp, hashed_fields
from policies_app.notifications import webhooks
from policies_app.ops import metrics

logger = logging.getLogger(__name__)

WEBHOOK, SYSLOG = "webhook", "syslog"
DECISION_ACTION = "deployment.decision."
LEASE = timedelta(minutes=10)
LONGEST_RETRY = timedelta(minutes=15)
# RFC 5424: facility 13 ("log audit"), severity 6 (informational).
SYSLOG_PRIORITY = 13 * 8 + 6
APP_NAME = "policy-platform"
# The structured data carrying the signature; 32473 is the enterprise number RFC 5612 sets aside for
# examples and documentation (the platform has none of its own).
SIGNATURE_SD_ID = "signature@32473"
# What a UDP datagram may carry of JSON, the line's header and structured data set aside (65,507 bytes
# is the most IPv4 carries).
MAX_DATAGRAM_BODY = 60_000
FAILURE_KINDS = {text: kind for kind, text in webhooks.FAILURES.items()}


def configured_targets() -> list[str]:
    return [
        target
        for target, setting in ((WEBHOOK, settings.AUDIT_STREAM_URL), (SYSLOG, settings.AUDIT_STREAM_SYSLOG))
        if setting
    ]


# --- what is sent --------------------------------------------------------------------------------------


def input_sha256(text: str | None) -> str | None:
    """The SHA-256 of the input the engine saw, as it saw it (None: none was built, or it was purged)."""
    if not text or text == stored_inputs.NO_INPUT:
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def decision_record(evaluation: Evaluation) -> dict[str, Any]:
    """What was decided and why, without the input: every string scrubbed of the input's sensitive values."""
    deployment = evaluation.deployment
    environment = deployment.environment
    text = stored_inputs.input_of(evaluation)
    digest = input_sha256(text)
    secrets = (
        masking.secrets_of(json.loads(text), masking.Sensitivity.of(evaluation)) if digest else frozenset()
    )
    return {
        "deployment": deployment.pk,
        "evaluation": evaluation.pk,
        "environment": {"id": environment.pk, "name": environment.name},
        "project": {"id": environment.project_id, "name": environment.project.name},
        "request_type": evaluation.request_type,
        "result": evaluation.decision,
        "failed_closed": bool(evaluation.error),
        "error": masking.scrub(evaluation.error, secrets),
        "policies": masking.scrubbed(evaluation.outcomes, secrets),
        "messages": masking.scrubbed(evaluation.messages, secrets),
        "input_sha256": digest,
        "input_purged": evaluation.input_purged_at is not None,
        "engine": evaluation.engine,
        "duration_ms": evaluation.duration_ms,
        "evaluated_at": evaluation.created_at.isoformat(),
    }


def _evaluations_named(entries: list[AuditEntry]) -> dict[int, Evaluation]:
    wanted = [
        entry.after["evaluation"]
        for entry in entries
        if entry.action.startswith(DECISION_ACTION)
        and isinstance(entry.after, dict)
        and entry.after.get("evaluation")
    ]
    return Evaluation.objects.select_related("deployment__environment__project").in_bulk(wanted)


def message_of(entry: AuditEntry, evaluations: dict[int, Evaluation]) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "audit.entry",
        "entry": {"id": entry.pk, **hashed_fields(entry), "entry_hash": entry.entry_hash},
    }
    evaluation_id = entry.after.get("evaluation") if isinstance(entry.after, dict) else None
    if entry.action.startswith(DECISION_ACTION) and evaluation_id in evaluations:
        message["type"] = "deployment.decision"
        message["decision"] = decision_record(evaluations[evaluation_id])
    return message


def message_id(entry: AuditEntry) -> str:
    return f"audit_{entry.sequence}"


def _hostname() -> str:
    name = settings.AUDIT_STREAM_HOSTNAME or socket.gethostname() or "-"
    return re.sub(r"[^\x21-\x7e]", "-", name)[:255]


def syslog_line(entry: AuditEntry, message: dict[str, Any], body: str, at: datetime) -> bytes:
    """One RFC 5424 line: the entry's time, this host, the message type, the signature as structured data,
    the JSON (ASCII only: no BOM needed)."""
    signed = webhooks.signed_headers(settings.AUDIT_STREAM_SECRET, message_id(entry), body, at)
    data = (
        f'[{SIGNATURE_SD_ID} id="{signed["webhook-id"]}" timestamp="{signed["webhook-timestamp"]}" '
        f'signature="{signed["webhook-signature"]}"]'
    )
    msgid = "decision" if message["type"] == "deployment.decision" else "audit"
    header = (
        f"<{SYSLOG_PRIORITY}>1 {chain_timestamp(entry.created_at)} {_hostname()} {APP_NAME} - {msgid} {data} "
    )
    return (header + body).encode("ascii")


def _body(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=True)


# --- sending -------------------------------------------------------------------------------------------


def _post_each(batch: list[tuple[AuditEntry, dict[str, Any]]]) -> tuple[int, str]:
    """POST each message in order; (the last sequence delivered, 0 if none; the failure, "" if none)."""
    delivered = 0
    for entry, message in batch:
        body = _body(message)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "policy-platform-audit-stream",
            "X-Platform-Event": message["type"],
            **webhooks.signed_headers(
                settings.AUDIT_STREAM_SECRET, message_id(entry), body, datetime.now(UTC)
            ),
        }
        _, error = webhooks.post_body(
            settings.AUDIT_STREAM_URL, headers, body, f"audit stream #{entry.sequence}"
        )
        if error:
            return delivered, error
        delivered = entry.sequence
    return delivered, ""


def _fitting_a_datagram(message: dict[str, Any]) -> dict[str, Any]:
    """A message small enough for one UDP datagram: a line too long would fail every attempt and hold
    the stream back for ever. The decision's policies and messages go first, then the entry's before and
    after (its hash then no longer recomputes: ``truncated`` says so; the webhook and TCP get it whole)."""
    if len(_body(message)) <= MAX_DATAGRAM_BODY:
        return message
    message = {**message, "truncated": True}
    if "decision" in message:
        message["decision"] = {
            key: value for key, value in message["decision"].items() if key not in ("policies", "messages")
        }
    if len(_body(message)) > MAX_DATAGRAM_BODY:
        message["entry"] = {
            key: value for key, value in message["entry"].items() if key not in ("before", "after")
        }
    return message


def _write_lines(batch: list[tuple[AuditEntry, dict[str, Any]]]) -> tuple[int, str]:
    """Every line of the batch in one go (one TCP connection, or a datagram each): all or nothing."""
    at = datetime.now(UTC)
    tcp = settings.AUDIT_STREAM_SYSLOG.strip().lower().startswith("tcp:")
    lines = [
        syslog_line(entry, message, _body(message if tcp else _fitting_a_datagram(message)), at)
        for entry, message in batch
    ]
    frames = [f"{len(line)} ".encode() + line if tcp else line for line in lines]
    try:
        egress.send_frames(settings.AUDIT_STREAM_SYSLOG, frames, timeout_s=settings.WEBHOOK_TIMEOUT_SECONDS)
    except egress.EgressRefused:
        return 0, webhooks.FAILURES["refused"]
    except egress.EgressFailed as failure:
        logger.info("audit stream to syslog failed (%s): %r", failure.kind, failure.cause)
        return 0, webhooks.FAILURES[failure.kind]
    return batch[-1][0].sequence, ""


SENDERS = {WEBHOOK: _post_each, SYSLOG: _write_lines}


def stream(target: str) -> int:
    """Send the next entries due to ``target``, in order, under the cursor's lease; how many were
    delivered. A failure stops the batch; the rest is due again after a backoff."""
    cursor, _ = AuditStreamCursor.objects.get_or_create(target=target)
    now = timezone.now()
    claimed = (
        AuditStreamCursor.objects.filter(pk=cursor.pk)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=now))
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(leased_until=now + LEASE)
    )
    if not claimed:
        return 0
    cursor.refresh_from_db()
    entries = list(
        AuditEntry.objects.select_related("actor")
        .filter(sequence__gt=cursor.sequence)
        .order_by("sequence")[: settings.AUDIT_STREAM_BATCH]
    )
    fields: dict[str, Any] = {"leased_until": None}
    delivered, error = 0, ""
    if entries:
        evaluations = _evaluations_named(entries)
        delivered, error = SENDERS[target]([(entry, message_of(entry, evaluations)) for entry in entries])
        fields["last_attempt_at"] = now
    if delivered:
        fields.update(sequence=delivered, delivered_at=timezone.now())
    if error:
        failures = cursor.failures + 1
        delay = min(timedelta(seconds=webhooks.retry_delay(failures)), LONGEST_RETRY)
        fields.update(failures=failures, last_error=error, next_attempt_at=timezone.now() + delay)
        metrics.AUDIT_STREAM_FAILURES.labels(target=target, kind=FAILURE_KINDS.get(error, "status")).inc()
    elif entries:
        fields.update(failures=0, last_error="", next_attempt_at=None)
    AuditStreamCursor.objects.filter(pk=cursor.pk).update(**fields)
    return sum(1 for entry in entries if entry.sequence <= delivered)


def stream_due() -> dict[str, int]:
    """Stream every configured target (a wake-up after an entry, or the sweep); a full batch delivered
    wakes a sender again for the rest."""
    sent = {target: stream(target) for target in configured_targets()}
    if any(count >= settings.AUDIT_STREAM_BATCH for count in sent.values()):
        audit.wake_stream()
    return sent
