"""Names hold no control characters (issue 16, finding 12): a newline in an environment's name made every
approval email for it fail (BadHeaderError). Every name (projects, environments, templates, teams,
policies, tokens, webhooks, repositories...) with a line break, tab or direction override is refused with
a 400 naming the field, tried against the real server as the lowest role that may name each; and the
emails built from names stored before the rule existed are still sent, their subject on one line."""

import pytest
from django.core import mail

from policies_app.errors import Invalid
from policies_app.models import Environment, OrganisationMembership, PolicyRepository, Project, Webhook
from tests.accounts.live import api_call
from tests.builders import api_key_for, make_user
from tests.processes import gunicorn

pytestmark = pytest.mark.django_db

ALLOW = 'package env0\n\nallow contains "ok" if true\n'


@pytest.fixture
def roles(world):
    """Pat administers Payments; Olga is an organisation admin (not a superuser)."""
    pat, olga = make_user("pat"), make_user("olga")
    world.payments.memberships.create(user=pat, role="admin")
    OrganisationMembership.objects.create(user=olga, role="admin")
    return {"pat": api_key_for(pat), "olga": api_key_for(olga), "bob": api_key_for(world.bob)}


def requests(world):
    """(who, method, path, body with a bad name, the field the refusal must name)"""
    return [
        ("pat", "POST", "/api/v1/projects/", {"name": "Cards\nBcc: x", "parent": world.payments.pk}),
        (
            "pat",
            "POST",
            "/api/v1/environments/",
            {
                "name": "prod\r\nBcc: everyone@example.com",
                "project": world.payments_eu.pk,
                "template": world.template.pk,
            },
        ),
        ("pat", "PATCH", f"/api/v1/environments/{world.environment.pk}/", {"name": "prod\nstaging"}),
        ("olga", "POST", "/api/v1/templates/", {"name": "net\twork", "type": "terraform"}),
        ("olga", "POST", "/api/v1/teams/", {"name": "ops\x1b[31m"}),
        (
            "olga",
            "POST",
            "/api/v1/policies/",
            {"name": "cost\u202eevil", "modules": [{"filename": "main.rego", "source": ALLOW}]},
        ),
        ("bob", "POST", "/api/v1/tokens/", {"name": "ci\nnightly"}),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_name_with_a_control_character_is_a_400_naming_the_field(world, roles, tmp_path):
    with gunicorn(tmp_path) as base:
        for who, method, path, body in requests(world):
            status, answer = api_call(base, roles[who], method, path, body)
            assert status == 400 and list(answer) == ["name"], (path, body, answer)
            assert "control characters" in answer["name"][0]
    assert Environment.objects.get(pk=world.environment.pk).name == "prod", "nothing was stored"
    assert not Project.objects.filter(name__startswith="Cards").exists()


def test_webhooks_repositories_and_users_refuse_them_on_every_way_in(world):
    refused = [
        Webhook(project=world.payments, name="chat\nx", url="https://hooks.example.com/", secret="s"),
        PolicyRepository(name="infra\u2028x", url="https://git.example.com/infra.git"),
        PolicyRepository(name="infra", url="https://git.example.com/infra.git\nx"),
        Project(name="tab\there"),
    ]
    for row in refused:
        with pytest.raises(Invalid) as refusal:
            row.save()
        assert list(refusal.value.errors) in (["name"], ["url"]), row
    with pytest.raises(Invalid) as refusal:
        make_user("eve", first_name="Eve\r\nBcc: all@example.com")
    assert list(refusal.value.errors) == ["first_name"]
    Project.objects.create(name="Zürich – ünïcode and emoji 🚀 are fine")


def test_an_environment_named_before_the_rule_still_gets_its_approval_emails(gated, run):
    from policies_app.deployments import lifecycle

    # A name stored before names were checked (the update bypasses the check, as the old code did).
    Environment.objects.filter(pk=gated.environment.pk).update(name="prod\r\nBcc: everyone@example.com")
    gated.environment.refresh_from_db()
    deployment, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    recipients = sorted(address for message in mail.outbox for address in message.to)
    assert recipients == ["admin@example.com", "alice@example.com", "sam@example.com"]
    for message in mail.outbox:
        assert "\n" not in message.subject and "\r" not in message.subject
        assert f"#{deployment.pk}" in message.subject and "prod Bcc: everyone@example.com" in message.subject
        assert message.bcc == []
