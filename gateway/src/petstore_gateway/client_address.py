"""The address a request really comes from, for per-client limits.

Behind an ingress or load balancer every request arrives from the proxy's address, which would
put all clients into one rate-limit bucket. X-Forwarded-For says who the proxy served, but any
client can send that header too: it is believed only when the peer is a configured trusted
proxy (TRUSTED_PROXIES), and then read from the right, skipping trusted hops, so a client
cannot choose its own identity by prepending addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

FORWARDED_FOR_HEADER = "X-Forwarded-For"


def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """CIDRs or single addresses; ValueError names the one that is neither."""
    networks: list[Network] = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return tuple(networks)


def is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The nearest untrusted address on the path: the peer itself unless it is a trusted proxy."""
    peer = peer or ""
    if not trusted or not forwarded_for or not is_trusted(peer, trusted):
        return peer
    for hop in reversed(forwarded_for.split(",")):
        address = hop.strip()
        try:
            ipaddress.ip_address(address)
        except ValueError:
            return peer  # a malformed chain is not believed at all
        if not is_trusted(address, trusted):
            return address
    return peer
