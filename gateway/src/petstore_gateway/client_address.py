"""The address a request really comes from, for per-client limits.

Behind an ingress or load balancer every request arrives from the proxy's address, which would
put all clients into one rate-limit bucket. X-Forwarded-For says who the proxy served, but any
client can send that header too. The rule:

- From a peer that is not a trusted proxy (TRUSTED_PROXIES), the header is ignored entirely:
  the peer is the client.
- From a trusted proxy, the header's addresses are walked from the right (the nearest hop
  first), skipping those inside TRUSTED_PROXIES: the first untrusted one is the client. A
  client that sends its own X-Forwarded-For through the proxy cannot choose its bucket: the
  proxy appends the address it was reached from, and the walk stops there.
- When every address walked is trusted, the leftmost of them is the client. A value that is
  no address ends the walk too: what lies left of it cannot be believed, so the last address
  believed (the trusted hop that wrote it, or the peer) is the client.
- At most MAX_FORWARDED_HOPS addresses are walked (the header's size is bounded by the head
  limits already; this bounds the work per request).

An address may carry a port (`192.0.2.1:4711`, `[2001:db8::1]:4711`), which is dropped;
addresses are returned in their canonical form, IPv4-mapped IPv6 ones as IPv4, so one client
is one bucket however a proxy spells it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDED_FOR_HEADER = "X-Forwarded-For"
MAX_FORWARDED_HOPS = 16
"""Addresses of X-Forwarded-For walked at most: more proxies than any real path has."""


def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """CIDRs or single addresses; ValueError names the one that is neither."""
    networks: list[Network] = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return tuple(networks)


def parse_address(value: str) -> Address | None:
    """An address as a proxy writes it, with or without a port; None for anything else."""
    value = value.strip()
    if value.startswith("["):  # [v6] or [v6]:port
        value, bracket, port = value[1:].partition("]")
        if not bracket or (port and not _is_port(port)):
            return None
    elif value.count(":") == 1:  # v4:port (a bare v6 has at least two colons)
        value, colon, port = value.partition(":")
        if not _is_port(colon + port):
            return None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


MAX_PORT = 65535


def _is_port(text: str) -> bool:
    """`:` and a port number (ASCII digits, at most 65535)."""
    digits = text.removeprefix(":")
    return (
        text.startswith(":")
        and digits.isascii()
        and digits.isdigit()
        and len(digits) <= len(str(MAX_PORT))
        and int(digits) <= MAX_PORT
    )


def is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    parsed = parse_address(address)
    return parsed is not None and _inside(parsed, trusted)


def _inside(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address in network for network in trusted)


def forwarded_for(values: Iterable[str]) -> str:
    """Every X-Forwarded-For field line of a request as one list, in order: a proxy may add its
    own line instead of appending to the client's, and the first line alone would then be the
    client's word."""
    return ",".join(values)


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The nearest untrusted address on the path: the peer itself unless it is a trusted proxy."""
    peer = peer or ""
    if not trusted or not forwarded_for or not is_trusted(peer, trusted):
        return peer
    believed = peer
    # rsplit with a bound: the part left of the walked hops is never split up at all.
    hops = forwarded_for.rsplit(",", MAX_FORWARDED_HOPS)[-MAX_FORWARDED_HOPS:]
    for hop in reversed(hops):
        address = parse_address(hop)
        if address is None:
            return believed
        if not _inside(address, trusted):
            return str(address)
        believed = str(address)
    return believed
