"""The audit log's rows, chained: each entry holds the hash of the one before it (``previous_hash``) and its
own (``entry_hash``, over a canonical JSON of everything it says), numbered without gaps (``sequence``).
An edit, a deletion or a reordering of rows breaks the chain where it happened (``manage.py
verify_audit``); signed checkpoints (``AuditCheckpoint``) pin the chain's head so that rewriting every hash
after an edit, or cutting the log's tail, is found too.

The chain is assigned here, in ``save``, so that every way an entry is written (``audit.record``, the
admin, a test, a bench) is chained, under one lock: on PostgreSQL a transaction-scoped advisory lock; on
SQLite every write transaction already holds the database's single write lock (``transaction_mode``
IMMEDIATE in settings). The unique ``sequence`` is the last guard: two writers that somehow read the same
head cannot both commit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connections, models, router, transaction
from django.utils import timezone

GENESIS_HASH = "0" * 64
# pg_advisory_xact_lock's key for the chain's head ("auditchn" in ASCII): one writer appends at a time.
CHAIN_LOCK_KEY = 0x6175646974636886


def chain_timestamp(moment: datetime) -> str:
    """A moment as the chain hashes it: UTC, microseconds always written (what either database keeps)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_json(value: Any) -> bytes:
    """One spelling of a JSON value: keys sorted, no spaces, ASCII only. docs/verify_audit_export.py
    spells it the same way."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _number(text: str) -> float | int:
    # PostgreSQL's jsonb keeps a number as a decimal and gives 1e+16 back as 10000000000000000: every
    # float Python writes with a positive exponent (all of them integers) is hashed as that integer.
    return int(Decimal(text)) if "e+" in text else float(text)


def as_stored(value: Any) -> Any:
    """A JSON value as either database gives it back (tuples become lists, keys strings, 1e+16 an int)."""
    return None if value is None else json.loads(json.dumps(value), parse_float=_number)


def hashed_fields(entry: AuditEntry) -> dict[str, Any]:
    """What an entry's hash covers: everything it says, and its place in the chain."""
    return {
        "sequence": entry.sequence,
        "previous_hash": entry.previous_hash,
        "created_at": chain_timestamp(entry.created_at),
        "actor_id": entry.actor_id,
        "actor": entry.actor_name,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "target": entry.target_repr,
        "project_id": entry.project_id,
        "before": as_stored(entry.before),
        "after": as_stored(entry.after),
    }


def entry_hash_of(fields: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(fields)).hexdigest()


class AuditEntryManager(models.Manager["AuditEntry"]):
    def bulk_append(self, entries: Iterable[AuditEntry], batch_size: int = 1000) -> list[AuditEntry]:
        """Many entries appended to the chain under one lock (``bulk_create`` alone would leave them out)."""
        entries = list(entries)
        using = router.db_for_write(self.model)
        with transaction.atomic(using=using, savepoint=False):
            head = _locked_head(using)
            for entry in entries:
                head = entry.link_after(head)
            return self.bulk_create(entries, batch_size=batch_size)


def _locked_head(using: str) -> tuple[int, str]:
    """The chain's last (sequence, hash), read under the chain's lock, inside the caller's transaction."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])
    last = AuditEntry.objects.using(using).order_by("-sequence").values_list("sequence", "entry_hash").first()
    return last or (0, GENESIS_HASH)


class AuditEntry(models.Model):
    """One change to what governs deployments: policies, roles, attachments, settings, approvals.

    Written by the use cases in the same transaction as the change itself, so the log can never miss a
    change that happened nor record one that did not."""

    # An account that acted is deactivated, never deleted: deleting it would rewrite entries it signs.
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    # The actor's username when they acted (a later rename does not rewrite the log).
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=60, db_index=True)
    target_type = models.CharField(max_length=40)
    target_id = models.CharField(max_length=40)
    target_repr = models.CharField(max_length=300)
    # The project the change happened in (for filtering and for who may read it); empty: organisation-wide.
    project = models.ForeignKey("Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # Set before the hash is taken (auto_now_add would set it after).
    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    sequence = models.PositiveBigIntegerField(unique=True, editable=False)
    previous_hash = models.CharField(max_length=64, editable=False)
    entry_hash = models.CharField(max_length=64, editable=False)

    objects = AuditEntryManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target_repr}"

    def link_after(self, head: tuple[int, str]) -> tuple[int, str]:
        """Take the place after ``head`` in the chain; the new head."""
        if self.actor_id is not None and not self.actor_name:
            self.actor_name = self.actor.get_username()
        self.sequence = head[0] + 1
        self.previous_hash = head[1]
        self.entry_hash = entry_hash_of(hashed_fields(self))
        return self.sequence, self.entry_hash

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("an audit entry is never changed once written")
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            self.link_after(_locked_head(using))
            super().save(*args, **kwargs)


class AuditCheckpoint(models.Model):
    """The chain's head at a moment, signed with the operator's Ed25519 key (settings.AUDIT_SIGNING_KEY):
    whoever holds the public key can tell that the entries up to ``sequence`` are the ones that existed
    then, even against someone able to rewrite every row and every hash after an edit."""

    sequence = models.PositiveBigIntegerField(db_index=True)
    entry_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # The first 16 hex digits of the SHA-256 of the raw public key: which key signed.
    key_id = models.CharField(max_length=16)
    signature = models.CharField(max_length=128)  # hex of the 64-byte Ed25519 signature

    class Meta:
        ordering = ["sequence", "id"]

    def __str__(self) -> str:
        return f"checkpoint at #{self.sequence} ({self.key_id})"

    def signed_fields(self) -> dict[str, Any]:
        """What the signature covers (docs/verify_audit_export.py signs nothing, it checks the same)."""
        return {
            "sequence": self.sequence,
            "entry_hash": self.entry_hash,
            "created_at": chain_timestamp(self.created_at),
            "key_id": self.key_id,
        }


class AuditStreamCursor(models.Model):
    """How far the audit log has been streamed to one target of the operator's SIEM (accounts/audit_stream.py):
    every entry up to ``sequence`` was delivered, in order. The due work is every entry after it: the row
    is the outbox, the chain's order the queue's."""

    target = models.CharField(max_length=10, unique=True)  # "webhook" or "syslog"
    sequence = models.PositiveBigIntegerField(default=0)
    # While one sender streams, no other does (entries go out once, in order).
    leased_until = models.DateTimeField(null=True, blank=True)
    # After a failure: consecutive failed attempts, when the next is due, the failure's class (never the
    # connection's error text).
    failures = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=200, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"audit stream to {self.target}: up to #{self.sequence}"
