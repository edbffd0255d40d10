"""Where the service may send a webhook: an https URL whose host resolves to public addresses
only, so an endpoint cannot turn the service against the network it runs in (SSRF): no
private, loopback, link-local (169.254.169.254, the cloud metadata service), multicast,
reserved, shared (100.64/10) or unspecified address, IPv4 or IPv6, nor an IPv6 address that
carries such an IPv4 one (::ffff:127.0.0.1, 6to4, NAT64), unless the operator allows its
network (WEBHOOK_ALLOWED_NETWORKS).

`check_target` runs when an endpoint is registered; `address_allowed` again at every
connection (the delivery's resolver), since a name may resolve elsewhere by then (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]
"""(host, port) -> the addresses the host resolves to, as strings."""

SCHEME = "https"
RESOLVE_TIMEOUT_SECONDS = 3.0
"""How long registering an endpoint waits for its host to resolve (a hung DNS server would hold
the call until its deadline otherwise): under the gateway's default deadline (5 s), so the
client hears "does not resolve" rather than a timeout."""
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix: its last 32 bits are the IPv4 address reached (RFC 6052)."""


class UnsafeTarget(ValueError):
    """A URL the service will not send to; the message is client-safe and names no field
    (`must be https`): the caller names it."""


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (A and AAAA)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_target(
    url: str,
    allowed_networks: Sequence[IPNetwork],
    *,
    resolve: Resolve = resolve_host,
    timeout_seconds: float = RESOLVE_TIMEOUT_SECONDS,
) -> None:
    """Returns when `url` may be delivered to; UnsafeTarget saying why not."""
    # urlsplit drops tabs and line breaks silently: the URL kept would not be the one checked.
    if any(character.isspace() or not character.isprintable() for character in url):
        raise UnsafeTarget("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = 443 if parts.port is None else parts.port
    except ValueError:
        raise UnsafeTarget("must be a valid URL") from None
    if port == 0:
        raise UnsafeTarget("must be a valid URL")
    if parts.scheme.lower() != SCHEME:
        raise UnsafeTarget("must be https")
    if parts.username is not None or parts.password is not None:
        raise UnsafeTarget("must not carry a user name or password")
    host = parts.hostname
    if not host:
        raise UnsafeTarget("must name a host")
    try:
        async with asyncio.timeout(timeout_seconds):
            addresses = await resolve(host, port)
    except (OSError, UnicodeError):  # TimeoutError is an OSError
        addresses = []
    if not addresses:
        raise UnsafeTarget(f"host {host} does not resolve")
    for address in addresses:
        if not address_allowed(address, allowed_networks):
            raise UnsafeTarget(
                f"resolves to a private, loopback, link-local or reserved address ({address}): "
                "only public addresses are allowed"
            )


def address_allowed(address: str | IPAddress, allowed_networks: Sequence[IPNetwork]) -> bool:
    """Whether the service may connect to `address`: a public one, or one inside an allowed
    network. An IPv6 address carrying an IPv4 one is judged by that IPv4 address too."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    except ValueError:
        return False  # not an address at all
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    # An IPv4-mapped address is the IPv4 one (the socket connects there); 6to4 and NAT64 ones
    # are judged both as themselves and by the IPv4 address they lead to.
    candidates: list[IPAddress] = [mapped] if mapped is not None else [ip, *_embedded_ipv4(ip)]
    if any(candidate in network for candidate in candidates for network in allowed_networks):
        return True
    return all(_public(candidate) for candidate in candidates)


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    embedded = [ip.sixtofour]
    if ip in NAT64:
        embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF))
    return [candidate for candidate in embedded if candidate is not None]


def _public(ip: IPAddress) -> bool:
    # is_global alone lets multicast through (224.0.0.0/4 is "global"); 100.64/10 (shared,
    # carrier NAT) is neither private nor global: each property is asked.
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )
