#!/usr/bin/env python3
"""Verify an export of the policy platform's audit log (`manage.py export_audit --output FILE`).

Usage: python3 verify_audit_export.py EXPORT.jsonl [--public-key KEY]
KEY: the operator's Ed25519 public key, PEM or the base64 of its 32 raw bytes. Needs only the standard
library and `cryptography`. Exit code 0: the chain is intact (and every checkpoint signed by KEY);
1: broken, the first broken entry named. See docs/audit-verification.md."""

import argparse
import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

GENESIS = "0" * 64
HASHED = ("sequence", "previous_hash", "created_at", "actor_id", "actor", "action", "target_type",
          "target_id", "target", "project_id", "before", "after")  # fmt: skip
SIGNED = ("sequence", "entry_hash", "created_at", "key_id")


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def load_key(data):
    if b"-----BEGIN" in data:
        return load_pem_public_key(data)
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(data.strip(), validate=True))


class Broken(Exception):
    """The first problem found."""


def verify(lines, key):
    """(entries, checkpoints) checked; Broken at the first problem."""
    expected, previous, hashes, end, checkpoints = 1, GENESIS, {}, 0, 0
    for number, line in enumerate(lines, 1):
        record = json.loads(line)
        kind = record.get("type")
        if kind == "header":
            if record.get("format") != "policy-platform-audit/1":
                raise Broken(f"line {number}: unknown format {record.get('format')!r}")
        elif kind == "entry":
            where = f"entry #{record['sequence']} (id {record['id']})"
            if record["sequence"] != expected:
                raise Broken(f"{where}: entries from #{expected} are missing before it (deleted)")
            if record["previous_hash"] != previous:
                raise Broken(f"{where}: it does not follow entry #{expected - 1} (reordered or removed)")
            digest = hashlib.sha256(canonical({name: record[name] for name in HASHED})).hexdigest()
            if digest != record["entry_hash"]:
                raise Broken(f"{where}: its content does not match its hash (edited)")
            previous, end = record["entry_hash"], record["sequence"]
            hashes[end] = previous
            expected += 1
        elif kind == "checkpoint":
            where = f"checkpoint at entry #{record['sequence']}"
            if key is not None:
                try:
                    key.verify(bytes.fromhex(record["signature"]), canonical({n: record[n] for n in SIGNED}))
                except Exception:  # noqa: BLE001 - any failure to verify is a bad signature
                    raise Broken(f"{where}: not validly signed by the key given") from None
            if record["sequence"] > end:
                raise Broken(f"{where}: the export ends at entry #{end} (its tail is missing)")
            if hashes[record["sequence"]] != record["entry_hash"]:
                raise Broken(f"{where}: entry #{record['sequence']} is not the one signed (rewritten)")
            checkpoints += 1
        else:
            raise Broken(f"line {number}: unknown record type {kind!r}")
    return end, checkpoints


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("--public-key")
    arguments = parser.parse_args()
    key = None
    if arguments.public_key:
        with open(arguments.public_key, "rb") as file:
            key = load_key(file.read())
    with open(arguments.export, encoding="ascii") as file:
        try:
            entries, checkpoints = verify(file, key)
        except Broken as problem:
            print(f"BROKEN {problem}")
            return 1
    signatures = "signatures checked" if key else "signatures NOT checked (no --public-key)"
    print(f"OK: {entries} entries, {checkpoints} checkpoints, {signatures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
