"""Issue 16's seventeen findings, re-run as black-box requests: the checklist kept aside.

One short test per finding, each through the platform's own request handling (the API and pages through
Django's test client; the Django admin through its real views) as the lowest role that can reach the
surface, asserting the fixed behaviour. The deep tests of each finding (through gunicorn, Celery and real
git servers) are named in docs/security.md; these are the quick re-run."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from celery.app.task import Task
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from policies_app.accounts import tokens
from policies_app.guards.masking import MASK
from policies_app.models import (
    ApprovalPolicy,
    AuditEntry,
    OrganisationMembership,
    PolicyReplay,
    Project,
    ProjectMembership,
    Template,
)
from policies_app.policies import authoring, replay
from tests.builders import ONE_APPROVER, api_client_for, make_policy, make_user
from tests.git_repos import GitRepo
from tests.policies.test_repository_bounds import ALIAS_BOMB
from tests.policies.test_sync import DATA, MAIN, MAIN_TEST
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db

SECRET = "hunter2-s3cret"
POLICY = 'package env0\n\nallow contains "fine" if true\n'


# ---------------------------------------------------------------------------------- the lowest roles


@pytest.fixture
def org_admin(world):
    """An organisation admin who is not a superuser."""
    user = make_user("olga")
    OrganisationMembership.objects.create(user=user, role="admin")
    return user


@pytest.fixture
def author(world):
    """A policy author by permission, with no role on any project."""
    user = make_user("author")
    user.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    return user


@pytest.fixture
def pat(world):
    """A project admin of Payments."""
    user = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=user, role="admin")
    return user


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def sensitive_environment(world):
    """Payments EU / prod holds a sensitive Terraform variable."""
    world.environment.terraform_variables = {"db_password": SECRET, "region": "eu-west-1"}
    world.environment.sensitive_variables = {"terraform": ["db_password"]}
    world.environment.save()
    return world.environment


def triggered(world, django_capture_on_commit_callbacks, **body) -> dict:
    """Bob (a deployer) triggers on Payments EU / prod; the evaluation runs on commit."""
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client_for(world.bob).post(
            f"/api/v1/environments/{world.environment.pk}/deployments/", body, format="json"
        )
    assert response.status_code in (200, 201), response.content
    return response.json()


# ------------------------------------------------------------------------------------------- critical


def test_finding_1_a_template_manager_cannot_make_a_server_directory_a_template_source(org_admin):
    response = api_client_for(org_admin).post(
        "/api/v1/templates/",
        {"name": "root", "type": "terraform", "repository": "/", "path": "var"},
        format="json",
    )
    assert response.status_code == 400 and list(response.json()) == ["repository"], response.content
    assert "/var" not in json.dumps(response.json())
    assert not Template.objects.filter(name="root").exists()


# ----------------------------------------------------------------------------------------------- high


def test_finding_2_a_policy_test_calling_http_send_is_refused_and_sends_nothing(author, receiver):
    sending = (
        "package env0_test\n\nimport rego.v1\n\n"
        f'test_x if {{\n\thttp.send({{"method": "get", "url": "{receiver.url}"}})\n}}\n'
    )
    response = api_client_for(author).post(
        "/api/v1/policies/",
        {
            "name": "cost",
            "modules": [
                {"filename": "main.rego", "source": POLICY},
                {"filename": "main_test.rego", "source": sending},
            ],
        },
        format="json",
    )
    assert response.status_code == 400
    assert "http.send reaches the network" in response.json()["modules"][0]
    assert receiver.received == []


def test_finding_3_no_value_built_from_a_sensitive_variable_is_shown_in_the_configuration(
    world, sensitive_environment, settings, tmp_path, django_capture_on_commit_callbacks
):
    folder = tmp_path / "repo" / "db"
    folder.mkdir(parents=True)
    (folder / "main.tf").write_text(
        'variable "db_password" { type = string }\n'
        'variable "region" { type = string }\n'
        'resource "terraform_data" "db" { input = "postgres://app:${var.db_password}@db" }\n'
        'output "url" { value = "postgres://app:${var.db_password}@db" }\n'
    )
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]
    Template.objects.filter(pk=world.template.pk).update(
        repository=str(tmp_path / "repo"), path="db", revision=""
    )
    deployment = triggered(world, django_capture_on_commit_callbacks)
    shown = api_client_for(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/")
    assert shown.status_code == 200
    configuration = shown.json()["configuration"]
    assert configuration["outputs"]["url"]["value"] == MASK, "a value built from a secret is masked whole"
    assert SECRET not in shown.content.decode()


# --------------------------------------------------------------------------------------------- medium


def test_finding_4_plan_and_state_values_marked_sensitive_are_not_shown_to_a_viewer(
    world, django_capture_on_commit_callbacks
):
    change = {
        "address": "terraform_data.db",
        "type": "terraform_data",
        "name": "db",
        "change": {
            "actions": ["create"],
            "before": None,
            "after": {"input": "plan-" + SECRET},
            "after_sensitive": {"input": True},
        },
    }
    deployment = triggered(
        world,
        django_capture_on_commit_callbacks,
        plan={"format_version": "1.2", "resource_changes": [change]},
    )
    state = {
        "version": 4,
        "serial": 1,
        "lineage": "l",
        "outputs": {"url": {"value": "state-" + SECRET, "type": "string", "sensitive": True}},
        "resources": [],
    }
    put = api_client_for(world.bob).put(
        f"/api/v1/environments/{world.environment.pk}/state/", state, format="json"
    )
    assert put.status_code in (200, 201, 204), put.content
    viewer = api_client_for(world.vera)
    shown_input = viewer.get(f"/api/v1/deployments/{deployment['id']}/input/").content.decode()
    shown_state = viewer.get(f"/api/v1/environments/{world.environment.pk}/state/").content.decode()
    assert SECRET not in shown_input
    assert SECRET not in shown_state


def test_finding_5_a_project_admin_cannot_point_a_webhook_at_an_internal_address(world, pat):
    client = api_client_for(pat)
    for url in ("http://127.0.0.1:9/h", "http://[::1]/h", "http://169.254.169.254/", "http://10.0.0.1/h"):
        response = client.post(
            "/api/v1/webhooks/", {"project": world.payments.pk, "name": "h", "url": url}, format="json"
        )
        assert response.status_code == 400 and list(response.json()) == ["url"], (url, response.content)


def test_finding_6_a_policy_author_replaying_a_draft_reads_no_sensitive_variable(
    world, author, sensitive_environment, django_capture_on_commit_callbacks
):
    policy = make_policy("cost", POLICY)
    world.platform.approval_policies.add(policy)
    triggered(world, django_capture_on_commit_callbacks)
    draft = [
        {"filename": "main.rego", "source": 'package env0\n\ndeny contains sprintf("%v", [input]) if true\n'}
    ]
    client = api_client_for(author)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/api/v1/policies/{policy.pk}/replay/", {"modules": draft}, format="json")
    assert started.status_code == 201, started.content
    result = client.get(f"/api/v1/policies/{policy.pk}/replays/{started.json()['id']}/")
    assert result.status_code == 200
    assert SECRET not in result.content.decode()


def test_finding_7_a_repository_alias_bomb_is_refused_before_it_grows(
    world, author, tmp_path, repository_cache, local_repositories_allowed
):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "main_test.rego": MAIN_TEST, "data.json": DATA})
    repo.commit({"data.json": None, "data.yaml": ALIAS_BOMB})
    client = api_client_for(author)
    created = client.post("/api/v1/policy-repositories/", {"name": "r", "url": repo.url}, format="json")
    assert created.status_code == 201, created.content
    followed = client.post(
        "/api/v1/policies/",
        {"name": "cost", "repository": created.json()["id"], "revision": "main"},
        format="json",
    )
    assert followed.status_code == 400, followed.content
    assert "its aliases expand it" in json.dumps(followed.json())
    assert not ApprovalPolicy.objects.exists()


def test_finding_8_no_spelling_of_a_name_nor_a_forged_forwarded_for_escapes_a_limit(world, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client()
    for spelling in ("sam ", "ｓam", " sam"):
        client.post(reverse("login"), {"username": spelling, "password": "wrong"})
    locked = client.post(reverse("login"), {"username": "sam", "password": "pw"})
    assert "Too many failed sign-ins" in locked.content.decode()

    statuses = [
        Client().get("/api/v1/projects/", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").status_code
        for n in range(61)
    ]
    assert statuses[-1] == 429, "60 anonymous requests a minute per address, whatever the header says"


# ------------------------------------------------------------------------------------------------ low


def test_finding_9_a_csv_export_escapes_a_formula_in_a_project_name(world, pat):
    api_client_for(pat).post("/api/v1/projects/", {"name": "=HYPERLINK(1)", "parent": world.payments.pk})
    client = Client()
    client.force_login(pat)
    exported = client.get(reverse("web:audit-export", args=["csv"]))
    text = b"".join(exported.streaming_content).decode() if exported.streaming else exported.content.decode()
    assert "'=HYPERLINK(1)" in text
    assert ',"=HYPERLINK' not in text


def test_finding_10_a_policy_repository_on_the_servers_disk_is_refused_alike(author, tmp_path):
    client = api_client_for(author)
    answers = [
        client.post("/api/v1/policy-repositories/", {"name": f"r{n}", "url": url}, format="json")
        for n, url in enumerate(["/", str(tmp_path), str(tmp_path / "missing"), "file:///etc"])
    ]
    assert {a.status_code for a in answers} == {400}
    assert len({json.dumps(a.json()) for a in answers}) == 1, "one refusal, whether the path exists or not"


def test_finding_11_an_organisation_admin_cannot_deactivate_or_re_email_a_superuser(world, org_admin):
    client = api_client_for(org_admin)
    for change in ({"is_active": False}, {"email": "olga@example.com"}):
        response = client.patch(f"/api/v1/users/{world.admin.pk}/", change, format="json")
        assert response.status_code == 403, response.content
    world.admin.refresh_from_db()
    assert world.admin.is_active and world.admin.email == "admin@example.com"


def test_finding_12_a_newline_in_an_environment_name_is_a_400_naming_the_field(world, pat):
    response = api_client_for(pat).patch(
        f"/api/v1/environments/{world.environment.pk}/", {"name": "prod\nBcc: x@example.com"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["name"], response.content


def test_finding_13_secrets_are_not_stored_as_they_were_given(world, pat):
    created = api_client_for(pat).post(
        "/api/v1/webhooks/",
        {"project": world.payments.pk, "name": "h", "url": "http://8.8.8.8/h"},
        format="json",
    )
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    _, key = tokens.create_token(world.bob, "ci")
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM policies_app_webhook")
        [(stored_secret,)] = cursor.fetchall()
        cursor.execute("SELECT * FROM policies_app_apitoken")
        stored_tokens = json.dumps(cursor.fetchall(), default=str)
    assert secret.startswith("whsec_") and secret not in stored_secret
    assert key not in stored_tokens


def test_finding_14_the_demo_names_no_remote_repository(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "cache" / "templates")
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "cache" / "parse")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_demo", stdout=StringIO())
    assert Template.objects.exists()
    assert list(Template.objects.exclude(repository="").values_list("repository", flat=True)) == []


# ----------------------------------------------------------------------------------- the code review


def test_finding_15_the_django_admin_cannot_allow_self_approval_or_move_a_project(client, world):
    client.force_login(world.admin)
    response = client.post(
        reverse("admin:policies_app_project_change", args=[world.payments_eu.pk]),
        {"name": "Payments EU", "parent": "", "allow_self_approval": "on"},
    )
    assert response.status_code == 403
    project = Project.objects.get(pk=world.payments_eu.pk)
    assert project.parent == world.payments and not project.allow_self_approval


def test_finding_16_a_rejection_and_its_trigger_are_in_the_audit_log_in_words(
    world, django_capture_on_commit_callbacks
):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    deployment = triggered(world, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        rejected = api_client_for(world.alice).post(
            f"/api/v1/deployments/{deployment['id']}/reject/", {"comment": "not today"}, format="json"
        )
    assert rejected.status_code in (200, 201), rejected.content
    trail = AuditEntry.objects.filter(target_id=str(deployment["id"]), target_type="deployment")
    actions = list(trail.order_by("id").values_list("action", flat=True))
    assert actions[0] == "deployment.triggered" and "deployment.decision.pending" in actions
    assert actions[-1] == "deployment.rejected"
    assert not AuditEntry.objects.filter(action="deployment.rejectd").exists()
    assert trail.last().target_repr == f"deploy #{deployment['id']} of Payments EU / prod"


def test_finding_17_a_replay_started_while_the_broker_is_down_is_kept_and_resent(
    world, author, monkeypatch, django_capture_on_commit_callbacks
):
    policy = make_policy("cost", POLICY)
    draft = authoring.revise_policy(
        policy, modules=[{"filename": "main.rego", "source": ONE_APPROVER}], draft=True, user=author
    )

    def broker_down(*args, **kwargs):
        raise ConnectionRefusedError("the broker is down")

    monkeypatch.setattr(Task, "apply_async", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client_for(author).post(
            f"/api/v1/policies/{policy.pk}/replay/", {"revision": draft.number}, format="json"
        )
    assert response.status_code == 201, response.content
    started = PolicyReplay.objects.get(pk=response.json()["id"])
    assert started.status == "queued"
    PolicyReplay.objects.filter(pk=started.pk).update(enqueued_at=timezone.now() - timedelta(minutes=5))
    assert replay.resend_lost_replays() == [started.pk]
