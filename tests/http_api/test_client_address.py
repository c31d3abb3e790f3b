"""X-Forwarded-For is believed only from the proxies the operator declares (issue 16, finding 8): the
unauthenticated API throttle and the sign-in lockout count per the address the server trusts, so a client
rotating the header gets no fresh allowance. Through the real gunicorn, as the finding was found."""

import urllib.error
import urllib.request

import pytest
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse

from policies_app.guards.client_address import client_address
from tests.processes import gunicorn


def anonymous_statuses(base: str, forwarded_for: list[str]) -> list[int]:
    statuses = []
    for address in forwarded_for:
        request = urllib.request.Request(f"{base}/api/v1/projects/", headers={"X-Forwarded-For": address})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses.append(response.status)
        except urllib.error.HTTPError as answer:
            statuses.append(answer.code)
    return statuses


@pytest.mark.django_db(transaction=True)
def test_a_rotating_x_forwarded_for_does_not_escape_the_anonymous_throttle(tmp_path):
    rotating = [f"203.0.113.{n}" for n in range(1, 9)]
    with gunicorn(tmp_path, API_THROTTLE_ANON="5/minute") as base:
        statuses = anonymous_statuses(base, rotating)
    assert statuses[:5] == [401] * 5 and statuses[5:] == [429] * 3, statuses


@pytest.mark.django_db(transaction=True)
def test_behind_a_declared_proxy_each_forwarded_client_counts_on_its_own(tmp_path):
    # The test client connects from 127.0.0.1, declared here as the proxy: the address it forwards is
    # the client's, so six requests from one client are throttled while eight clients are not.
    with gunicorn(tmp_path, API_THROTTLE_ANON="5/minute", TRUSTED_PROXIES="127.0.0.1/32") as base:
        many = anonymous_statuses(base, [f"203.0.113.{n}" for n in range(1, 9)])
        one = anonymous_statuses(base, ["198.51.100.7"] * 6)
    assert many == [401] * 8
    assert one == [401] * 5 + [429]


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "client"),
    [
        ([], "198.51.100.1", "203.0.113.9", "198.51.100.1"),  # no proxy declared: the header is ignored
        (["10.0.0.0/8"], "198.51.100.1", "203.0.113.9", "198.51.100.1"),  # not from a declared proxy
        (["10.0.0.0/8"], "10.0.0.2", "203.0.113.9", "203.0.113.9"),
        # A client writes its own header first; the proxies append: the forged left part is not believed.
        (["10.0.0.0/8"], "10.0.0.2", "1.2.3.4, 203.0.113.9", "203.0.113.9"),
        (["10.0.0.0/8"], "10.0.0.2", "1.2.3.4, 203.0.113.9, 10.0.0.7", "203.0.113.9"),
        (["10.0.0.0/8"], "10.0.0.2", "garbage, 10.0.0.7", "10.0.0.7"),
        (["10.0.0.0/8"], "10.0.0.2", "", "10.0.0.2"),
        (["2001:db8::/32"], "2001:db8::1", "2001:4860::8", "2001:4860::8"),
    ],
)
def test_the_client_address_is_the_first_one_no_declared_proxy_wrote(proxies, remote, forwarded, client):
    with override_settings(TRUSTED_PROXIES=proxies):
        request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
        assert client_address(request) == client


@pytest.mark.django_db
@override_settings(LOGIN_FAILURE_LIMIT=1)
def test_the_sign_in_lockout_by_address_ignores_a_forged_header(world):
    # Five wrong passwords for five names from one address lock that address (5 x the per-name limit),
    # whatever X-Forwarded-For each request carried.
    client = Client()
    for n in range(5):
        client.post(
            reverse("login"),
            {"username": f"nobody{n}", "password": "x"},
            HTTP_X_FORWARDED_FOR=f"203.0.113.{n}",
        )
    locked = client.post(
        reverse("login"), {"username": "bob", "password": "pw"}, HTTP_X_FORWARDED_FOR="192.0.2.1"
    )
    assert "Too many failed sign-ins" in locked.content.decode()
