"""A login's source: a keyed digest of the client address the gateway sent, never the address.

IPv6 clients usually hold a whole /64 (and pick new addresses in it at will), so a /64 is one
source; an IPv4-mapped IPv6 address is its IPv4 address. No address, or one that does not
parse, is the UNKNOWN source (an older gateway sends none).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

UNKNOWN = "unknown"
IPV6_SOURCE_PREFIX = 64


def normalized(address: str) -> str | None:
    """The address as one source names it (IPv6: its /64), or None when it is no address."""
    try:
        ip = ipaddress.ip_address(address.strip().split("%", 1)[0])  # a zone id is no part of it
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_SOURCE_PREFIX), strict=False))
    return str(ip)


class ClientSources:
    """Turns addresses into source digests with a key of the service's (HMAC-SHA256, so the
    stored digests cannot be reversed by hashing the small IPv4 space)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def source_of(self, address: str) -> str:
        named = normalized(address) if address else None
        if named is None:
            return UNKNOWN
        return hmac.new(self._key, named.encode(), hashlib.sha256).hexdigest()[:32]
