"""Superusers (issue 16, finding 11): an organisation admin who is not a superuser manages users, but not
the superusers above them: no deactivating, re-emailing (a password reset would then reach the admin) or
changing their role, through the API (tried against the real server) or the users page."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from policies_app.models import OrganisationMembership
from tests.accounts.live import api_call
from tests.builders import api_key_for, make_user
from tests.processes import gunicorn

User = get_user_model()


@pytest.fixture
def olga(world):
    """An organisation admin who is not a superuser: the lowest role that manages users."""
    olga = make_user("olga")
    OrganisationMembership.objects.create(user=olga, role="admin")
    return olga


@pytest.mark.django_db(transaction=True)
def test_an_organisation_admin_cannot_deactivate_re_email_or_demote_a_superuser(world, olga, tmp_path):
    key = api_key_for(olga)
    path = f"/api/v1/users/{world.admin.pk}/"
    with gunicorn(tmp_path) as base:
        for change in ({"is_active": False}, {"email": "olga@attacker.example"}, {"organisation_role": ""}):
            status, body = api_call(base, key, "PATCH", path, change)
            assert status == 403 and body["code"] == "superuser", (change, body)
        admin = User.objects.get(pk=world.admin.pk)
        assert admin.is_active and admin.email == "admin@example.com"

        # Ordinary users are still hers to manage; a superuser still manages another superuser.
        assert api_call(base, key, "PATCH", f"/api/v1/users/{world.bob.pk}/", {"is_active": False})[0] == 200
        root = make_user("root", is_superuser=True, is_staff=True)
        status, _ = api_call(base, api_key_for(root), "PATCH", path, {"email": "admin@corp.example"})
        assert status == 200
    assert User.objects.get(pk=world.admin.pk).email == "admin@corp.example"


def test_the_users_page_refuses_it_too_and_offers_no_form_for_a_superuser(client, world, olga):
    client.force_login(olga)
    page = client.get(reverse("web:user-list")).content.decode()
    assert f'action="{reverse("web:user-change", args=[world.admin.pk])}"' not in page
    assert f'action="{reverse("web:user-change", args=[world.bob.pk])}"' in page
    refused = client.post(reverse("web:user-change", args=[world.admin.pk]), {"organisation_role": ""})
    assert refused.status_code == 403 and "Only a superuser" in refused.content.decode()
    assert User.objects.get(pk=world.admin.pk).is_active, "an unticked box would have deactivated them"
