"""The audit log is tamper-evident (issue 20): every entry holds the hash of the one before; decisions,
approvals and rejections made through the real server form a chain that ``manage.py verify_audit`` passes;
an edited row, a deleted row, two rows swapped and a checkpoint checked with another key each fail it,
naming the first broken entry; the export verifies with the standalone script of the docs, which rejects a
tampered one; two writers on PostgreSQL never fork the chain."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from policies_app.accounts import audit_chain
from policies_app.models import AuditCheckpoint, AuditEntry
from tests.accounts.live import api_call
from tests.builders import ONE_APPROVER, api_key_for, make_policy
from tests.processes import ROOT, gunicorn, platform_environment

SCRIPT = ROOT / "docs" / "verify_audit_export.py"


def private_pem(key: Ed25519PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def write_public_key(key: Ed25519PrivateKey, path) -> str:
    path.write_text(audit_chain.public_key_pem(key.public_key()))
    return str(path)


def verify_fails(*args: str) -> str:
    with pytest.raises(CommandError) as failure:
        call_command("verify_audit", *args)
    return str(failure.value)


def run_script(export, public_key: str | None = None) -> subprocess.CompletedProcess:
    """The docs' script, run as a third party would: its own interpreter, no Django, nothing of ours."""
    command = [sys.executable, "-I", str(SCRIPT), str(export)]
    if public_key:
        command += ["--public-key", public_key]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd="/")


def set_after(entry: AuditEntry, value: dict) -> None:
    placeholder = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE policies_app_auditentry SET "after" = {placeholder} WHERE id = %s',
            [json.dumps(value), entry.pk],
        )


def decide_through_the_api(world, api, capture) -> None:
    """Bob triggers over the API twice: Sam rejects the first, Alice approves the second (a newer
    deployment supersedes one still waiting, so each is decided before the next)."""
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    for judge, verdict in ((world.sam, "reject"), (world.alice, "approve")):
        with capture(execute=True):
            response = api(world.bob).post(
                f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
            )
            assert response.status_code in (200, 201), response.json()
        with capture(execute=True):
            decided = api(judge).post(
                f"/api/v1/deployments/{response.json()['id']}/{verdict}/", {}, format="json"
            )
        assert decided.status_code == 200, decided.json()


@pytest.fixture
def decided(world, api, django_capture_on_commit_callbacks):
    decide_through_the_api(world, api, django_capture_on_commit_callbacks)
    actions = list(AuditEntry.objects.order_by("sequence").values_list("action", flat=True))
    assert {"deployment.triggered", "deployment.decision.pending", "deployment.approved"} <= set(actions)
    assert {"deployment.rejected", "deployment.decision.allow", "policy.created"} <= set(actions)
    return world


@pytest.fixture
def signing_key(settings):
    key = Ed25519PrivateKey.generate()
    settings.AUDIT_SIGNING_KEY = private_pem(key)
    return key


def chain() -> list[AuditEntry]:
    return list(AuditEntry.objects.order_by("sequence"))


@pytest.mark.django_db
def test_entries_are_numbered_without_gaps_each_holding_the_hash_of_the_one_before(decided, capsys):
    entries = chain()
    assert [e.sequence for e in entries] == list(range(1, len(entries) + 1))
    assert entries[0].previous_hash == "0" * 64
    assert all(
        later.previous_hash == earlier.entry_hash
        for earlier, later in zip(entries, entries[1:], strict=False)
    )
    approved = AuditEntry.objects.get(action="deployment.approved")
    assert approved.actor_name == "alice"
    call_command("verify_audit")
    assert f"OK: {len(entries)} entries chained up to #{len(entries)}" in capsys.readouterr().out


@pytest.mark.django_db
def test_an_entry_edited_in_the_database_is_named(decided):
    approved = AuditEntry.objects.get(action="deployment.approved")
    set_after(approved, {"comment": "approved by someone else"})
    message = verify_fails()
    assert f"entry #{approved.sequence} (id {approved.pk})" in message
    assert "does not match its hash (edited)" in message


@pytest.mark.django_db
def test_a_deleted_entry_is_found_at_the_first_entry_after_the_gap(decided):
    entries = chain()
    removed, following = entries[2], entries[3]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM policies_app_auditentry WHERE id = %s", [removed.pk])
    message = verify_fails()
    assert f"entry #{following.sequence} (id {following.pk})" in message
    assert f"entries #{removed.sequence} are missing before it (deleted)" in message


@pytest.mark.django_db
def test_two_entries_swapped_are_found(decided):
    entries = chain()
    first, second = entries[3], entries[4]
    with connection.cursor() as cursor:
        # Through a free number: sequence is unique.
        cursor.execute("UPDATE policies_app_auditentry SET sequence = 999999 WHERE id = %s", [first.pk])
        cursor.execute(
            "UPDATE policies_app_auditentry SET sequence = %s WHERE id = %s", [first.sequence, second.pk]
        )
        cursor.execute(
            "UPDATE policies_app_auditentry SET sequence = %s WHERE id = %s", [second.sequence, first.pk]
        )
    message = verify_fails()
    assert f"entry #{first.sequence} (id {second.pk})" in message
    assert "does not follow entry" in message


@pytest.mark.django_db
def test_a_chain_rewritten_after_an_edit_is_caught_by_the_signed_checkpoint(decided, signing_key):
    assert audit_chain.write_checkpoint() is not None
    assert audit_chain.write_checkpoint() is None, "nothing new: no second checkpoint"
    call_command("verify_audit")
    # Someone with the database edits an entry and recomputes every hash after it: the chain holds...
    entries = chain()
    edited = entries[1]
    edited.after = {"forged": True}
    AuditEntry.objects.filter(pk=edited.pk).update(after=edited.after)
    head = (edited.sequence - 1, entries[0].entry_hash)
    for entry in entries[1:]:
        entry.refresh_from_db()
        entry.link_after(head)
        head = (entry.sequence, entry.entry_hash)
        AuditEntry.objects.filter(pk=entry.pk).update(
            previous_hash=entry.previous_hash, entry_hash=entry.entry_hash
        )
    # ... but not the checkpoint, signed with a key the database does not hold.
    message = verify_fails()
    assert f"entry #{len(entries)}: its hash is not the one its checkpoint signed (rewritten)" in message


@pytest.mark.django_db
def test_a_checkpoint_checked_with_another_key_fails(decided, signing_key, tmp_path):
    audit_chain.write_checkpoint()
    call_command("verify_audit", "--public-key", write_public_key(signing_key, tmp_path / "right.pem"))
    other = write_public_key(Ed25519PrivateKey.generate(), tmp_path / "other.pem")
    message = verify_fails("--public-key", other)
    assert "does not bear a valid signature of key" in message
    assert f"signed by key {audit_chain.key_id_of(signing_key.public_key())}" in message


@pytest.mark.django_db
def test_the_tail_cut_off_after_a_checkpoint_is_found(decided, signing_key):
    audit_chain.write_checkpoint()
    last = chain()[-1]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM policies_app_auditentry WHERE id = %s", [last.pk])
    assert "(its tail deleted)" in verify_fails()


@pytest.mark.django_db
def test_run_periodic_signs_the_chain_head_when_a_key_is_set(decided, settings, signing_key):
    call_command("run_periodic", "--once")
    checkpoint = AuditCheckpoint.objects.get()
    assert (checkpoint.sequence, checkpoint.entry_hash) == (chain()[-1].sequence, chain()[-1].entry_hash)
    assert checkpoint.key_id == audit_chain.key_id_of(signing_key.public_key())
    settings.AUDIT_SIGNING_KEY = ""
    AuditEntry.objects.create(action="x", target_type="t", target_id="1", target_repr="x")
    call_command("run_periodic", "--once")
    assert AuditCheckpoint.objects.count() == 1, "no key, no checkpoint"


@pytest.mark.django_db
def test_the_signing_key_may_be_given_as_base64_of_its_raw_bytes(world, settings):
    import base64

    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    settings.AUDIT_SIGNING_KEY = base64.b64encode(raw).decode()
    AuditEntry.objects.create(action="x", target_type="t", target_id="1", target_repr="x")
    assert audit_chain.write_checkpoint().key_id == audit_chain.key_id_of(key.public_key())
    settings.AUDIT_SIGNING_KEY = "not a key"
    with pytest.raises(Exception, match="AUDIT_SIGNING_KEY is not an Ed25519 private key"):
        audit_chain.write_checkpoint()


@pytest.mark.django_db(transaction=True)
def test_through_the_real_server_and_the_docs_script(world, tmp_path):
    """Decisions made through gunicorn; verify_audit run as the operator runs it (its exit code); the
    export checked by docs/verify_audit_export.py, and a tampered copy rejected by it."""
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    key = Ed25519PrivateKey.generate()
    env = platform_environment(tmp_path, AUDIT_SIGNING_KEY=private_pem(key))
    bob, alice, sam = (api_key_for(user) for user in (world.bob, world.alice, world.sam))
    with gunicorn(tmp_path, AUDIT_SIGNING_KEY=private_pem(key)) as base:
        for judge, verdict in ((sam, "reject"), (alice, "approve")):
            status, body = api_call(
                base, bob, "POST", f"/api/v1/environments/{world.environment.pk}/deployments/", {}
            )
            assert status in (200, 201), body
            status, body = api_call(base, judge, "POST", f"/api/v1/deployments/{body['id']}/{verdict}/", {})
            assert status == 200, body

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert manage("run_periodic", "--once").returncode == 0
    assert AuditCheckpoint.objects.count() == 1
    verified = manage("verify_audit")
    assert verified.returncode == 0, verified.stderr
    assert "signatures checked" in verified.stdout
    public = tmp_path / "audit.pem"
    public.write_text(manage("audit_public_key").stdout)
    export = tmp_path / "audit.jsonl"
    assert manage("export_audit", "--output", str(export)).returncode == 0

    good = run_script(export, str(public))
    assert good.returncode == 0, good.stdout + good.stderr
    assert f"OK: {AuditEntry.objects.count()} entries, 1 checkpoints, signatures checked" in good.stdout
    lines = export.read_text().splitlines()
    rejection = next(i for i, line in enumerate(lines) if '"deployment.rejected"' in line)
    record = json.loads(lines[rejection])
    assert record["actor"] == "sam" and record["type"] == "entry"

    tampered = tmp_path / "tampered.jsonl"
    record["actor"] = "alice"
    tampered.write_text("\n".join([*lines[:rejection], json.dumps(record), *lines[rejection + 1 :]]) + "\n")
    refused = run_script(tampered, str(public))
    assert refused.returncode == 1
    assert (
        f"BROKEN entry #{record['sequence']} (id {record['id']}): its content does not match its hash"
        in refused.stdout
    )
    dropped = tmp_path / "dropped.jsonl"
    dropped.write_text("\n".join([*lines[:rejection], *lines[rejection + 1 :]]) + "\n")
    assert "are missing before it (deleted)" in run_script(dropped, str(public)).stdout
    other = write_public_key(Ed25519PrivateKey.generate(), tmp_path / "other.pem")
    assert "not validly signed by the key given" in run_script(export, other).stdout

    set_after(AuditEntry.objects.get(action="deployment.rejected"), {"comment": "fine"})
    broken = manage("verify_audit")
    assert broken.returncode == 1
    assert "BROKEN entry #" in broken.stderr and "(edited)" in broken.stderr


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_writers_on_postgresql_never_fork_the_chain(world):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    per_thread = 40
    errors = []
    start = threading.Barrier(2)

    def write(name: str) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                AuditEntry.objects.create(
                    action=f"{name}.{i}", target_type="t", target_id=str(i), target_repr=name
                )
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    entries = chain()
    assert len(entries) == AuditEntry.objects.count() >= 2 * per_thread
    assert [e.sequence for e in entries] == list(range(1, len(entries) + 1))
    call_command("verify_audit")


@pytest.mark.django_db
def test_the_migration_chains_existing_entries_in_the_order_they_were_written(world):
    from datetime import timedelta

    from django.apps import apps
    from django.utils import timezone

    migration = importlib.import_module("policies_app.migrations.0017_audit_hash_chain")
    now = timezone.now()
    written = [
        AuditEntry.objects.create(
            action=f"a{i}", target_type="t", target_id="1", target_repr="x", actor=world.bob
        )
        for i in range(3)
    ]
    # As before the chain: written out of id order, no sequence (moved out of the way), no hashes.
    for entry, minutes in zip(written, (5, 1, 3), strict=True):
        AuditEntry.objects.filter(pk=entry.pk).update(
            created_at=now - timedelta(minutes=minutes),
            sequence=entry.sequence + 1000,
            previous_hash="",
            entry_hash="",
            actor_name="",
        )
    migration.chain_existing_entries(apps, SimpleNamespace(connection=connection))
    assert [(e.action, e.sequence, e.actor_name) for e in chain()] == [
        ("a0", 1, "bob"),
        ("a2", 2, "bob"),
        ("a1", 3, "bob"),
    ]
    call_command("verify_audit")


@pytest.mark.django_db
def test_an_entry_is_never_changed_and_many_are_appended_under_one_lock(world):
    entry = AuditEntry.objects.create(action="x", target_type="t", target_id="1", target_repr="x")
    entry.after = {"changed": True}
    with pytest.raises(ValueError, match="never changed"):
        entry.save()
    AuditEntry.objects.bulk_append(
        AuditEntry(action=f"bulk.{i}", target_type="t", target_id=str(i), target_repr="x") for i in range(3)
    )
    assert [e.sequence for e in chain()] == [1, 2, 3, 4]
    call_command("verify_audit")


@pytest.mark.django_db
def test_values_hash_the_same_once_read_back_from_the_database(world):
    values = {"cost": 0.1, "big": 1e16, "huge": 1.5e300, "tiny": 1e-7, "whole": 2.0, "ids": (1, 2), "n": None}
    AuditEntry.objects.create(action="x", target_type="t", target_id="1", target_repr="x", after=values)
    call_command("verify_audit")
