"""Images served back: GET /v2/pet/{petId}/images/{imageId} to anyone, in the stored media type,
never sniffed, immutable; and the URL an upload adds to its pet (PUBLIC_BASE_URL, else the
request's own Host, checked)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import aiohttp
import pytest

from petstore_gateway.clients import ServiceClients
from petstore_gateway.settings import GatewaySettings

from ..conftest import STATIC_KEY, Client, serve_gateway
from ..fakes import FakeBackend
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
GIF = b"GIF89a-the-fake-service-does-not-decode"
FIRST = f"{1:032x}"


def image_form(data: bytes = GIF, content_type: str = "image/gif") -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", data, filename="rex.gif", content_type=content_type)
    return form


async def upload(client: Client, pet_id: int = 8, **headers: str) -> aiohttp.ClientResponse:
    return await client.post(f"/v2/pet/{pet_id}/uploadImage", data=image_form(), headers={**KEY, **headers})


@pytest.fixture
def pet(backend: FakeBackend) -> FakeBackend:
    backend.pet.add(8, "Pic")
    return backend


async def test_an_uploaded_image_is_served_to_anyone_as_stored(client: Client, pet: FakeBackend) -> None:
    assert (await upload(client)).status == 200

    response = await client.get(f"/v2/pet/8/images/{FIRST}")  # no key

    assert response.status == 200
    assert await response.read() == GIF
    assert response.headers["Content-Type"] == "image/gif"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["ETag"] == f'"{FIRST}"'
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"


async def test_an_image_is_served_whatever_accept_says(client: Client, pet: FakeBackend) -> None:
    await upload(client)

    for accept in ("image/png", "application/xml", "text/html"):
        response = await client.get(f"/v2/pet/8/images/{FIRST}", headers={"Accept": accept})
        assert (response.status, response.headers["Content-Type"]) == (200, "image/gif"), accept


async def test_if_none_match_with_the_etag_is_304(client: Client, pet: FakeBackend) -> None:
    await upload(client)
    etag = (await client.get(f"/v2/pet/8/images/{FIRST}")).headers["ETag"]

    again = await client.get(f"/v2/pet/8/images/{FIRST}", headers={"If-None-Match": etag})
    other = await client.get(f"/v2/pet/8/images/{FIRST}", headers={"If-None-Match": '"something-else"'})

    assert (again.status, await again.read(), again.headers["ETag"]) == (304, b"", etag)
    assert again.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert other.status == 200


@pytest.mark.parametrize("wire", list(Wire))
async def test_absent_and_malformed_images(client: Client, pet: FakeBackend, wire: Wire) -> None:
    await upload(client)
    pet.pet.add(9, "Other")
    headers = {"Accept": wire.value}

    elsewhere = await client.get(f"/v2/pet/9/images/{FIRST}", headers=headers)
    absent = await client.get(f"/v2/pet/8/images/{2:032x}", headers=headers)
    malformed = await client.get("/v2/pet/8/images/..%2F..%2Fetc", headers=headers)
    bad_pet = await client.get(f"/v2/pet/0/images/{FIRST}", headers=headers)

    assert await error_of(wire, elsewhere) == (404, f"pet 9 has no image {FIRST}")
    assert await error_of(wire, absent) == (404, f"pet 8 has no image {2:032x}")
    assert await error_of(wire, malformed) == (
        400,
        "Invalid ID supplied: imageId must be 32 lowercase hexadecimal digits",
    )
    assert (await error_of(wire, bad_pet))[0] == 400


async def test_the_pet_read_after_an_upload_names_the_image(client: Client, pet: FakeBackend) -> None:
    before = await client.get("/v2/pet/8")
    assert (await before.json())["photoUrls"] == []

    await upload(client)
    after = await client.get("/v2/pet/8")

    url = f"http://{client.host}:{client.port}/v2/pet/8/images/{FIRST}"
    assert (await after.json())["photoUrls"] == [url]
    assert after.headers["ETag"] != before.headers["ETag"]
    assert pet.pet.images[0].images_base_url == f"http://{client.host}:{client.port}/v2/pet/8/images"


async def test_a_pet_with_all_its_images_refuses_another_with_409(client: Client, pet: FakeBackend) -> None:
    await upload(client)
    await upload(client)

    response = await upload(client)

    assert await error_of(Wire.JSON, response) == (409, "pet 8 has 2 images already")


@pytest.mark.parametrize(
    "host",
    ["evil.example/path", "user@evil.example", "evil.example:port", "a b", "-leading.example", "x" * 256],
)
async def test_a_host_header_that_is_not_a_host_is_400_and_nothing_is_stored(
    client: Client, pet: FakeBackend, host: str
) -> None:
    response = await upload(client, Host=host)

    assert await error_of(Wire.JSON, response) == (
        400,
        "the Host header must be a host name or address with an optional port",
    )
    assert pet.pet.images == []


@pytest.mark.parametrize("host", ["shop.example", "shop.example:8443", "10.0.0.7:8080", "[::1]:8080"])
async def test_a_plain_host_header_names_the_image(client: Client, pet: FakeBackend, host: str) -> None:
    response = await upload(client, Host=host)

    assert response.status == 200
    assert pet.pet.images[0].images_base_url == f"http://{host}/v2/pet/8/images"


@pytest.fixture
async def public_client(settings: GatewaySettings, backend: FakeBackend) -> AsyncIterator[Client]:
    configured = dataclasses.replace(settings, public_base_url="https://shop.example/petstore")
    clients = ServiceClients.connect(
        pet_addr=backend.address, order_addr=backend.address, user_addr=backend.address
    )
    async for served in serve_gateway(configured, clients):
        yield served


async def test_public_base_url_names_the_image_whatever_the_host(
    public_client: Client, pet: FakeBackend
) -> None:
    response = await upload(public_client, Host="evil.example")

    expected = f"https://shop.example/petstore/v2/pet/8/images/{FIRST}"
    assert (await response.json())["message"].endswith(f", at {expected}")
    assert list(pet.pet.pets[8].photo_urls) == [expected]
