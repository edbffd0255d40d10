"""Where webhooks may go: https, a host resolving to public addresses only (SSRF), each class
of private address refused through a resolver that answers as an attacker's DNS would."""

from __future__ import annotations

import asyncio
import ipaddress
import time

import pytest

from petstore_webhook.targets import UnsafeTarget, address_allowed, check_target

from .conftest import PUBLIC_ADDRESS, PUBLIC_HOST, FakeResolver

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)

REFUSED_ADDRESSES = [
    pytest.param("10.1.2.3", id="10/8"),
    pytest.param("172.16.0.1", id="172.16/12"),
    pytest.param("172.31.255.254", id="172.16/12 top"),
    pytest.param("192.168.1.1", id="192.168/16"),
    pytest.param("127.0.0.1", id="127/8"),
    pytest.param("127.255.0.9", id="127/8 far"),
    pytest.param("169.254.169.254", id="cloud metadata"),
    pytest.param("169.254.1.1", id="169.254/16"),
    pytest.param("0.0.0.0", id="unspecified v4"),
    pytest.param("100.64.0.1", id="100.64/10 shared"),
    pytest.param("224.0.0.251", id="multicast v4"),
    pytest.param("240.0.0.1", id="reserved v4"),
    pytest.param("255.255.255.255", id="broadcast"),
    pytest.param("::1", id="::1"),
    pytest.param("::", id="unspecified v6"),
    pytest.param("fe80::1", id="fe80::/10"),
    pytest.param("fe80::1%eth0", id="fe80::/10 scoped"),
    pytest.param("fc00::1", id="fc00::/7"),
    pytest.param("fd12:3456::1", id="fd00::/8"),
    pytest.param("ff02::1", id="multicast v6"),
    pytest.param("::ffff:127.0.0.1", id="v4-mapped loopback"),
    pytest.param("::ffff:169.254.169.254", id="v4-mapped metadata"),
    pytest.param("::ffff:10.0.0.1", id="v4-mapped 10/8"),
    pytest.param("2002:7f00:1::1", id="6to4 of loopback"),
    pytest.param("64:ff9b::a9fe:a9fe", id="NAT64 of metadata"),
    pytest.param("not-an-address", id="garbage"),
]


@pytest.mark.parametrize("address", REFUSED_ADDRESSES)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert address_allowed(address, ()) is False


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_allowed(address, ()) is True


def test_an_allowed_network_lets_its_addresses_through_and_no_others() -> None:
    assert address_allowed("127.0.0.1", LOOPBACK) is True
    assert address_allowed(ipaddress.ip_address("127.0.0.2"), LOOPBACK) is True
    assert address_allowed("::ffff:127.0.0.1", LOOPBACK) is True  # the same socket address
    assert address_allowed("10.0.0.1", LOOPBACK) is False
    assert address_allowed("::1", LOOPBACK) is False
    assert address_allowed("169.254.169.254", LOOPBACK) is False


async def test_a_public_https_url_passes_resolving_its_host_and_port(resolver: FakeResolver) -> None:
    await check_target(f"https://{PUBLIC_HOST}/hooks?x=1", (), resolve=resolver)
    await check_target(f"https://{PUBLIC_HOST}:8443/hooks", (), resolve=resolver)

    assert resolver.asked == [(PUBLIC_HOST, 443), (PUBLIC_HOST, 8443)]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"http://{PUBLIC_HOST}/", "must be https"),
        (f"HTTP://{PUBLIC_HOST}/", "must be https"),
        (f"ftp://{PUBLIC_HOST}/", "must be https"),
        (f"//{PUBLIC_HOST}/", "must be https"),
        ("hooks.example.com/in", "must be https"),
        ("https:///path", "must name a host"),
        ("https://", "must name a host"),
        (f"https://user:pw@{PUBLIC_HOST}/", "must not carry a user name or password"),
        (f"https://user@{PUBLIC_HOST}/", "must not carry a user name or password"),
        (f"https://{PUBLIC_HOST}:99999/", "must be a valid URL"),
        (f"https://{PUBLIC_HOST}:port/", "must be a valid URL"),
        (f"https://{PUBLIC_HOST}:0/", "must be a valid URL"),
        ("https://[::1/", "must be a valid URL"),
        ("https://nowhere.invalid/", "host nowhere.invalid does not resolve"),
        (f"https://{PUBLIC_HOST}/in\r\nX-Injected: 1", "must not contain spaces or control characters"),
        (f"https://{PUBLIC_HOST}/\tin", "must not contain spaces or control characters"),
        (f"https://{PUBLIC_HOST}/a b", "must not contain spaces or control characters"),
        (f"https://{PUBLIC_HOST}/\x00", "must not contain spaces or control characters"),
    ],
)
async def test_unusable_urls_are_refused_before_any_connection(
    resolver: FakeResolver, url: str, message: str
) -> None:
    with pytest.raises(UnsafeTarget) as caught:
        await check_target(url, (), resolve=resolver)
    assert str(caught.value) == message


@pytest.mark.parametrize("address", REFUSED_ADDRESSES[:-1])
async def test_a_host_resolving_to_a_private_address_is_refused(address: str) -> None:
    resolver = FakeResolver({"evil.example.com": [address]})

    with pytest.raises(UnsafeTarget) as caught:
        await check_target("https://evil.example.com/hook", (), resolve=resolver)

    assert str(caught.value) == (
        f"resolves to a private, loopback, link-local or reserved address ({address}): "
        "only public addresses are allowed"
    )


async def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    # The connection could pick any of them.
    resolver = FakeResolver({"mixed.example.com": [PUBLIC_ADDRESS, "2606:4700::1", "10.0.0.7"]})

    with pytest.raises(UnsafeTarget, match=r"\(10\.0\.0\.7\)"):
        await check_target("https://mixed.example.com/", (), resolve=resolver)


@pytest.mark.parametrize("url", ["https://127.0.0.1/", "https://[::1]:8443/", "https://[::ffff:127.0.0.1]/"])
async def test_address_literals_are_judged_too(url: str) -> None:
    # The system resolver answers a literal with itself.
    with pytest.raises(UnsafeTarget, match="private, loopback"):
        await check_target(url, ())


async def test_an_allowed_network_admits_a_loopback_receiver(resolver: FakeResolver) -> None:
    resolver.table["localhost"] = ["127.0.0.1"]

    await check_target("https://localhost:8443/in", LOOPBACK, resolve=resolver)
    await check_target("https://127.0.0.1:8443/in", LOOPBACK)  # the real resolver: a literal


async def test_the_system_resolver_refuses_localhost() -> None:
    with pytest.raises(UnsafeTarget, match="private, loopback"):
        await check_target("https://localhost/", ())


async def test_a_host_that_never_resolves_is_refused_in_time() -> None:
    async def hung(host: str, port: int) -> list[str]:
        await asyncio.sleep(3600)
        return [PUBLIC_ADDRESS]

    started = time.monotonic()
    with pytest.raises(UnsafeTarget, match=r"host slow\.example\.com does not resolve"):
        await check_target("https://slow.example.com/", (), resolve=hung, timeout_seconds=0.1)
    assert time.monotonic() - started < 2
