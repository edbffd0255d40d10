"""The URL an upload stores in photoUrls behind a TLS proxy: PUBLIC_BASE_URL wins; else a
trusted proxy's X-Forwarded-Proto/-Host (or Forwarded) name it, with the default port dropped;
from any other peer those headers are ignored (public_url.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from petstore_gateway.client_address import Network, parse_networks
from petstore_gateway.settings import GatewaySettings

from ..backend import Backend
from ..conftest import Client, serve_gateway
from ..wire import Wire, error_of
from .test_pet_images import upload

PROXY = parse_networks(["127.0.0.1"])
"""The test client connects from 127.0.0.1: trusted, it is the TLS proxy."""
ELSEWHERE = parse_networks(["10.0.0.0/8"])
FORGED = {
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "evil.example",
    "Forwarded": 'for=192.0.2.1;proto=https;host="evil.example"',
}


@pytest.fixture
async def pet(backend: Backend) -> Backend:
    await backend.add_pet(8, "Pic")
    return backend


@pytest.fixture
async def behind_proxy(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(
        dataclasses.replace(settings, trusted_proxies=PROXY), backend.clients()
    ):
        yield served


async def stored_url(client: Client, pet: Backend, **headers: str) -> str:
    """The base of the URL the upload stored (before /v2/pet/8/images/...)."""
    response = await upload(client, 8, **headers)
    assert response.status == 200, await response.text()
    (url,) = (await pet.pet(8)).photo_urls
    base, separator, _ = url.partition("/v2/pet/8/images/")
    assert separator
    return base


@pytest.mark.parametrize("trusted", [(), ELSEWHERE])
async def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    settings: GatewaySettings, pet: Backend, trusted: tuple[Network, ...]
) -> None:
    configured = dataclasses.replace(settings, trusted_proxies=trusted)
    async for client in serve_gateway(configured, pet.clients()):
        assert await stored_url(client, pet, Host="shop.example:8080", **FORGED) == "http://shop.example:8080"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example"}, "https://shop.example"),
        ({"X-Forwarded-Proto": "HTTPS", "X-Forwarded-Host": "shop.example:443"}, "https://shop.example"),
        (
            {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example:8443"},
            "https://shop.example:8443",
        ),
        ({"X-Forwarded-Proto": "https", "X-Forwarded-Host": "[2001:db8::1]:443"}, "https://[2001:db8::1]"),
        ({"X-Forwarded-Proto": "http", "X-Forwarded-Host": "shop.example:443"}, "http://shop.example:443"),
        ({"X-Forwarded-Proto": "https"}, "https://gateway.internal"),  # the Host stays
        ({"X-Forwarded-Host": "shop.example:80"}, "http://shop.example"),  # the scheme stays
        # Of a list, the value the proxy wrote last, never one a client put before it.
        (
            {"X-Forwarded-Proto": "http, https", "X-Forwarded-Host": "evil.example, shop.example"},
            "https://shop.example",
        ),
        # Forwarded (RFC 7239), when no X-Forwarded-* says otherwise: its last element.
        ({"Forwarded": 'for=192.0.2.1;proto=https;host="shop.example:443"'}, "https://shop.example"),
        (
            {"Forwarded": "host=evil.example, for=192.0.2.1;proto=https;host=shop.example"},
            "https://shop.example",
        ),
        (
            {"Forwarded": "proto=https;host=evil.example", "X-Forwarded-Host": "shop.example"},
            "https://shop.example",
        ),
        ({}, "http://gateway.internal"),
    ],
)
async def test_a_trusted_proxy_names_the_scheme_and_host(
    behind_proxy: Client, pet: Backend, headers: dict[str, str], expected: str
) -> None:
    assert await stored_url(behind_proxy, pet, Host="gateway.internal", **headers) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [("shop.example:80", "http://shop.example"), ("shop.example:443", "http://shop.example:443")],
)
async def test_the_default_port_of_the_request_own_scheme_is_dropped(
    client: Client, pet: Backend, host: str, expected: str
) -> None:
    assert await stored_url(client, pet, Host=host) == expected


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"X-Forwarded-Proto": "javascript"}, "X-Forwarded-Proto (or Forwarded proto) must be http or https"),
        ({"Forwarded": "proto=ftp"}, "X-Forwarded-Proto (or Forwarded proto) must be http or https"),
        ({"X-Forwarded-Host": "evil.example/path"}, "X-Forwarded-Host must be a host name or address"),
        ({"X-Forwarded-Host": "user@evil.example"}, "X-Forwarded-Host must be a host name or address"),
        ({"X-Forwarded-Host": "a" * 300}, "X-Forwarded-Host must be a host name or address"),
        ({"Forwarded": 'host="evil.example:99x"'}, "Forwarded host must be a host name or address"),
    ],
)
async def test_a_bad_forwarded_value_from_the_proxy_is_a_400_and_stores_nothing(
    behind_proxy: Client, pet: Backend, headers: dict[str, str], message: str
) -> None:
    response = await upload(behind_proxy, 8, **headers)
    status, said = await error_of(Wire.JSON, response)
    assert status == 400
    assert said.startswith(message)
    assert await pet.stack.pet.store.list_images(8) == []


async def test_public_base_url_wins_over_a_trusted_proxy(settings: GatewaySettings, pet: Backend) -> None:
    configured = dataclasses.replace(
        settings, trusted_proxies=PROXY, public_base_url="https://shop.example/petstore"
    )
    async for client in serve_gateway(configured, pet.clients()):
        assert await stored_url(client, pet, **FORGED) == "https://shop.example/petstore"
