"""The audit log's hash chain (models/audit.py): verifying it, signing checkpoints of its head, exporting it
for a third party.

``verify`` walks the entries by sequence and names the first that breaks the chain: a gap in the sequence
(rows deleted: the first entry after the gap), an entry whose ``previous_hash`` is not the hash of the one
before (rows reordered, or removed and renumbered), an entry whose content does not match its own hash
(edited). Checkpoints are then checked: each signed by the key given (or the operator's), each naming an
entry that exists with that hash, none beyond the chain's end (the log's tail cut off).

The export (JSON lines) holds every entry as the chain hashed it, and every checkpoint;
docs/verify_audit_export.py checks one with nothing but the standard library and ``cryptography``. What it
holds is what the log holds: values were masked when the entry was written (``audit.redacted``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Max

from policies_app.models import AuditCheckpoint, AuditEntry
from policies_app.models.audit import GENESIS_HASH, canonical_json, entry_hash_of, hashed_fields

EXPORT_FORMAT = "policy-platform-audit/1"


class UnreadableKey(ValueError):
    pass


def _key_bytes(text: str | bytes) -> tuple[bytes | None, bytes | None]:
    """(PEM, raw 32 bytes): a key is written either as PEM or as the base64 of its 32 raw bytes."""
    data = text.encode() if isinstance(text, str) else text
    if b"-----BEGIN" in data:
        return data, None
    try:
        raw = base64.b64decode(data.strip(), validate=True)
    except binascii.Error:
        raise UnreadableKey("neither PEM nor the base64 of 32 raw bytes") from None
    if len(raw) != 32:
        raise UnreadableKey(f"the base64 holds {len(raw)} bytes, an Ed25519 key has 32")
    return None, raw


def private_key_from(text: str | bytes) -> Ed25519PrivateKey:
    pem, raw = _key_bytes(text)
    if raw is not None:
        return Ed25519PrivateKey.from_private_bytes(raw)
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except ValueError as problem:
        raise UnreadableKey(f"not a PEM private key without a password ({problem})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UnreadableKey("the PEM key is not an Ed25519 key")
    return key


def public_key_from(text: str | bytes) -> Ed25519PublicKey:
    """A public key (PEM or base64 raw); a private key is accepted too, its public half taken."""
    pem, raw = _key_bytes(text)
    if raw is not None:
        return Ed25519PublicKey.from_public_bytes(raw)
    if b"PRIVATE KEY" in pem:
        return private_key_from(pem).public_key()
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as problem:
        raise UnreadableKey(f"not a PEM public key ({problem})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UnreadableKey("the PEM key is not an Ed25519 key")
    return key


def signing_key() -> Ed25519PrivateKey | None:
    """The operator's key (settings.AUDIT_SIGNING_KEY), or None when checkpoints are not signed."""
    configured = settings.AUDIT_SIGNING_KEY
    if not configured:
        return None
    try:
        return private_key_from(configured)
    except UnreadableKey as problem:
        raise ImproperlyConfigured(f"AUDIT_SIGNING_KEY is not an Ed25519 private key: {problem}") from None


def raw_public_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def key_id_of(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(raw_public_bytes(key)).hexdigest()[:16]


def write_checkpoint() -> AuditCheckpoint | None:
    """Sign the chain's head as it is now, when a key is configured and the head moved since the last
    checkpoint. Periodic (CELERY_BEAT_SCHEDULE)."""
    key = signing_key()
    if key is None:
        return None
    head = AuditEntry.objects.order_by("-sequence").values_list("sequence", "entry_hash").first()
    last = AuditCheckpoint.objects.order_by("-sequence").values_list("sequence", flat=True).first()
    if head is None or (last is not None and last >= head[0]):
        return None
    checkpoint = AuditCheckpoint(sequence=head[0], entry_hash=head[1], key_id=key_id_of(key.public_key()))
    checkpoint.signature = key.sign(canonical_json(checkpoint.signed_fields())).hex()
    checkpoint.save()
    return checkpoint


@dataclass(frozen=True)
class Break:
    """Where the chain is broken: the entry named (its sequence and row id) and what is wrong."""

    sequence: int
    entry_id: int | None
    reason: str

    def __str__(self) -> str:
        row = f" (id {self.entry_id})" if self.entry_id is not None else ""
        return f"entry #{self.sequence}{row}: {self.reason}"


@dataclass
class ChainReport:
    entries: int = 0
    head: tuple[int, str] = (0, GENESIS_HASH)
    checkpoints: int = 0
    signatures_checked: bool = False
    problems: list[Break] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    @property
    def first_broken(self) -> Break | None:
        return self.problems[0] if self.problems else None


def first_break(entries: Iterator[AuditEntry], report: ChainReport, signed: dict[int, str]) -> Break | None:
    """Walk the entries in sequence order; the first break, or None. ``report`` counts what was walked;
    ``signed`` (sequence: hash), for the sequences checkpoints name, is filled with the hashes found."""
    expected, previous = 1, GENESIS_HASH
    for entry in entries:
        if entry.sequence != expected:
            missing = (
                f"#{expected}" if entry.sequence == expected + 1 else f"#{expected} to #{entry.sequence - 1}"
            )
            return Break(entry.sequence, entry.pk, f"entries {missing} are missing before it (deleted)")
        if entry.previous_hash != previous:
            return Break(
                entry.sequence,
                entry.pk,
                f"it does not follow entry #{expected - 1}: its previous_hash is not that entry's hash "
                "(entries reordered, or removed and renumbered)",
            )
        if entry_hash_of(hashed_fields(entry)) != entry.entry_hash:
            return Break(entry.sequence, entry.pk, "its content does not match its hash (edited)")
        if entry.sequence in signed:
            signed[entry.sequence] = entry.entry_hash
        report.entries += 1
        report.head = (entry.sequence, entry.entry_hash)
        expected, previous = expected + 1, entry.entry_hash
    return None


def _checkpoint_problems(
    checkpoints: list[AuditCheckpoint], hashes: dict[int, str], public_key: Ed25519PublicKey | None
) -> list[Break]:
    problems = []
    key_id = key_id_of(public_key) if public_key is not None else None
    log_end = AuditEntry.objects.aggregate(end=Max("sequence"))["end"] or 0
    for checkpoint in checkpoints:
        if public_key is not None:
            try:
                public_key.verify(
                    bytes.fromhex(checkpoint.signature), canonical_json(checkpoint.signed_fields())
                )
            except (InvalidSignature, ValueError):
                signer = "" if checkpoint.key_id == key_id else f" (signed by key {checkpoint.key_id})"
                problems.append(
                    Break(
                        checkpoint.sequence,
                        None,
                        f"the checkpoint of {checkpoint.created_at:%Y-%m-%d %H:%M} UTC does not bear a valid "
                        f"signature of key {key_id}{signer}",
                    )
                )
                continue
        if checkpoint.sequence > log_end:
            problems.append(
                Break(
                    checkpoint.sequence,
                    None,
                    f"a checkpoint vouches for entries up to #{checkpoint.sequence}; the log ends at "
                    f"#{log_end} (its tail deleted)",
                )
            )
        elif hashes[checkpoint.sequence] not in ("", checkpoint.entry_hash):  # "": after a break
            problems.append(
                Break(checkpoint.sequence, None, "its hash is not the one its checkpoint signed (rewritten)")
            )
    return problems


def verify(public_key: Ed25519PublicKey | None = None) -> ChainReport:
    """The whole chain and every checkpoint checked. Without ``public_key`` the operator's key
    (AUDIT_SIGNING_KEY) is used; with neither, signatures are not checked (the report says so)."""
    if public_key is None:
        private = signing_key()
        public_key = private.public_key() if private is not None else None
    checkpoints = list(AuditCheckpoint.objects.order_by("sequence", "id"))
    report = ChainReport(signatures_checked=public_key is not None, checkpoints=len(checkpoints))
    signed = dict.fromkeys((checkpoint.sequence for checkpoint in checkpoints), "")
    broken = first_break(AuditEntry.objects.order_by("sequence").iterator(chunk_size=2000), report, signed)
    if broken is not None:
        report.problems.append(broken)
    report.problems.extend(_checkpoint_problems(checkpoints, signed, public_key))
    return report


def export_lines() -> Iterator[str]:
    """The chain as JSON lines: a header, every entry in sequence order (the fields its hash covers, its
    hash and its row id), then every checkpoint. docs/verify_audit_export.py reads this."""
    yield json.dumps({"type": "header", "format": EXPORT_FORMAT, "genesis_hash": GENESIS_HASH}) + "\n"
    for entry in AuditEntry.objects.order_by("sequence").iterator(chunk_size=2000):
        line = {"type": "entry", "id": entry.pk, **hashed_fields(entry), "entry_hash": entry.entry_hash}
        yield json.dumps(line, sort_keys=True) + "\n"
    for checkpoint in AuditCheckpoint.objects.order_by("sequence", "id"):
        line = {"type": "checkpoint", **checkpoint.signed_fields(), "signature": checkpoint.signature}
        yield json.dumps(line, sort_keys=True) + "\n"
