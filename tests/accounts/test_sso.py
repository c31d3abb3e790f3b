"""Single sign-on against a real OpenID provider (oidc-provider under node, tests/oidc_provider.py),
through a real browser (Debian's chromium driven by Playwright): the sign-in redirect, the user created
at first sign-in, the groups claim mapped to teams (and kept in step at the next sign-in), SSO_REQUIRED
refusing passwords to everyone but superusers, and sign-out at the platform and at the provider."""

import os

import pytest
from django.test import Client

from policies_app.accounts import sso, users
from policies_app.models import GroupTeamMapping, SsoIdentity, Team, TeamMembership
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, running_provider

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
ACCOUNTS = {
    "ada": {"email": "ada@example.com", "groups": ["platform-admins", "unmapped"]},
    "bea": {"email": "bea@example.com", "email_verified": False, "groups": []},
}


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (bin/run-tests installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (requirements.txt)")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        yield launched
        launched.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def provider(live_server, settings, tmp_path, loopback_allowed):
    with running_provider(tmp_path, live_server.url, {k: dict(v) for k, v in ACCOUNTS.items()}) as running:
        settings.OIDC_ISSUER = running.issuer
        settings.OIDC_RP_CLIENT_ID = CLIENT_ID
        settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
        sso._discovery.clear()
        yield running
    sso._discovery.clear()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


def sign_in_at_provider(page, site: str, login: str) -> None:
    page.goto(f"{site}/accounts/login/")
    page.click("#sso-sign-in")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "anything")
    page.click("button[type=submit]")
    page.click("button:has-text('Continue')")  # the provider's consent page
    page.wait_for_url(f"{site}/**")


def test_first_sign_in_creates_the_user_maps_groups_to_teams_and_signs_out_at_the_provider(
    world, live_server, provider, page
):
    site = live_server.url
    GroupTeamMapping.objects.create(group="platform-admins", team=world.security)
    sign_in_at_provider(page, site, "ada")

    identity = SsoIdentity.objects.select_related("user").get(issuer=provider.issuer, subject="ada")
    ada = identity.user
    assert (ada.username, ada.email, ada.has_usable_password()) == ("ada", "ada@example.com", False)
    membership = TeamMembership.objects.get(user=ada)
    assert (membership.team, membership.source, membership.source_group) == (
        world.security,
        "sso_group",
        "platform-admins",
    )
    assert "/accounts/login/" not in page.url
    assert "ada" in page.inner_text("header"), "signed in as ada"

    # Sign-out ends the platform's session, then the provider's, and comes back to the sign-in page.
    page.click("header button:has-text('Log out')")
    page.click("button:has-text('Yes, sign me out')")
    page.wait_for_url(f"{site}/accounts/login/**")
    page.goto(f"{site}/")
    assert "/accounts/login/" in page.url, "no longer signed in"

    # Removed from the group at the provider: the next sign-in takes the team away, and only that one.
    manual = Team.objects.create(name="manual team")
    manual.members.add(ada)
    provider.set_groups("ada", [])
    sign_in_at_provider(page, site, "ada")
    assert list(TeamMembership.objects.filter(user=ada).values_list("team__name", "source")) == [
        ("manual team", "manual")
    ]
    assert SsoIdentity.objects.count() == 1, "the same subject signs in as the same user"


def test_an_unverified_email_never_links_to_an_existing_account(world, live_server, provider, page):
    world.bob.email = "bea@example.com"
    world.bob.save()
    sign_in_at_provider(page, live_server.url, "bea")
    identity = SsoIdentity.objects.get(subject="bea")
    assert identity.user != world.bob and identity.user.username == "bea"


def test_sso_required_refuses_passwords_but_to_superusers(world, live_server, provider, settings, page):
    settings.SSO_REQUIRED = True
    client = Client()
    refused = client.post("/accounts/login/", {"username": "alice", "password": "pw"})
    assert refused.status_code == 200 and "signs in with single sign-on" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    admitted = Client().post("/accounts/login/", {"username": "admin", "password": "pw"})
    assert admitted.status_code == 302, "a superuser is the break-glass account"
    # The same refusal at the Django admin's sign-in.
    admin_refused = Client().post("/admin/login/", {"username": "alice", "password": "pw"})
    assert "_auth_user_id" not in admin_refused.wsgi_request.session

    # SSO still signs people in.
    GroupTeamMapping.objects.create(group="platform-admins", team=world.security)
    sign_in_at_provider(page, live_server.url, "ada")
    assert SsoIdentity.objects.filter(subject="ada").exists()


def test_without_an_issuer_single_sign_on_is_off_and_passwords_work(world, client):
    page = client.get("/accounts/login/").content.decode()
    assert "sso-sign-in" not in page
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.post("/accounts/login/", {"username": "alice", "password": "pw"}).status_code == 302


def test_a_provider_on_a_network_the_operator_did_not_allow_is_not_reached(
    world, live_server, provider, settings
):
    settings.EGRESS_ALLOWED_NETWORKS = []
    sso._discovery.clear()
    answer = Client(raise_request_exception=False).get("/oidc/authenticate/")
    assert answer.status_code == 400, "discovery refused by the egress guard"


def test_break_glass_passwords_work_while_the_provider_is_down(world, settings, loopback_allowed):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.SSO_REQUIRED = True
    sso._discovery.clear()
    assert Client().post("/accounts/login/", {"username": "admin", "password": "pw"}).status_code == 302


def test_a_deactivated_user_is_signed_out_and_the_provider_cannot_sign_them_in_again(
    world, live_server, provider, page
):
    site = live_server.url
    sign_in_at_provider(page, site, "ada")
    ada = SsoIdentity.objects.get(subject="ada").user
    users.change_user(world.admin, ada, is_active=False)
    page.goto(f"{site}/")
    assert "/accounts/login/" in page.url, "the session of a deactivated SSO user ends"
    page.click("#sso-sign-in")
    page.wait_for_url("**/accounts/login/?sso=failed")  # the provider remembers her: straight back
    assert "did not succeed" in page.inner_text("body")
