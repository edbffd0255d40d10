"""Images served back: GET /v2/pet/{petId}/images/{imageId} to anyone, in the stored media type,
never sniffed, immutable; and the URL an upload adds to its pet (PUBLIC_BASE_URL, else the
request's own Host, checked)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from petstore_gateway.settings import GatewaySettings

from ..backend import Backend
from ..conftest import STATIC_KEY, Client, serve_gateway
from ..images import GIF
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}


def image_form(data: bytes = GIF, content_type: str = "image/gif") -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", data, filename="rex.gif", content_type=content_type)
    return form


async def upload(client: Client, pet_id: int = 8, **headers: str) -> aiohttp.ClientResponse:
    return await client.post(f"/v2/pet/{pet_id}/uploadImage", data=image_form(), headers={**KEY, **headers})


async def uploaded(client: Client, pet_id: int = 8) -> str:
    """The id of a new image of the pet (from the upload's answer)."""
    response = await upload(client, pet_id)
    assert response.status == 200, await response.text()
    shown = re.search(r"image ([0-9a-f]{32}) stored", (await response.json())["message"])
    assert shown is not None
    return shown[1]


@pytest.fixture
async def pet(backend: Backend) -> Backend:
    await backend.add_pet(8, "Pic")
    return backend


async def test_an_uploaded_image_is_served_to_anyone_as_stored(client: Client, pet: Backend) -> None:
    image_id = await uploaded(client)

    response = await client.get(f"/v2/pet/8/images/{image_id}")  # no key

    assert response.status == 200
    assert await response.read() == GIF
    assert response.headers["Content-Type"] == "image/gif"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["ETag"] == f'"{image_id}"'
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"


async def test_an_image_is_served_whatever_accept_says(client: Client, pet: Backend) -> None:
    image_id = await uploaded(client)

    for accept in ("image/png", "application/xml", "text/html"):
        response = await client.get(f"/v2/pet/8/images/{image_id}", headers={"Accept": accept})
        assert (response.status, response.headers["Content-Type"]) == (200, "image/gif"), accept


async def test_if_none_match_with_the_etag_is_304(client: Client, pet: Backend) -> None:
    image_id = await uploaded(client)
    etag = (await client.get(f"/v2/pet/8/images/{image_id}")).headers["ETag"]

    again = await client.get(f"/v2/pet/8/images/{image_id}", headers={"If-None-Match": etag})
    other = await client.get(f"/v2/pet/8/images/{image_id}", headers={"If-None-Match": '"something-else"'})

    assert (again.status, await again.read(), again.headers["ETag"]) == (304, b"", etag)
    assert again.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert other.status == 200


@pytest.mark.parametrize("wire", list(Wire))
async def test_absent_and_malformed_images(client: Client, pet: Backend, wire: Wire) -> None:
    image_id = await uploaded(client)
    await pet.add_pet(9, "Other")
    headers = {"Accept": wire.value}

    elsewhere = await client.get(f"/v2/pet/9/images/{image_id}", headers=headers)
    absent = await client.get(f"/v2/pet/8/images/{2:032x}", headers=headers)
    malformed = await client.get("/v2/pet/8/images/..%2F..%2Fetc", headers=headers)
    bad_pet = await client.get(f"/v2/pet/0/images/{image_id}", headers=headers)

    assert await error_of(wire, elsewhere) == (404, f"pet 9 has no image {image_id}")
    assert await error_of(wire, absent) == (404, f"pet 8 has no image {2:032x}")
    assert await error_of(wire, malformed) == (
        400,
        "Invalid ID supplied: imageId must be 32 lowercase hexadecimal digits",
    )
    assert (await error_of(wire, bad_pet))[0] == 400


async def test_the_pet_read_after_an_upload_names_the_image(client: Client, pet: Backend) -> None:
    before = await client.get("/v2/pet/8")
    assert (await before.json())["photoUrls"] == []

    image_id = await uploaded(client)
    after = await client.get("/v2/pet/8")

    url = f"http://{client.host}:{client.port}/v2/pet/8/images/{image_id}"
    assert (await after.json())["photoUrls"] == [url]
    assert after.headers["ETag"] != before.headers["ETag"]


async def test_a_pet_with_all_its_images_refuses_another_with_409(client: Client, pet: Backend) -> None:
    for _ in range(16):
        await uploaded(client)

    response = await upload(client)

    assert await error_of(Wire.JSON, response) == (409, "pet 8 has 16 images already: at most 16 are kept")


@pytest.mark.parametrize(
    "host",
    ["evil.example/path", "user@evil.example", "evil.example:port", "a b", "-leading.example", "x" * 256],
)
async def test_a_host_header_that_is_not_a_host_is_400_and_nothing_is_stored(
    client: Client, pet: Backend, host: str
) -> None:
    response = await upload(client, Host=host)

    assert await error_of(Wire.JSON, response) == (
        400,
        "the Host header must be a host name or address with an optional port",
    )
    assert await pet.stack.pet.store.list_images(8) == []


@pytest.mark.parametrize("host", ["shop.example", "shop.example:8443", "10.0.0.7:8080", "[::1]:8080"])
async def test_a_plain_host_header_names_the_image(client: Client, pet: Backend, host: str) -> None:
    response = await upload(client, Host=host)

    assert response.status == 200
    (url,) = (await pet.pet(8)).photo_urls
    assert url.startswith(f"http://{host}/v2/pet/8/images/")


@pytest.fixture
async def public_client(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    configured = dataclasses.replace(settings, public_base_url="https://shop.example/petstore")
    async for served in serve_gateway(configured, backend.clients()):
        yield served


async def test_public_base_url_names_the_image_whatever_the_host(public_client: Client, pet: Backend) -> None:
    response = await upload(public_client, Host="evil.example")

    (expected,) = (await pet.pet(8)).photo_urls
    assert expected.startswith("https://shop.example/petstore/v2/pet/8/images/")
    assert (await response.json())["message"].endswith(f", at {expected}")
