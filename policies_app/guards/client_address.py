"""The address a request comes from, as far as the server can trust it.

``X-Forwarded-For`` is written by whoever sends the request: believed blindly, it lets one client rotate
through any number of addresses and so past every per-address throttle and sign-in lockout. It is
believed only when the connection comes from a proxy the operator declared (``TRUSTED_PROXIES``), and
then only as far as the chain of declared proxies goes: walking the header from the right (each proxy
appends the address it saw), the first address that is not a declared proxy is the client.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings


@lru_cache(maxsize=8)
def _networks(configured: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in configured)


def _is_trusted_proxy(address: str) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(
        parsed in network
        for network in _networks(tuple(settings.TRUSTED_PROXIES))
        if network.version == parsed.version
    )


def client_address(request: Any) -> str:
    """The client's address: the connection's, or, behind declared proxies, the one they forwarded."""
    meta = getattr(request, "META", {})
    address = meta.get("REMOTE_ADDR", "") or ""
    if not _is_trusted_proxy(address):
        return address
    forwarded = [hop.strip() for hop in (meta.get("HTTP_X_FORWARDED_FOR") or "").split(",")]
    for hop in reversed(forwarded):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return address  # not what a proxy writes: stop at the last address a proxy vouched for
        if not _is_trusted_proxy(hop):
            return hop
        address = hop
    return address
