"""IP network functions: cidrhost cidrnetmask cidrsubnet cidrsubnets."""

from __future__ import annotations

import ipaddress
from typing import Any

from policies_app.iac.functions.base import ArgumentError, register, want_int, want_string

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _network(prefix: Any) -> Network:
    text = want_string(prefix, "the prefix")
    try:
        # strict=False: like Go's net.ParseCIDR, "10.1.2.3/16" names the network 10.1.0.0/16.
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ArgumentError(f'invalid CIDR expression: invalid CIDR address: "{text}"') from None


def _subnet(network: Network, newbits: int, netnum: int) -> Network | str:
    new_prefix = network.prefixlen + newbits
    if new_prefix < 0:
        raise ArgumentError(f"cannot shorten a prefix of {network.prefixlen} by {-newbits} bits")
    if newbits < 0:
        # Terraform shortens the prefix and keeps the address as it is (cidrsubnet("10.0.0.0/8", -1, 0)
        # is "10.0.0.0/7"); we repeat that rather than normalise it.
        if netnum != 0:
            raise ArgumentError(
                f"prefix extension of {newbits} does not accommodate a subnet numbered {netnum}"
            )
        return f"{network.network_address}/{new_prefix}"  # type: ignore[return-value]
    if new_prefix > network.max_prefixlen:
        raise ArgumentError(
            f"insufficient address space to extend prefix of {network.prefixlen} by {newbits}"
        )
    if netnum < 0 or netnum >= 1 << newbits:
        raise ArgumentError(f"prefix extension of {newbits} does not accommodate a subnet numbered {netnum}")
    base = int(network.network_address) | (netnum << (network.max_prefixlen - new_prefix))
    return type(network)((base, new_prefix))


@register("cidrhost", 2)
def cidrhost(prefix: Any, hostnum: Any) -> str:
    network = _network(prefix)
    number = want_int(hostnum, "hostnum")
    size = network.num_addresses
    if number < -size or number >= size:
        raise ArgumentError(f"prefix of {network.prefixlen} does not accommodate a host numbered {number}")
    if number < 0:
        number += size
    value = int(network.network_address) + number
    return str(type(network.network_address)(value))


@register("cidrnetmask", 1)
def cidrnetmask(prefix: Any) -> str:
    network = _network(prefix)
    if network.version != 4:
        raise ArgumentError("only IPv4 networks have a netmask")
    return str(network.netmask)


@register("cidrsubnet", 3)
def cidrsubnet(prefix: Any, newbits: Any, netnum: Any) -> str:
    return str(_subnet(_network(prefix), want_int(newbits, "newbits"), want_int(netnum, "netnum")))


@register("cidrsubnets", 1, None)
def cidrsubnets(prefix: Any, *newbits: Any) -> list[str]:
    network = _network(prefix)
    results: list[str] = []
    # Each subnet starts at the first address after the previous one, rounded up to its own size.
    next_address = int(network.network_address)
    end = int(network.broadcast_address)
    for position, bits in enumerate(newbits):
        extend = want_int(bits, f"argument {position + 2}")
        if extend < 1:
            raise ArgumentError(f"argument {position + 2}: must extend the prefix by at least one bit")
        new_prefix = network.prefixlen + extend
        if new_prefix > network.max_prefixlen:
            raise ArgumentError(
                f"argument {position + 2}: would extend prefix to {new_prefix} bits, which is too long "
                f"for an IPv{network.version} address"
            )
        size = 1 << (network.max_prefixlen - new_prefix)
        start = -(-next_address // size) * size
        if start + size - 1 > end:
            raise ArgumentError(
                f"argument {position + 2}: not enough remaining address space for a subnet with "
                f"a prefix of {new_prefix} bits after {results[-1] if results else network}"
            )
        results.append(str(type(network)((start, new_prefix))))
        next_address = start + size
    return results
