"""The egress guard alone: every spelling of an internal address is refused before any connection, the
operator's allowed networks are the only exception, the connection goes to the address that was checked
(a second lookup would be answered differently), TLS is verified for the name, redirects are answers,
and time and size are bounded. Servers are real ones on loopback (tests/guards/servers.py); addresses
outside loopback are only ever checked, never connected to."""

import time

import pytest

from policies_app.guards import egress
from tests.guards.servers import ScriptedServer, make_certificates, plain, resolving, trickle

pytestmark = pytest.mark.django_db

# Every way of writing loopback that the system resolver turns into 127.0.0.1 or ::1 (or that carries it).
LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "127.1",
    "0x7f000001",
    "0x7f.0.0.1",
    "2130706433",
    "017700000001",
    "0177.0.0.1",
    "127.0.0.2",
    "localhost",
    "LOCALHOST",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
]
# Internal and special addresses that are checked only (never connected to from this machine).
INTERNAL = [
    "169.254.169.254",  # cloud metadata
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",  # shared address space (carrier-grade NAT)
    "0.0.0.0",
    "0",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "198.18.0.1",
    "192.0.2.1",
    "[::]",
    "[fe80::1]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[ff02::1]",
    "[ff0e::1]",
    "[2001:db8::1]",
    "[2001::1]",  # Teredo
    "[::127.0.0.1]",  # IPv4-compatible
    "[::8.8.8.8]",  # IPv4-compatible: deprecated, refused whatever it carries
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[2002:7f00:1::]",  # 6to4 carrying 127.0.0.1
    "[2002:a9fe:a9fe::1]",  # 6to4 carrying 169.254.169.254
    "[2002:c0a8:101::1]",  # 6to4 carrying 192.168.1.1
    "[64:ff9b::7f00:1]",  # NAT64 carrying 127.0.0.1
    "[64:ff9b::a9fe:a9fe]",  # NAT64 carrying 169.254.169.254
    "[64:ff9b:1::a00:1]",  # local-use NAT64
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "[2001:4860:4860::8888]", "[64:ff9b::808:808]", "[2002:808:808::1]"]


@pytest.fixture
def server():
    listening = ScriptedServer(plain(200, b"hello"))
    yield listening
    listening.close()


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_every_spelling_of_loopback_is_refused_before_connecting(host, server):
    url = f"http://{host}:{server.port}/hook"
    assert egress.refusal_to_reach(url) == egress.REFUSED
    with pytest.raises(egress.EgressRefused) as refused:
        egress.request("POST", url, body=b"{}", timeout_s=2)
    assert refused.value.message == egress.REFUSED
    assert server.requests == [], "nothing reached the server"


@pytest.mark.parametrize("host", INTERNAL)
def test_internal_and_special_addresses_are_refused(host):
    assert egress.refusal_to_reach(f"https://{host}/") == egress.REFUSED
    with pytest.raises(egress.EgressRefused):
        egress.git_route(f"https://{host}/org/repo.git")
    with pytest.raises(egress.EgressRefused):
        egress.git_route(f"ssh://git@{host}/org/repo.git")


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses_are_allowed(host):
    assert egress.refusal_to_reach(f"https://{host}/") is None


def test_a_public_looking_name_that_resolves_to_an_internal_address_is_refused(monkeypatch):
    with resolving(
        monkeypatch,
        {
            "hooks.example.test": ["127.0.0.1"],
            "meta.example.test": ["169.254.169.254"],
            "v6.example.test": ["::1"],
        },
    ):
        for name in ("hooks.example.test", "meta.example.test", "v6.example.test"):
            assert egress.refusal_to_reach(f"https://{name}/") == egress.REFUSED
            with pytest.raises(egress.EgressRefused):
                egress.git_route(f"git@{name}:org/repo.git")


def test_a_name_that_does_not_resolve_is_refused_in_the_same_words():
    # Otherwise "refused" and "unknown" would tell which internal names exist.
    assert egress.refusal_to_reach("https://no-such-host.invalid/") == egress.REFUSED


def test_other_schemes_and_odd_host_names_are_refused_by_field_message():
    for url in ("ftp://8.8.8.8/", "file:///etc/passwd", "gopher://8.8.8.8/", "", "https:///path"):
        assert egress.refusal_to_reach(url)
    assert "final dot" in egress.refusal_to_reach("https://example.com./")
    with pytest.raises(egress.EgressRefused, match="git://"):
        egress.git_route("git://8.8.8.8/repo.git")


def test_the_operator_allows_networks_by_setting_and_nothing_else(settings, server):
    settings.EGRESS_ALLOWED_NETWORKS = ["10.0.0.0/8", "127.0.0.1/32"]
    assert egress.refusal_to_reach("https://10.1.2.3/") is None
    assert egress.refusal_to_reach("https://[::ffff:10.1.2.3]/") is None, "the IPv4 it carries is allowed"
    assert egress.refusal_to_reach("https://172.16.0.1/") == egress.REFUSED
    assert egress.refusal_to_reach("https://169.254.169.254/") == egress.REFUSED
    assert egress.refusal_to_reach(f"http://127.0.0.2:{server.port}/") == egress.REFUSED
    answer = egress.request("GET", f"http://127.0.0.1:{server.port}/x", timeout_s=5)
    assert (answer.status, answer.body) == (200, b"hello")


def test_the_connection_goes_to_the_checked_address_without_a_second_lookup(settings, monkeypatch, server):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    # DNS rebinding: the first answer passes the check, every later one points elsewhere.
    with resolving(monkeypatch, {"hooks.example.test": ["127.0.0.1", "127.0.0.2"]}) as lookups:
        answer = egress.request(
            "POST", f"http://hooks.example.test:{server.port}/hook?x=1", body=b"{}", timeout_s=5
        )
    assert answer.status == 200
    assert lookups["hooks.example.test"] == 1
    [received] = server.requests
    assert received.startswith(b"POST /hook?x=1 HTTP/1.1\r\n")
    assert f"host: hooks.example.test:{server.port}".encode() in received.lower()


def test_https_is_verified_for_the_name_and_sends_it_as_sni(settings, monkeypatch, tmp_path):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    certificates = make_certificates(tmp_path, "hooks.example.test")
    tls = ScriptedServer(plain(204, b""), tls=certificates.server_context())
    try:
        names = {"hooks.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"]}
        with resolving(monkeypatch, names):
            with pytest.raises(egress.EgressFailed) as untrusted:
                egress.request("GET", f"https://hooks.example.test:{tls.port}/", timeout_s=5)
            assert untrusted.value.kind == "unreachable", "a certificate from an unknown CA is refused"
            monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
            answer = egress.request("GET", f"https://hooks.example.test:{tls.port}/", timeout_s=5)
            assert answer.status == 204
            assert "hooks.example.test" in tls.server_names
            with pytest.raises(egress.EgressFailed):
                egress.request("GET", f"https://other.example.test:{tls.port}/", timeout_s=5)
    finally:
        tls.close()


def test_a_redirect_is_the_answer_and_is_not_followed(settings):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    target = ScriptedServer(plain(200))
    redirecting = ScriptedServer(plain(302, b"", f"Location: http://127.0.0.1:{target.port}/internal\r\n"))
    try:
        answer = egress.request(
            "POST",
            f"http://127.0.0.1:{redirecting.port}/",
            headers={"webhook-signature": "v1,secret"},
            body=b"{}",
            timeout_s=5,
        )
        assert answer.status == 302
        assert target.requests == [], "nothing, and no header, reached the redirect's target"
    finally:
        target.close()
        redirecting.close()


def test_an_answer_larger_than_the_bound_is_a_failure(settings):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    huge = ScriptedServer(plain(200, b"x" * (3 * 1024 * 1024)))
    try:
        with pytest.raises(egress.EgressFailed) as failed:
            egress.request(
                "GET", f"http://127.0.0.1:{huge.port}/", timeout_s=10, max_response_bytes=1024 * 1024
            )
        assert failed.value.kind == "too_large"
        settings.EGRESS_MAX_RESPONSE_BYTES = 1000
        with pytest.raises(egress.EgressFailed, match="too_large"):
            egress.request("GET", f"http://127.0.0.1:{huge.port}/", timeout_s=10)
    finally:
        huge.close()


@pytest.mark.parametrize("head_first", [True, False], ids=["slow body", "slow head"])
def test_a_server_that_trickles_its_answer_is_cut_at_the_total_time(settings, head_first):
    # A byte every 0.2 s never trips a per-read timeout; the total bound still holds.
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    slow = ScriptedServer(trickle(head_first=head_first, every_s=0.2, total=100))
    try:
        started = time.monotonic()
        with pytest.raises(egress.EgressFailed) as failed:
            egress.request("GET", f"http://127.0.0.1:{slow.port}/", timeout_s=1)
        assert failed.value.kind == "unreachable"
        assert time.monotonic() - started < 3
    finally:
        slow.close()


def test_git_is_told_to_reach_the_checked_address_only(monkeypatch):
    with resolving(monkeypatch, {"git.example.test": ["93.184.215.14"], "v6.example.test": ["2001:4860::1"]}):
        https = egress.git_route("https://git.example.test/org/repo.git")
        assert ("http.curloptResolve", "git.example.test:443:93.184.215.14") in https.config
        assert ("http.followRedirects", "false") in https.config and ("http.proxy", "") in https.config
        assert egress.git_route("https://v6.example.test:8443/r.git").config[-1] == (
            "http.curloptResolve",
            "v6.example.test:8443:[2001:4860::1]",
        )
        ssh = egress.git_route("git@git.example.test:org/repo.git").ssh_options
        assert "HostName=93.184.215.14" in ssh and "HostKeyAlias=git.example.test" in ssh
        assert "ProxyCommand=none" in ssh
