"""client_address: X-Forwarded-For is believed only from trusted proxies, read from the right;
then through the gateway, over raw sockets, as a client trying to pick its bucket would."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from petstore_gateway.client_address import (
    MAX_FORWARDED_HOPS,
    Network,
    client_address,
    forwarded_for,
    parse_networks,
)
from petstore_gateway.settings import GatewaySettings

from .backend import Backend
from .conftest import Client, serve_gateway

PROXIES = parse_networks(["10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "trusted", "expected"),
    [
        # No trusted proxies configured: the header is ignored.
        ("203.0.113.9", "198.51.100.1", (), "203.0.113.9"),
        # A peer that is not a trusted proxy cannot claim another address.
        ("203.0.113.9", "198.51.100.1", PROXIES, "203.0.113.9"),
        # Through the ingress: the client it served.
        ("10.1.2.3", "198.51.100.1", PROXIES, "198.51.100.1"),
        # Two trusted hops: skip both from the right.
        ("10.1.2.3", "198.51.100.1, 10.9.9.9", PROXIES, "198.51.100.1"),
        # A forged left part does not help: the right-most untrusted hop counts.
        ("10.1.2.3", "1.2.3.4, 198.51.100.1", PROXIES, "198.51.100.1"),
        ("fd00::1", "2001:db8::7", PROXIES, "2001:db8::7"),
        ("fd00::1", "2001:DB8:0::7", PROXIES, "2001:db8::7"),  # one spelling per client
        # A spoofed header through one trusted proxy: the address the proxy appended.
        ("10.1.2.3", "198.51.100.66, 203.0.113.9", PROXIES, "203.0.113.9"),
        ("10.1.2.3", "10.0.0.1, 203.0.113.9", PROXIES, "203.0.113.9"),  # claiming to be a proxy
        # Every address trusted: the leftmost.
        ("10.1.2.3", "10.4.4.4", PROXIES, "10.4.4.4"),
        ("10.1.2.3", "10.5.5.5, 10.4.4.4", PROXIES, "10.5.5.5"),
        # A value that is no address ends the walk: the last address believed.
        ("10.1.2.3", "not-an-ip", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "198.51.100.1, unknown", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "198.51.100.1, garbage, 10.4.4.4", PROXIES, "10.4.4.4"),
        ("10.1.2.3", "198.51.100.1,,", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "1.2.3.4:99999", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "[2001:db8::1", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "2001:db8::1:80:x", PROXIES, "10.1.2.3"),
        # Ports are dropped; IPv6 with and without brackets; IPv4-mapped IPv6 is IPv4.
        ("10.1.2.3", "198.51.100.1:4711", PROXIES, "198.51.100.1"),
        ("10.1.2.3", "[2001:db8::7]:4711", PROXIES, "2001:db8::7"),
        ("10.1.2.3", "[2001:db8::7]", PROXIES, "2001:db8::7"),
        ("10.1.2.3", "::ffff:198.51.100.1", PROXIES, "198.51.100.1"),
        ("::ffff:10.1.2.3", "198.51.100.1", PROXIES, "198.51.100.1"),  # a dual-stack listener's peer
        ("10.1.2.3", "[::ffff:10.9.9.9]:80, 198.51.100.1:1", PROXIES, "198.51.100.1"),
        # No header, or no peer.
        ("10.1.2.3", None, PROXIES, "10.1.2.3"),
        ("10.1.2.3", "", PROXIES, "10.1.2.3"),
        (None, "198.51.100.1", PROXIES, ""),
        # Untrusted peers, however they spell the header.
        ("203.0.113.9", "10.0.0.1", PROXIES, "203.0.113.9"),
        ("2001:db8::9", "fd00::1, 10.0.0.1", PROXIES, "2001:db8::9"),
    ],
)
def test_client_address(
    peer: str | None, forwarded_for: str | None, trusted: tuple[Network, ...], expected: str
) -> None:
    assert client_address(peer, forwarded_for, trusted) == expected


def test_the_walk_stops_after_a_bounded_number_of_hops() -> None:
    """More trusted hops than any real path: the walk ends at the bound, never reaching the
    address a client wrote at the far left, and never splitting the rest of the header."""
    proxies = [f"10.0.0.{n}" for n in range(1, MAX_FORWARDED_HOPS + 5)]
    chain = ", ".join(["198.51.100.66", *proxies])
    assert client_address("10.1.2.3", chain, PROXIES) == proxies[-MAX_FORWARDED_HOPS]
    huge = ",".join(["198.51.100.66"] * 4000 + proxies)  # what fits in the head limits
    assert client_address("10.1.2.3", huge, PROXIES) == proxies[-MAX_FORWARDED_HOPS]


def test_every_field_line_counts_in_order() -> None:
    assert forwarded_for(["198.51.100.66", "203.0.113.9"]) == "198.51.100.66,203.0.113.9"
    assert (
        client_address("10.1.2.3", forwarded_for(["198.51.100.66", "203.0.113.9"]), PROXIES) == "203.0.113.9"
    )


def test_parse_networks_names_the_bad_entry() -> None:
    assert [str(n) for n in parse_networks(["10.0.0.1", " 192.168.0.0/16 "])] == [
        "10.0.0.1/32",
        "192.168.0.0/16",
    ]
    with pytest.raises(ValueError, match="'nope'"):
        parse_networks(["nope"])


# ---------------------------------------------------------------------------------------
# Through the gateway, over raw sockets: the per-address rate limit shows whose bucket a
# request spends (burst 2, then 429).


@pytest.fixture
def burst_of_two(settings: GatewaySettings) -> GatewaySettings:
    return replace(settings, rate_limit_per_second=1, rate_limit_burst=2)


async def status_of(client: Client, *header_lines: str) -> int:
    """The status of GET /v2/pet/abc (400 when admitted) sent with exactly these header lines."""
    assert client.server.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
    try:
        head = "".join(f"{line}\r\n" for line in ("Host: test", *header_lines))
        writer.write(f"GET /v2/pet/abc HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 5)
    finally:
        writer.close()
    return int(status_line.split()[1])


async def test_a_spoofed_header_straight_to_the_gateway_is_ignored(
    burst_of_two: GatewaySettings, backend: Backend
) -> None:
    """The peer (127.0.0.1) is no trusted proxy: every header names a fresh address, and all of
    them spend the peer's one bucket."""
    untrusted = replace(burst_of_two, trusted_proxies=parse_networks(["10.0.0.0/8"]))
    async for client in serve_gateway(untrusted, backend.clients()):
        spoofs = ["198.51.100.1", "198.51.100.2", "10.0.0.1, 198.51.100.3", "[2001:db8::1]:80"]
        statuses = [await status_of(client, f"X-Forwarded-For: {spoof}") for spoof in spoofs]
        assert statuses == [400, 400, 429, 429]


async def test_a_second_header_line_does_not_hide_the_address_the_proxy_appended(
    burst_of_two: GatewaySettings, backend: Backend
) -> None:
    """A proxy that adds its own X-Forwarded-For line after the client's: the first line alone
    would be the client's choice of bucket."""
    behind_proxy = replace(burst_of_two, trusted_proxies=parse_networks(["127.0.0.1"]))
    async for client in serve_gateway(behind_proxy, backend.clients()):
        appended = "X-Forwarded-For: 198.51.100.1"
        assert [await status_of(client, appended) for _ in range(2)] == [400, 400]
        for spoof in ("203.0.113.50", "203.0.113.51, 127.0.0.1", "garbage"):
            assert await status_of(client, f"X-Forwarded-For: {spoof}", appended) == 429
        assert (
            await status_of(client, "X-Forwarded-For: 198.51.100.1", "X-Forwarded-For: 198.51.100.2") == 400
        )
