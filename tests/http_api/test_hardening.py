"""Production hardening (issue 6, finding 13): security headers and switches, sign-in and API throttling,
sensitive variables, and what outsiders may list."""

import json
import subprocess
import sys

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from policies_app.guards.masking import MASK
from tests.builders import make_policy
from tests.processes import ROOT

pytestmark = pytest.mark.django_db

SECRET = "hunter2"


def settings_under(environment: dict) -> dict:
    """The settings a process configured by ``environment`` ends up with."""
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k) for k in "
        "['SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', 'SECURE_SSL_REDIRECT', "
        "'CONTENT_SECURITY_POLICY', 'DEBUG']}))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_production_turns_on_secure_cookies_and_hsts_and_the_switches_work():
    production = settings_under({"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "x" * 50})
    assert production["SESSION_COOKIE_SECURE"] and production["CSRF_COOKIE_SECURE"]
    assert production["SECURE_HSTS_SECONDS"] >= 31536000
    assert production["SECURE_SSL_REDIRECT"] is False
    switched = settings_under(
        {
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "x" * 50,
            "DJANGO_SECURE_COOKIES": "false",
            "DJANGO_SECURE_SSL_REDIRECT": "true",
            "DJANGO_SECURE_HSTS_SECONDS": "60",
        }
    )
    assert switched["SESSION_COOKIE_SECURE"] is False
    assert switched["SECURE_SSL_REDIRECT"] is True
    assert switched["SECURE_HSTS_SECONDS"] == 60
    development = settings_under({})
    assert development["DEBUG"] is True and development["SECURE_HSTS_SECONDS"] == 0


def test_pages_send_a_content_security_policy_and_refuse_framing(client, world):
    client.force_login(world.alice)
    response = client.get("/")
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


@override_settings(LOGIN_FAILURE_LIMIT=5)
def test_many_wrong_passwords_lock_the_account_even_against_the_right_one(world):
    client = Client()
    for _ in range(5):
        response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
        assert response.status_code == 200
    response = client.post(reverse("login"), {"username": "alice", "password": "pw"})
    assert response.status_code == 200
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # Another user is not locked out by Alice's failures.
    assert client.post(reverse("login"), {"username": "bob", "password": "pw"}).status_code == 302


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_the_admin_sign_in_is_throttled_too(world):
    client = Client()
    for _ in range(3):
        client.post("/admin/login/", {"username": "admin", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "admin", "password": "pw"})
    assert "Too many failed sign-ins" in response.content.decode()


def test_anonymous_api_requests_are_throttled(world):
    client = Client()
    statuses = [client.get("/api/v1/projects/").status_code for _ in range(70)]
    assert statuses[0] == 401
    assert statuses[-1] == 429


def make_sensitive(api, world):
    response = api(world.admin).patch(
        f"/api/v1/environments/{world.environment.pk}/",
        {
            "environment_variables": {"DB_PASSWORD": SECRET, "REGION": "eu-west-1"},
            "sensitive_variables": {"environment": ["DB_PASSWORD"]},
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    return response


def test_sensitive_variables_are_masked_in_the_api_and_kept_when_sent_back_masked(world, api):
    shown = make_sensitive(api, world).json()
    assert shown["environment_variables"] == {"DB_PASSWORD": MASK, "REGION": "eu-west-1"}
    assert SECRET not in json.dumps(
        api(world.vera).get(f"/api/v1/environments/{world.environment.pk}/").json()
    )
    # Editing with what the API showed keeps the secret.
    api(world.admin).patch(
        f"/api/v1/environments/{world.environment.pk}/",
        {"environment_variables": {**shown["environment_variables"], "REGION": "us-east-1"}},
        format="json",
    )
    world.environment.refresh_from_db()
    assert world.environment.environment_variables == {"DB_PASSWORD": SECRET, "REGION": "us-east-1"}


def test_policies_get_sensitive_values_but_the_input_and_pages_show_them_masked(
    world, api, client, django_capture_on_commit_callbacks
):
    make_sensitive(api, world)
    world.platform.approval_policies.add(
        make_policy(
            "sees secret",
            f'package env0\n\ndeny contains "secret seen" if input.variables.environment.DB_PASSWORD == "{SECRET}"\n',
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        created = api(world.bob).post(
            f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
        )
    deployment = api(world.bob).get(f"/api/v1/deployments/{created.json()['id']}/").json()
    assert deployment["status"] == "denied"
    assert deployment["messages"]["deny"] == ["secret seen"]

    shown_input = api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/").json()
    assert shown_input["variables"]["environment"]["DB_PASSWORD"] == MASK
    assert shown_input["variables"]["environment"]["REGION"] == "eu-west-1"

    client.force_login(world.vera)
    evaluation = deployment["evaluations"][0]["id"]
    for page in (
        f"/deployments/{deployment['id']}/evaluations/{evaluation}/input.json",
        f"/environments/{world.environment.pk}/",
        f"/deployments/{deployment['id']}/",
    ):
        body = client.get(page).content.decode()
        assert SECRET not in body, page


def test_sensitive_terraform_variables_are_masked_by_their_own_list(
    world, api, django_capture_on_commit_callbacks
):
    """Each kind of variable has its own list of sensitive names: a terraform variable is masked when the
    terraform list names it, whatever the environment list says (and the other way round)."""
    response = api(world.admin).patch(
        f"/api/v1/environments/{world.environment.pk}/",
        {
            "environment_variables": {"DB_PASSWORD": SECRET, "db_password": "eu-west-1"},
            "terraform_variables": {"db_password": SECRET, "DB_PASSWORD": "not-a-secret", "size": "small"},
            "sensitive_variables": {"environment": ["DB_PASSWORD"], "terraform": ["db_password"]},
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    expected = {
        "environment": {"DB_PASSWORD": MASK, "db_password": "eu-west-1"},
        "terraform": {"db_password": MASK, "DB_PASSWORD": "not-a-secret", "size": "small"},
    }
    shown = api(world.vera).get(f"/api/v1/environments/{world.environment.pk}/").json()
    assert (shown["environment_variables"], shown["terraform_variables"]) == (
        expected["environment"],
        expected["terraform"],
    )
    with django_capture_on_commit_callbacks(execute=True):
        created = api(world.bob).post(
            f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
        )
    shown_input = api(world.vera).get(f"/api/v1/deployments/{created.json()['id']}/input/").json()
    assert {kind: shown_input["variables"][kind] for kind in expected} == expected
    assert SECRET not in json.dumps(shown_input)


def test_an_input_that_is_not_an_object_or_has_no_variables_is_shown_as_it_is():
    from policies_app.guards.masking import masked_input

    sensitive = {"environment": ["DB_PASSWORD"]}
    assert masked_input(None, sensitive) is None
    assert masked_input({"plan": {}}, sensitive) == {"plan": {}}
    unmasked = {"variables": {"environment": {"DB_PASSWORD": SECRET}}}
    assert masked_input(unmasked, {}) == unmasked


def test_an_outsider_lists_no_teams_and_no_templates(world, api):
    assert api(world.charlie).get("/api/v1/teams/").json()["results"] == []
    assert api(world.charlie).get("/api/v1/templates/").json()["results"] == []
    # Members of a project see the teams holding roles there, and the templates in use there.
    world.platform.memberships.create(team=world.security, role="approver")
    assert [team["name"] for team in api(world.vera).get("/api/v1/teams/").json()["results"]] == [
        "security team"
    ]
    assert [t["name"] for t in api(world.vera).get("/api/v1/templates/").json()["results"]] == ["network"]
