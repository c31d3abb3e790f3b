"""`manage.py load_demo`: a usable demonstration world, loaded any number of times with the same result,
that reaches no network (issue 16, finding 14)."""

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command

from policies_app import access
from policies_app.accounts.tokens import user_for_key
from policies_app.deployments.stored_inputs import input_of, plan_of
from policies_app.models import ApprovalPolicy, Deployment, Environment, Evaluation, Project, Template
from policies_app.projects.tree import effective_policies, tree_for
from tests.processes import ROOT, platform_environment

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture(autouse=True)
def platform_files(settings, tmp_path):
    """The demo uploads its templates' archive and evaluates it: in the test's own folders."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "cache" / "templates")
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "cache" / "parse")


@pytest.fixture
def load_demo(django_capture_on_commit_callbacks):
    """Runs the command; the evaluations it queues on commit run too, as they would outside a test."""

    def run() -> str:
        out = StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command("load_demo", stdout=out)
        return out.getvalue()

    return run


def snapshot() -> dict:
    """Every row of the app, users and tokens, as values: equal snapshots mean nothing changed."""
    models = [*apps.get_app_config("policies_app").get_models(), User]
    rows = {}
    for model in models:
        rows[model._meta.label] = sorted(map(repr, model.objects.values_list()))
    return rows


def test_loading_the_demo_twice_changes_nothing(load_demo):
    load_demo()
    first = snapshot()
    output = load_demo()
    assert snapshot() == first
    assert "Triggered deployment" not in output, "the second run must not trigger new deployments"


def test_the_demo_prints_each_users_token_and_the_password(load_demo):
    output = load_demo()
    assert "demo-password" in output
    printed = dict(line.split()[:3:2] for line in output.splitlines() if " token " in line)
    for username in ("admin", "alice", "bob", "victor", "sam"):
        assert user_for_key(printed[username]) == User.objects.get(username=username)


def test_the_demo_users_log_in_with_the_demo_password_and_admin_is_a_superuser(load_demo):
    load_demo()
    for username in ("admin", "alice", "bob", "victor", "sam"):
        assert User.objects.get(username=username).check_password("demo-password"), username
    assert User.objects.get(username="admin").is_superuser


def test_the_demo_grants_each_persona_its_role_through_teams_and_memberships(load_demo):
    load_demo()
    payments_eu = Project.objects.get(name="Payments EU")
    capabilities = {
        name: sorted(access.grants(User.objects.get(username=name)).capabilities(payments_eu))
        for name in ("alice", "bob", "victor", "sam")
    }
    assert capabilities == {
        "alice": ["approve", "deploy", "read"],
        "bob": ["deploy", "read"],
        "victor": ["read"],
        "sam": ["approve", "deploy", "read"],
    }
    assert [p.name for p in tree_for(payments_eu).chain(payments_eu)] == [
        "Payments EU",
        "Payments",
        "Platform",
    ]
    assert Project.objects.get(name="Data").parent.name == "Platform"


def test_the_demo_policies_compile_and_one_is_written_in_rego_v0(load_demo):
    load_demo()
    versions = {p.name: p.latest_revision.rego_version for p in ApprovalPolicy.objects.all()}
    assert len(versions) == 5
    assert list(versions.values()).count("v0") == 1
    prod = Environment.objects.get(name="payments-eu-prod")
    assert {p.name for p in effective_policies(prod)} == {
        "require-two-approvers",
        "monthly-cost-limit",
        "security-approves-deletes",
        "main-branch-only",
    }


def test_the_demo_queue_has_a_deployment_pending_for_the_right_reasons(load_demo):
    load_demo()
    pending = Deployment.objects.get(idempotency_key="demo-pending-deletes")
    assert pending.status == "pending_approval", pending.error
    assert plan_of(pending)["resource_changes"]
    assert "Needs two approvals, has 0" in pending.messages["pending"]
    assert any("security team" in message for message in pending.messages["pending"])
    over_budget = Deployment.objects.get(idempotency_key="demo-over-budget")
    assert over_budget.status == "denied"
    alice = User.objects.get(username="alice")
    assert access.visible_deployments(alice).filter(status="pending_approval").exists()
    [note] = pending.comments.all()  # the deployer's note to the approvers, on the deployment's thread
    assert (note.author.username, "CHG-1042" in note.body) == ("bob", True)


def configuration_seen(deployment: Deployment) -> dict:
    evaluation = Evaluation.objects.filter(deployment=deployment).latest("pk")
    return json.loads(input_of(evaluation))["configuration"]


def test_the_demo_templates_are_an_uploaded_archive_and_their_configuration_is_evaluated(load_demo):
    load_demo()
    assert [(t.repository, bool(t.archive)) for t in Template.objects.all()] == [("", True)] * 3
    pending = Deployment.objects.get(idempotency_key="demo-pending-deletes")
    configuration = configuration_seen(pending)
    assert configuration["diagnostics"] == []
    assert [r["address"] for r in configuration["resources"]] == [
        "aws_instance.legacy",
        "aws_s3_bucket.reports",
    ]
    assert configuration["outputs"]["reports_bucket"]["value"] == "payments-eu-reports"


@pytest.mark.django_db(transaction=True)
def test_loading_the_demo_as_bin_run_platform_does_runs_no_git_at_all(tmp_path):
    """Finding 14: the demo named a template repository on a public Git host, so a fresh platform fetched
    from the internet by itself. GIT_TRACE makes every git command the process starts write to a file."""
    trace = tmp_path / "git-trace.log"
    data = tmp_path / "var"
    done = subprocess.run(
        [sys.executable, "manage.py", "load_demo"],
        cwd=ROOT,
        env=platform_environment(data, GIT_TRACE=str(trace)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Demo data is loaded." in done.stdout
    assert not trace.exists(), trace.read_text()
    assert not Template.objects.exclude(repository="").exists()
    assert not (Path(data) / "cache" / "templates" / ".repos").exists()
    pending = Deployment.objects.get(idempotency_key="demo-pending-deletes")
    assert configuration_seen(pending)["diagnostics"] == []
