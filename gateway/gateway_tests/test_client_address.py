"""client_address: X-Forwarded-For is believed only from trusted proxies, read from the right."""

from __future__ import annotations

import pytest

from petstore_gateway.client_address import Network, client_address, parse_networks

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
        # Malformed or only-trusted chains fall back to the peer.
        ("10.1.2.3", "not-an-ip", PROXIES, "10.1.2.3"),
        ("10.1.2.3", "10.4.4.4", PROXIES, "10.1.2.3"),
        ("10.1.2.3", None, PROXIES, "10.1.2.3"),
        (None, "198.51.100.1", PROXIES, ""),
    ],
)
def test_client_address(
    peer: str | None, forwarded_for: str | None, trusted: tuple[Network, ...], expected: str
) -> None:
    assert client_address(peer, forwarded_for, trusted) == expected


def test_parse_networks_names_the_bad_entry() -> None:
    assert [str(n) for n in parse_networks(["10.0.0.1", " 192.168.0.0/16 "])] == [
        "10.0.0.1/32",
        "192.168.0.0/16",
    ]
    with pytest.raises(ValueError, match="'nope'"):
        parse_networks(["nope"])
