from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from petstore_common.settings import SettingsError
from petstore_gateway.apidoc.swagger import build_swagger
from petstore_gateway.cors import (
    ALLOW_HEADERS,
    EXPOSE_HEADERS,
    allowed_origin,
    preflight_headers,
    response_headers,
)
from petstore_gateway.operations import API_PREFIX
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.settings import GatewaySettings

from .backend import SESSION_SECRET, Backend
from .conftest import STATIC_KEY, Client, api_of, serve_gateway

ORIGIN = "https://app.example.com"
EXPOSED = {
    "X-Request-ID",
    "ETag",
    "X-Next-Page-Token",
    "X-Rate-Limit",
    "X-Expires-After",
    "Retry-After",
    "Idempotent-Replayed",
}


def _preflight(method: str, origin: str = ORIGIN) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "api_key, content-type",
    }


def _listed(value: str) -> set[str]:
    return {item.strip() for item in value.split(",")}


@pytest.fixture
async def only_origin(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    """The gateway allowing one origin."""
    clients = backend.clients()
    async for served in serve_gateway(replace(settings, cors_allow_origins=(ORIGIN,)), clients):
        yield served


@pytest.fixture
async def cors_off(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    clients = backend.clients()
    async for served in serve_gateway(replace(settings, cors_allow_origins=()), clients):
        yield served


# ---------------------------------------------------------------------------------------
# Settings and the pure functions


def _settings(**env: str) -> GatewaySettings:
    return GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SESSION_SECRET, **env})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("*",)),
        ({"CORS_ALLOW_ORIGINS": ""}, ()),
        ({"CORS_ALLOW_ORIGINS": " "}, ()),
        ({"CORS_ALLOW_ORIGINS": "*"}, ("*",)),
        ({"CORS_ALLOW_ORIGINS": f"{ORIGIN}, http://localhost:3000"}, (ORIGIN, "http://localhost:3000")),
        ({"CORS_ALLOW_ORIGINS": f"{ORIGIN},*"}, ("*",)),
    ],
)
def test_allowed_origins_from_the_environment(env: dict[str, str], expected: tuple[str, ...]) -> None:
    assert _settings(**env).cors_allow_origins == expected


@pytest.mark.parametrize(
    "origin", ["app.example.com", "https://app.example.com/", "https://a.com/path", "ftp://x"]
)
def test_an_origin_that_is_not_one_refuses_to_start(origin: str) -> None:
    with pytest.raises(SettingsError, match="CORS_ALLOW_ORIGINS"):
        _settings(CORS_ALLOW_ORIGINS=origin)


BROWSER_READS_WITHOUT_EXPOSING = {"Cache-Control", "X-Content-Type-Options"}
"""A CORS-safelisted response header (Fetch standard), and one the browser itself obeys."""


def _declared_headers(document: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(request header parameters, response headers) the description declares anywhere."""
    requests: set[str] = set()
    responses: set[str] = set()
    for item in document["paths"].values():
        for operation in item.values():
            requests |= {p["name"] for p in operation.get("parameters", ()) if p["in"] == "header"}
            for response in operation["responses"].values():
                responses |= set(response.get("headers", {}))
    return requests, responses


def test_cors_lets_a_browser_send_and_read_every_header_the_api_declares() -> None:
    """A browser app on another origin can use every header the API takes and gives: the
    description is the source, so a header added to an operation and not here fails."""
    requests, responses = _declared_headers(build_swagger(OPERATIONS, max_body_bytes=1024))
    assert {"If-Match", "Idempotency-Key"} <= requests  # the test reads something
    assert {"ETag", "X-Next-Page-Token", "Retry-After", "Idempotent-Replayed"} <= responses
    assert requests <= set(ALLOW_HEADERS)
    assert responses - BROWSER_READS_WITHOUT_EXPOSING <= set(EXPOSE_HEADERS)
    # The credentials travel as headers (securityDefinitions), and If-None-Match is described
    # in the 304 answers rather than as a parameter.
    assert {"api_key", "Authorization", "If-None-Match"} <= set(ALLOW_HEADERS)


def test_allowed_origin() -> None:
    assert allowed_origin(ORIGIN, ("*",)) == "*"
    assert allowed_origin(ORIGIN, (ORIGIN,)) == ORIGIN
    assert allowed_origin("https://evil.example", (ORIGIN,)) is None
    assert allowed_origin(None, ("*",)) is None
    assert allowed_origin(ORIGIN, ()) is None


def test_a_list_of_origins_varies_by_origin_even_when_it_refuses() -> None:
    assert response_headers("https://evil.example", (ORIGIN,)) == {"Vary": "Origin"}
    assert response_headers(None, ("*",)) == {}
    assert preflight_headers(None, (), ["GET"]) == {"Allow": "GET, OPTIONS"}


# ---------------------------------------------------------------------------------------
# Preflights


async def test_every_api_route_answers_a_preflight(client: Client) -> None:
    resources = list(api_of(client).router.resources())
    assert len(resources) >= 15
    assert all(resource.canonical.startswith(API_PREFIX) for resource in resources)
    for resource in resources:
        methods = {route.method for route in resource}
        path = resource.canonical.format(
            petId="1", orderId="1", username="ann", asset="swagger-ui.css", imageId="0" * 32, webhookId="1"
        )
        for method in methods - {"HEAD"}:
            response = await client.options(path, headers=_preflight(method))
            assert response.status == 204, (path, method)
            assert await response.read() == b""
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert method in _listed(response.headers["Access-Control-Allow-Methods"])
            assert _listed(response.headers["Access-Control-Allow-Methods"]) == _listed(
                response.headers["Allow"]
            )
            assert {
                "api_key",
                "Authorization",
                "Content-Type",
                "X-Request-ID",
                "If-Match",
                "If-None-Match",
                "Idempotency-Key",
            } <= _listed(response.headers["Access-Control-Allow-Headers"])
            assert int(response.headers["Access-Control-Max-Age"]) > 0
            assert response.headers["X-Request-ID"]


async def test_a_preflight_needs_no_api_key_and_ignores_accept(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.options("/v2/pet/1", headers={**_preflight("DELETE"), "Accept": "text/html"})
    assert response.status == 204
    assert _listed(response.headers["Allow"]) == {"GET", "HEAD", "POST", "DELETE", "OPTIONS"}
    assert 1 in await backend.pet_ids()


async def test_a_preflight_for_no_route_is_404(client: Client) -> None:
    response = await client.options("/v2/nothing", headers=_preflight("GET"))
    assert response.status == 404
    assert response.headers["Access-Control-Allow-Origin"] == "*"


async def test_options_outside_v2_is_untouched(client: Client) -> None:
    response = await client.options("/livez", headers=_preflight("GET"))
    assert response.status == 405


# ---------------------------------------------------------------------------------------
# Simple and actual requests


async def test_a_cross_origin_answer_names_the_headers_a_script_may_read(
    client: Client, backend: Backend
) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.get("/v2/pet/1", headers={"Origin": ORIGIN})
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert _listed(response.headers["Access-Control-Expose-Headers"]) == EXPOSED
    assert response.headers["Vary"] == "Accept"  # any origin: the answer never varies by it


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/v2/pet/99", {}, 404),
        ("GET", "/v2/pet/abc", {}, 400),
        ("DELETE", "/v2/pet/1", {}, 401),
        ("GET", "/v2/pet/1", {"Accept": "text/html"}, 406),
        ("PATCH", "/v2/pet/1", {"api_key": STATIC_KEY}, 405),
        ("GET", "/v2/nowhere", {}, 404),
    ],
)
async def test_errors_carry_the_cors_headers_too(
    client: Client, method: str, path: str, headers: dict[str, str], status: int
) -> None:
    response = await client.request(method, path, headers={"Origin": ORIGIN, **headers})
    assert response.status == status
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "X-Request-ID" in _listed(response.headers["Access-Control-Expose-Headers"])


async def test_a_redirect_carries_them(client: Client) -> None:
    response = await client.get("/v2/docs/", headers={"Origin": ORIGIN}, allow_redirects=False)
    assert response.status == 302
    assert response.headers["Access-Control-Allow-Origin"] == "*"


async def test_without_an_origin_there_is_no_cors(client: Client) -> None:
    response = await client.get("/v2/store/inventory")
    assert response.status == 200
    assert "Access-Control-Allow-Origin" not in response.headers


async def test_a_private_answer_to_a_listed_origin_varies_on_origin_accept_and_credentials(
    only_origin: Client,
) -> None:
    response = await only_origin.get("/v2/store/order/4", headers={"Origin": ORIGIN})
    assert response.status == 401
    assert response.headers["Vary"] == "Origin, Accept, api_key, Authorization"


async def test_a_listed_origin_is_echoed_and_others_refused(only_origin: Client) -> None:
    allowed = await only_origin.get("/v2/store/inventory", headers={"Origin": ORIGIN})
    assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert allowed.headers["Vary"] == "Origin, Accept"
    other = await only_origin.get("/v2/store/inventory", headers={"Origin": "https://evil.example"})
    assert other.status == 200  # the browser, not the server, withholds the answer
    assert "Access-Control-Allow-Origin" not in other.headers
    assert other.headers["Vary"] == "Origin, Accept"
    preflight = await only_origin.options("/v2/pet", headers=_preflight("POST", "https://evil.example"))
    assert preflight.status == 204
    assert "Access-Control-Allow-Methods" not in preflight.headers
    granted = await only_origin.options("/v2/pet", headers=_preflight("POST"))
    assert granted.headers["Access-Control-Allow-Origin"] == ORIGIN


async def test_cors_can_be_turned_off(cors_off: Client) -> None:
    response = await cors_off.get("/v2/store/inventory", headers={"Origin": ORIGIN})
    assert response.status == 200
    assert not [name for name in response.headers if name.startswith("Access-Control-")]
    preflight = await cors_off.options("/v2/pet", headers=_preflight("POST"))
    assert preflight.status == 204  # OPTIONS still says what the route allows
    assert "Access-Control-Allow-Origin" not in preflight.headers
    assert "POST" in _listed(preflight.headers["Allow"])
