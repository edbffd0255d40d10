"""Images served back end to end: an upload's URL lands in the pet's photoUrls (a new version),
anyone fetches the image in its decoded media type, never sniffed, immutable; images are
refused when they only look like images or declare too many pixels, at most 16 per pet, and
they go with their pet. Only staff upload (the refused side: a customer, anonymous)."""

from __future__ import annotations

import io
import re
import struct
import zlib

import pytest
from aiohttp import FormData
from multidict import CIMultiDict

from tests.e2e.callers import Cast
from tests.e2e.client import JSON, XML, Api, Reply, parse
from tests.e2e.test_pet_catalogue import NOT_AN_IMAGE, PNG, success_message
from tests.e2e.test_pets import a_pet

MAX_IMAGES_PER_PET = 16
GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
"""A real 1x1 GIF."""


def png_claiming(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + idat + chunk(b"IEND", b"")


async def upload(
    api: Api,
    pet_id: int,
    data: bytes,
    *,
    claim: str = "image/png",
    key: str | None = "",
    metadata: str | None = None,
) -> Reply:
    form = FormData()
    form.add_field("file", io.BytesIO(data), filename="photo", content_type=claim)
    if metadata is not None:
        form.add_field("additionalMetadata", metadata)
    headers = {"Accept": JSON}
    sent_key = api.static_key if key == "" else key
    if sent_key is not None:
        headers["api_key"] = sent_key
    async with api.session.post(
        f"{api.base_url}/pet/{pet_id}/uploadImage", data=form, headers=headers
    ) as response:
        return Reply(response.status, response.headers, await response.text())


def image_url(reply: Reply) -> str:
    found = re.search(r", at (\S+)$", success_message(reply, JSON))
    assert found is not None, reply.text
    return found[1]


async def fetch(api: Api, url: str, **headers: str) -> tuple[int, CIMultiDict[str], bytes]:
    async with api.session.get(url, headers=headers) as response:
        return response.status, response.headers.copy(), await response.read()


@pytest.fixture
async def pet(api: Api, unique: str) -> dict[str, object]:
    return parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)


async def test_an_uploaded_image_is_in_photo_urls_and_served_to_anyone(
    api: Api, pet: dict[str, object]
) -> None:
    before = await api.call("GET", f"/pet/{pet['id']}")
    reply = await upload(api, int(str(pet["id"])), GIF, claim="image/png")  # the claim is not believed
    url = image_url(reply)

    after = await api.call("GET", f"/pet/{pet['id']}")
    status, headers, body = await fetch(api, url, Accept="image/png")  # no key, an image Accept

    assert url.startswith(f"{api.base_url}/pet/{pet['id']}/images/")
    assert after.json["photoUrls"] == [*before.json["photoUrls"], url]
    assert after.headers["ETag"] != before.headers["ETag"]  # a new version of the pet
    assert (status, body) == (200, GIF)
    assert headers["Content-Type"] == "image/gif"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    again = await fetch(api, url, **{"If-None-Match": headers["ETag"]})
    assert (again[0], again[2]) == (304, b"")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, NOT_AN_IMAGE),
        (PNG[:41], NOT_AN_IMAGE),  # cut inside its pixel data
        (b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>", NOT_AN_IMAGE),
        (png_claiming(50_000, 50_000), "image is 50000x50000: at most 16777216 pixels are accepted"),
    ],
    ids=["png-signature-only", "truncated", "svg", "decompression-bomb"],
)
async def test_what_is_no_image_is_refused_and_the_pet_unchanged(
    api: Api, pet: dict[str, object], data: bytes, message: str
) -> None:
    reply = await upload(api, int(str(pet["id"])), data)

    assert (reply.status, reply.error_message()) == (400, message)
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == pet


@pytest.mark.since("pet-service", "1.1.0")  # the message names the field `additionalMetadata: ...`
@pytest.mark.parametrize("metadata", ["a\x1b[2Jb", "line\r\nX-Injected: 1", "nul\x00"])
async def test_control_characters_in_the_metadata_are_refused_and_nothing_stored(
    api: Api, pet: dict[str, object], metadata: str
) -> None:
    reply = await upload(api, int(str(pet["id"])), PNG, metadata=metadata)  # a real image

    assert (reply.status, reply.error_message()) == (
        400,
        "additionalMetadata: must not contain control characters",
    )
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == pet


async def test_a_pet_keeps_at_most_sixteen_images(api: Api, pet: dict[str, object]) -> None:
    pet_id = int(str(pet["id"]))
    for _ in range(MAX_IMAGES_PER_PET):
        assert (await upload(api, pet_id, PNG)).status == 200

    refused = await upload(api, pet_id, PNG)

    assert (refused.status, refused.error_message()) == (
        409,
        f"pet {pet_id} has {MAX_IMAGES_PER_PET} images already: at most {MAX_IMAGES_PER_PET} are kept",
    )
    stored = parse(await api.call("GET", f"/pet/{pet_id}"), JSON)
    assert len(stored["photoUrls"]) == len(pet["photoUrls"]) + MAX_IMAGES_PER_PET  # type: ignore[arg-type]


async def test_images_go_with_their_pet(api: Api, pet: dict[str, object]) -> None:
    url = image_url(await upload(api, int(str(pet["id"])), PNG))

    deleted = await api.call("DELETE", f"/pet/{pet['id']}", api_key=api.static_key)
    status, _, _ = await fetch(api, url)

    assert deleted.status == 200
    assert status == 404


@pytest.mark.parametrize("fmt", [JSON, XML])
async def test_an_image_under_another_pet_or_a_made_up_id_is_not_there(
    api: Api, pet: dict[str, object], unique: str, fmt: str
) -> None:
    url = image_url(await upload(api, int(str(pet["id"])), PNG))
    image_id = url.rsplit("/", 1)[1]
    other = parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)

    elsewhere = await api.call("GET", f"/pet/{other['id']}/images/{image_id}", accept=fmt)
    made_up = await api.call("GET", f"/pet/{pet['id']}/images/{'0' * 32}", accept=fmt)
    traversal = await api.call("GET", f"/pet/{pet['id']}/images/..%2F..%2Fetc%2Fpasswd", accept=fmt)

    assert (elsewhere.status, elsewhere.error_message()) == (
        404,
        f"pet {other['id']} has no image {image_id}",
    )
    assert made_up.status == 404
    assert traversal.status == 400


async def test_customers_and_anonymous_callers_upload_nothing(api: Api, cast: Cast) -> None:
    pet_id = int(cast.pet["id"])
    as_customer = await upload(api, pet_id, PNG, key=cast.ann.token)
    anonymous = await upload(api, pet_id, PNG, key=None)

    assert as_customer.status == 403
    assert anonymous.status == 401
    assert parse(await api.call("GET", f"/pet/{pet_id}"), JSON) == cast.pet
