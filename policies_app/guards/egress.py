"""The one guard for every connection the platform opens to an address a user gave it: webhooks, git
over https and ssh (policy and template repositories), the audit log's stream to a SIEM (https, or syslog
over udp/tcp sockets: ``send_frames``), and whatever calls out later.

The contract (docs/security.md, "The shared guards"):

- A name is resolved once. Every address it resolves to must be a public internet address: loopback,
  private, shared (100.64/10), link-local (169.254.169.254 included), multicast, unspecified, reserved
  and documentation ranges are refused, in IPv4 and IPv6, and an IPv6 address carrying an IPv4 one
  (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4 ``2002::/16``, NAT64
  ``64:ff9b::/96``) is judged by the IPv4 address it carries. Every spelling of an address (``127.1``,
  ``0x7f000001``, ``2130706433``, ``017700000001``, ``[::1]``) reaches this check as the address the
  system resolver makes of it, so no spelling is special-cased. The operator may allow networks
  (``EGRESS_ALLOWED_NETWORKS``); nothing else is exempt.
- The connection goes to the address that was checked: no second lookup that DNS rebinding could
  answer differently. HTTPS still verifies the certificate for, and sends SNI with, the host name.
- Redirects are never followed (a 3xx is the answer); proxies from the environment are not used (they
  would resolve the name themselves); time (connect and total) and the response's size are bounded.
- A refusal says only that the target is not allowed. It names no address the name resolved to, and a
  name that does not resolve is refused with the same words, so the guard is no oracle of internal DNS.

HTTP goes through urllib3 (a pool per request, pinned to the checked address, with ``server_hostname``
and ``assert_hostname`` set to the name). Git cannot be given a socket, so ``git_route`` tells git how
to reach the checked address itself: curl's resolve list for http(s), ssh's ``HostName`` for ssh.

Why this module is long: the address rules, the HTTP client and the git route are one check read
together; split, a caller could take one half without the other.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError

from policies_app.iac.file_sandbox import SCP_LIKE

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22}
# Plain sockets (a syslog collector): the ports RFC 5426 (UDP) and RFC 6587 (TCP) register for syslog.
SOCKET_PORTS = {"udp": 514, "tcp": 601}
REFUSED = (
    "This address is not allowed: the platform connects only to public internet addresses, and the "
    "name must resolve to one."
)
# A host name git and curl will match exactly as written (their resolve list is matched on the name):
# letters, digits, hyphens, underscores and dots, no final dot. An international name is given in its
# ASCII (punycode) form.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


class EgressRefused(ValueError):
    """The target may not be reached. ``message`` is safe to show to whoever gave the address."""

    def __init__(self, message: str = REFUSED) -> None:
        super().__init__(message)
        self.message = message


class EgressFailed(Exception):
    """The target was allowed but the exchange failed. ``kind`` is all that may be shown: "unreachable"
    (no connection, TLS refused, or no complete answer in time) or "too_large" (the answer exceeded the
    bound). The cause is kept for logs only."""

    def __init__(self, kind: str, cause: BaseException | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.cause = cause


@dataclass(frozen=True)
class Target:
    """A checked destination: connect to ``address``; speak to ``host`` (Host header, SNI, certificate)."""

    scheme: str
    host: str  # as the URL names it, lower case, without brackets
    port: int
    address: str  # the checked address, as text

    @property
    def host_is_address(self) -> bool:
        return _as_address(self.host) is not None


@dataclass(frozen=True)
class EgressResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes


# ---------------------------------------------------------------------------------------- addresses


@lru_cache(maxsize=8)
def _networks(configured: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in configured)


def allowed_networks() -> tuple[IPNetwork, ...]:
    """The networks the operator allows besides the public internet (EGRESS_ALLOWED_NETWORKS)."""
    return _networks(tuple(settings.EGRESS_ALLOWED_NETWORKS))


def _as_address(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _carried_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (and reaches), if it is one of the forms that do."""
    if address.version == 4:
        return None
    assert isinstance(address, ipaddress.IPv6Address)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or address in _IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """Whether an address is on the public internet (and so may be reached without the operator's say)."""
    carried = _carried_ipv4(address)
    if carried is not None:
        # ::a.b.c.d is deprecated and no host is reached through it: refused whatever it carries.
        return address not in _IPV4_COMPATIBLE and is_public(carried)
    return (
        address.is_global
        and not address.is_multicast
        and not address.is_reserved
        and not address.is_private
        and not address.is_loopback
        and not address.is_link_local
        and not address.is_unspecified
    )


def may_reach(address: IPAddress) -> bool:
    """Whether the platform may connect to ``address``: public, or in a network the operator allows."""
    if is_public(address):
        return True
    candidates = [address, *filter(None, [_carried_ipv4(address)])]
    return any(
        candidate in network
        for network in allowed_networks()
        for candidate in candidates
        if candidate.version == network.version
    )


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver gives for ``host`` (one lookup). Raises EgressRefused when the
    name does not resolve (the same words as any refusal: no oracle of which names exist)."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise EgressRefused() from None
    addresses: list[IPAddress] = []
    for *_, sockaddr in answers:
        address = _as_address(str(sockaddr[0]))
        if address is not None and address not in addresses:
            addresses.append(address)
    if not addresses:
        raise EgressRefused()
    return addresses


def check_host(host: str, port: int) -> str:
    """The address to connect to for ``host``: resolved once, every answer allowed. Raises EgressRefused."""
    addresses = resolve(host, port)
    if not all(may_reach(address) for address in addresses):
        raise EgressRefused()
    return str(addresses[0])


def _host_and_port(scheme: str, host: str | None, port: int | None) -> tuple[str, int]:
    host = (host or "").lower()
    if not host:
        raise EgressRefused("The address has no host name.")
    if _as_address(host) is None and not _HOST_NAME.match(host):
        raise EgressRefused(
            "The host name may hold only letters, digits, '-', '_' and '.' (no final dot); give an "
            "international name in its ASCII form (xn--...)."
        )
    return host, port or DEFAULT_PORTS[scheme]


def _checked(url: str, schemes: Sequence[str], wrong_scheme: str, default_ports: dict[str, int]) -> Target:
    """The target of ``url``: its scheme one of ``schemes`` (else ``wrong_scheme`` is the refusal), its
    host resolved once, every address allowed. Raises EgressRefused with a message to show."""
    try:
        parts = urlsplit((url or "").strip())
        port = parts.port
    except ValueError:
        raise EgressRefused("The address is not a valid URL.") from None
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        raise EgressRefused(wrong_scheme)
    host, port = _host_and_port(scheme, parts.hostname, port or default_ports.get(scheme))
    return Target(scheme, host, port, check_host(host, port))


def check_url(url: str, schemes: Sequence[str] = ("http", "https")) -> Target:
    """Check an http(s) URL: the scheme, the host resolved once, every address allowed. Raises
    EgressRefused with a message to show."""
    wrong = f"Must be an {' or '.join(f'{name}://' for name in schemes)} address."
    return _checked(url, schemes, wrong, {})


def refusal_to_reach(url: str, schemes: Sequence[str] = ("http", "https")) -> str | None:
    """Why ``url`` may not be reached (a message naming no resolved address), or None."""
    try:
        check_url(url, schemes)
    except EgressRefused as refused:
        return refused.message
    return None


# --------------------------------------------------------------------------------------------- HTTP


class _Deadline:
    """Shuts the socket when the total time is up: a server that trickles its answer a byte at a time
    would otherwise keep a per-read timeout from ever firing."""

    def __init__(self, seconds: float) -> None:
        self.ends_at = time.monotonic() + seconds
        self.timer: threading.Timer | None = None

    def remaining(self) -> float:
        return max(0.0, self.ends_at - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        def cut() -> None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        self.timer = threading.Timer(self.remaining(), cut)
        self.timer.daemon = True
        self.timer.start()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def _connection_classes(deadline: _Deadline) -> tuple[type[HTTPConnection], type[HTTPSConnection]]:
    class WatchedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            deadline.watch(sock)
            return sock

    class WatchedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            deadline.watch(sock)
            return sock

    return WatchedHTTPConnection, WatchedHTTPSConnection


def request(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout_s: float,
    max_response_bytes: int | None = None,
) -> EgressResponse:
    """One HTTP exchange with a checked target, connected to the checked address, following nothing.

    Raises EgressRefused (the target is not allowed) or EgressFailed (no complete answer within
    ``timeout_s`` in all, or an answer larger than ``max_response_bytes``). Any status is an answer,
    3xx included: the caller decides what it means.
    """
    target = check_url(url)
    limit = settings.EGRESS_MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes
    parts = urlsplit(url.strip())
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default_port = DEFAULT_PORTS[target.scheme]
    host_header = f"[{target.host}]" if ":" in target.host else target.host
    if target.port != default_port:
        host_header += f":{target.port}"
    deadline = _Deadline(timeout_s)
    plain, secure = _connection_classes(deadline)
    timeout = urllib3.Timeout(connect=timeout_s, read=timeout_s)
    pool: urllib3.HTTPConnectionPool
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            timeout=timeout,
            retries=False,
            maxsize=1,
            cert_reqs="CERT_REQUIRED",
            server_hostname=target.host,
            assert_hostname=target.host,
        )
        pool.ConnectionCls = secure
    else:
        pool = urllib3.HTTPConnectionPool(
            target.address, target.port, timeout=timeout, retries=False, maxsize=1
        )
        pool.ConnectionCls = plain
    try:
        response = pool.urlopen(
            method,
            path,
            body=body,
            headers={**(headers or {}), "Host": host_header},
            retries=False,
            redirect=False,
            preload_content=False,
            decode_content=False,
            assert_same_host=False,
        )
        try:
            received = bytearray()
            for chunk in response.stream(64 * 1024, decode_content=False):
                received += chunk
                if len(received) > limit:
                    raise EgressFailed("too_large")
            if deadline.remaining() <= 0:
                raise EgressFailed("unreachable")
            return EgressResponse(response.status, dict(response.headers), bytes(received))
        finally:
            response.release_conn()
    except (HTTPError, OSError) as problem:
        raise EgressFailed("unreachable", problem) from None
    finally:
        deadline.stop()
        pool.close()


# ------------------------------------------------------------------------------------------ sockets


def check_socket_url(url: str) -> Target:
    """Check a ``udp://host:port`` or ``tcp://host:port`` target (a syslog collector) as an http one:
    the host resolved once, every address allowed. Raises EgressRefused."""
    return _checked(url, tuple(SOCKET_PORTS), "Must be a udp:// or tcp:// address.", SOCKET_PORTS)


def send_frames(url: str, frames: Sequence[bytes], *, timeout_s: float) -> None:
    """Send ``frames`` to a checked socket target, connected to the checked address: over UDP one datagram
    each, over TCP one connection carrying them all in order (the caller frames them). Nothing is read
    back. Raises EgressRefused, or EgressFailed("unreachable") when they could not all be sent within
    ``timeout_s``."""
    target = check_socket_url(url)
    family = socket.AF_INET6 if ":" in target.address else socket.AF_INET
    kind = socket.SOCK_DGRAM if target.scheme == "udp" else socket.SOCK_STREAM
    deadline = _Deadline(timeout_s)
    try:
        with socket.socket(family, kind) as sock:
            sock.settimeout(timeout_s)
            sock.connect((target.address, target.port))
            deadline.watch(sock)
            for frame in frames:
                if kind == socket.SOCK_STREAM:
                    sock.sendall(frame)
                else:
                    sock.send(frame)
            if deadline.remaining() <= 0:
                raise EgressFailed("unreachable")
    except OSError as problem:
        raise EgressFailed("unreachable", problem) from None
    finally:
        deadline.stop()


# ---------------------------------------------------------------------------------------------- git


@dataclass(frozen=True)
class GitRoute:
    """How git reaches a checked remote: ``config`` goes on git's command line (``-c name=value``),
    ``ssh_options`` on ssh's."""

    config: tuple[tuple[str, str], ...] = ()
    ssh_options: tuple[str, ...] = ()

    def git_arguments(self) -> list[str]:
        return [argument for name, value in self.config for argument in ("-c", f"{name}={value}")]


def is_network_git_url(url: str) -> bool:
    """Whether a git URL names a remote host (http, https, ssh, git, or the scp-like user@host:path)."""
    url = (url or "").strip()
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    return scheme in ("http", "https", "ssh", "git") or bool(SCP_LIKE.match(url))


def _git_host(url: str) -> tuple[str, str, int]:
    """The scheme, host and port of a network git URL."""
    url = url.strip()
    scp = SCP_LIKE.match(url) if "://" not in url else None
    if scp:
        return "ssh", *_host_and_port("ssh", scp["host"].strip("[]"), None)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise EgressRefused("The address is not a valid URL.") from None
    scheme = parts.scheme.lower()
    if scheme == "git":
        raise EgressRefused(
            "git:// is not allowed: it is unauthenticated and cannot be held to the checked address; "
            "use https:// or ssh://."
        )
    if scheme not in DEFAULT_PORTS:
        raise EgressRefused("Must be an https://, ssh:// or user@host:path address.")
    return scheme, *_host_and_port(scheme, parts.hostname, port)


def check_git_url(url: str) -> Target:
    """Check a network git URL's host (resolved once, every address allowed). Raises EgressRefused."""
    scheme, host, port = _git_host(url)
    return Target(scheme, host, port, check_host(host, port))


def git_route(url: str) -> GitRoute:
    """Check a network git URL now and say how git must reach the address that was checked: for http(s)
    curl's resolve list (the certificate is still verified for the name), no redirects and no proxy;
    for ssh, ssh's HostName (the host key is still checked under the name). Raises EgressRefused."""
    target = check_git_url(url)
    if target.scheme == "ssh":
        options = ["-o", "ProxyCommand=none", "-o", "ProxyJump=none", "-o", "CheckHostIP=no"]
        if not target.host_is_address:
            options += ["-o", f"HostName={target.address}", "-o", f"HostKeyAlias={target.host}"]
        return GitRoute(ssh_options=tuple(options))
    config = [("http.followRedirects", "false"), ("http.proxy", "")]
    if not target.host_is_address:
        address = f"[{target.address}]" if ":" in target.address else target.address
        config.append(("http.curloptResolve", f"{target.host}:{target.port}:{address}"))
    return GitRoute(config=tuple(config))
