"""An invitation (an account made without a password) is owed until it is sent: a mail server that is
down when the account is made costs a delay, never a 500 nor the invitation."""

from datetime import timedelta

import pytest
from django.core import mail
from django.core.management import call_command
from django.utils import timezone

from policies_app.models import InvitationEmail
from tests.processes import free_port

pytestmark = pytest.mark.django_db


def test_an_invitation_the_mail_server_refused_is_sent_by_the_periodic_sweep(
    api, world, settings, commits_run_on_commit_callbacks
):
    # A mail server that is down: nothing listens on its port.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 2
    created = api(world.admin).post(
        "/api/v1/users/", {"username": "nina", "email": "nina@example.com"}, format="json"
    )
    assert created.status_code == 201, created.content
    owed = InvitationEmail.objects.get(user__username="nina")
    assert owed.sent_at is None

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # the server is back
    call_command("run_periodic", "--once")
    assert mail.outbox == [], "sent again only once it is late"
    InvitationEmail.objects.filter(pk=owed.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    call_command("run_periodic", "--once")
    [invitation] = mail.outbox
    assert invitation.to == ["nina@example.com"] and "/accounts/reset/" in invitation.body
    call_command("run_periodic", "--once")
    assert len(mail.outbox) == 1, "sent once"


def test_an_account_made_with_a_password_owes_no_invitation(api, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api(world.admin).post(
            "/api/v1/users/",
            {"username": "otto", "email": "otto@example.com", "password": "long enough"},
            format="json",
        )
    assert created.status_code == 201
    assert mail.outbox == [] and not InvitationEmail.objects.exists()
