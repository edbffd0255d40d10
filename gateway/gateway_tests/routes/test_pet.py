from __future__ import annotations

import io
import re
import tracemalloc
from typing import Any

import aiohttp
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.representations.pet import PET_SHAPE, PET_WRITTEN_FIELDS
from petstore_gateway.routes.pet import encode_pet
from petstore_pet import validation

from ..backend import Backend
from ..conftest import STATIC_KEY, Client
from ..images import NOT_AN_IMAGE, PNG
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))
NEW_PET = {
    "category": {"id": 1, "name": "Dogs"},
    "name": "Rex",
    "photoUrls": ["http://img/1.png", "http://img/2.png"],
    "tags": [{"id": 5, "name": "friendly"}],
    "status": "available",
}


@WIRES
async def test_add_pet_assigns_an_id(client: Client, backend: Backend, wire: Wire) -> None:
    response = await client.post("/v2/pet", data=wire.body("Pet", NEW_PET), headers=wire.headers(**KEY))
    assert response.status == 200
    body = await wire.read(response)
    assert body == {"id": body["id"], **NEW_PET}
    assert (await backend.pet(body["id"])).name == "Rex"


@WIRES
async def test_add_pet_with_a_taken_id_is_409(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(7, "Old")
    response = await client.post(
        "/v2/pet", data=wire.body("Pet", {**NEW_PET, "id": 7}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (409, "pet 7 already exists")
    assert (await backend.pet(7)).name == "Old"


@WIRES
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"photoUrls": None}, "photoUrls is required"),
        ({"name": None}, "name is required"),
        ({"status": "lost"}, "status must be one of available, pending, sold"),
        ({"id": "seven"}, "id must be an integer"),
        ({"name": ""}, "name is required"),  # the service's verdict, also 405
    ],
)
async def test_add_pet_validation_failures_are_405(
    client: Client, wire: Wire, change: dict[str, Any], message: str
) -> None:
    pet = {key: value for key, value in {**NEW_PET, **change}.items() if value is not None}
    response = await client.post("/v2/pet", data=wire.body("Pet", pet), headers=wire.headers(**KEY))
    assert await error_of(wire, response) == (405, message)


async def test_add_pet_json_type_errors_are_405(client: Client) -> None:
    response = await client.post(
        "/v2/pet",
        json={"name": "a", "photoUrls": "x", "id": True},
        headers={**KEY, "Accept": "application/json"},
    )
    assert await error_of(Wire.JSON, response) == (405, "photoUrls must be a list of strings")


@WIRES
async def test_add_pet_unparseable_is_400(client: Client, wire: Wire) -> None:
    response = await client.post("/v2/pet", data=b"<Pet><name>", headers=wire.headers(**KEY))
    status, _ = await error_of(wire, response)
    assert status == 400


async def test_add_pet_xxe_is_400(client: Client, backend: Backend) -> None:
    body = b'<?xml version="1.0"?><!DOCTYPE Pet [<!ENTITY x SYSTEM "file:///etc/passwd">]><Pet><name>&x;</name></Pet>'
    response = await client.post("/v2/pet", data=body, headers=Wire.XML.headers(**KEY))
    assert response.status == 400
    assert await backend.pet_ids() == []


@pytest.mark.parametrize(
    "content_type", ["application/octet-stream", "text/plain", "application/x-www-form-urlencoded"]
)
async def test_add_pet_with_an_unsupported_content_type_is_415(client: Client, content_type: str) -> None:
    response = await client.post(
        "/v2/pet",
        data=io.BytesIO(b'{"name": "a", "photoUrls": []}'),
        headers={**KEY, "Content-Type": content_type},
    )
    assert response.status == 415


async def test_add_pet_without_a_body_is_400(client: Client) -> None:
    response = await client.post("/v2/pet", headers={**KEY, "Content-Type": "application/json"})
    assert await error_of(Wire.JSON, response) == (400, "a request body is required")


@WIRES
async def test_update_pet(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(3, "Old")
    updated = {**NEW_PET, "id": 3, "name": "New", "status": "sold"}
    response = await client.put("/v2/pet", data=wire.body("Pet", updated), headers=wire.headers(**KEY))
    assert response.status == 200
    assert await wire.read(response) == updated
    assert (await backend.pet(3)).status == pet_pb2.PET_STATUS_SOLD


@WIRES
async def test_a_put_names_exactly_the_fields_of_the_representation(
    client: Client, backend: Backend, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty mask would let the pet service choose what a PUT replaces; the gateway names the
    fields it has, so one it does not know is kept (docs/compatibility.md)."""
    await backend.add_pet(3, "Old")
    masks: list[list[str]] = []
    update_fields = validation.update_fields

    def recording(pet: pet_pb2.Pet, mask: FieldMask) -> validation.MaskedUpdate:
        masks.append(list(mask.paths))
        return update_fields(pet, mask)

    monkeypatch.setattr(validation, "update_fields", recording)
    without_tags = {key: value for key, value in NEW_PET.items() if key != "tags"}
    body = {**without_tags, "id": 3}
    response = await client.put("/v2/pet", data=wire.body("Pet", body), headers=wire.headers(**KEY))

    assert response.status == 200
    assert masks == [list(PET_WRITTEN_FIELDS)]


def test_the_fields_a_put_writes_are_those_of_the_representation_but_the_id() -> None:
    by_wire_name = {field.json_name: field.name for field in pet_pb2.Pet.DESCRIPTOR.fields}

    assert set(PET_WRITTEN_FIELDS) == {by_wire_name[key] for key in PET_SHAPE.fields if key != "id"}
    assert set(PET_WRITTEN_FIELDS) == {"category", "name", "photo_urls", "tags", "status"}


@WIRES
async def test_update_unknown_pet_is_404(client: Client, wire: Wire) -> None:
    response = await client.put(
        "/v2/pet", data=wire.body("Pet", {**NEW_PET, "id": 99}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (404, "pet 99 not found")


@WIRES
async def test_update_pet_without_id_is_405(client: Client, wire: Wire) -> None:
    response = await client.put("/v2/pet", data=wire.body("Pet", NEW_PET), headers=wire.headers(**KEY))
    assert await error_of(wire, response) == (405, "id is required")


@WIRES
async def test_update_pet_unparseable_is_400(client: Client, wire: Wire) -> None:
    response = await client.put("/v2/pet", data=b"{]", headers=wire.headers(**KEY))
    assert response.status == 400


@WIRES
async def test_get_pet(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(4, "Tom", pet_pb2.PET_STATUS_PENDING, ("cat",))
    response = await client.get("/v2/pet/4", headers={"Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {
        "id": 4,
        "name": "Tom",
        "photoUrls": [],
        "tags": [{"name": "cat"}],
        "status": "pending",
    }


@WIRES
async def test_get_unknown_pet_is_404(client: Client, wire: Wire) -> None:
    response = await client.get("/v2/pet/12", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (404, "pet 12 not found")


@pytest.mark.parametrize("pet_id", ["abc", "1.5", "0", "-1", str(2**70)])
async def test_get_pet_with_a_bad_id_is_400(client: Client, pet_id: str) -> None:
    response = await client.get(f"/v2/pet/{pet_id}")
    status, message = await error_of(Wire.JSON, response)
    assert status == 400
    assert message.startswith("Invalid ID supplied")


@pytest.fixture
async def many_pets(backend: Backend) -> Backend:
    await backend.add_pet(1, "a", pet_pb2.PET_STATUS_AVAILABLE, ("x", "y"))
    await backend.add_pet(2, "b", pet_pb2.PET_STATUS_PENDING, ("y",))
    await backend.add_pet(3, "c", pet_pb2.PET_STATUS_SOLD, ("z",))
    await backend.add_pet(4, "d", pet_pb2.PET_STATUS_AVAILABLE)
    return backend


@WIRES
@pytest.mark.parametrize("query", ["status=available,pending", "status=available&status=pending"])
async def test_find_by_status(client: Client, many_pets: Backend, wire: Wire, query: str) -> None:
    response = await client.get(f"/v2/pet/findByStatus?{query}", headers={"Accept": wire.value})
    assert response.status == 200
    assert [pet["id"] for pet in await wire.read(response)] == [1, 2, 4]
    assert "X-Next-Page-Token" not in response.headers


async def test_find_by_status_xml_lists_pets(client: Client, many_pets: Backend) -> None:
    response = await client.get("/v2/pet/findByStatus?status=sold", headers={"Accept": "application/xml"})
    text = await response.text()
    assert "<pets><Pet><id>3</id>" in text


@WIRES
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "status is required: one or more of available, pending, sold"),
        ("status=", "status is required: one or more of available, pending, sold"),
        ("status=available,lost", "status must be one of available, pending, sold"),
        ("status=sold&limit=0", "limit must be an integer from 1 to 1000"),
    ],
)
async def test_find_by_status_errors_are_400(client: Client, wire: Wire, query: str, message: str) -> None:
    response = await client.get(f"/v2/pet/findByStatus?{query}", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (400, message)


async def test_find_by_status_pages(client: Client, many_pets: Backend) -> None:
    """The limit and the token reach the service: two pets a page, the second page after them."""
    first = await client.get("/v2/pet/findByStatus?status=available,pending&limit=2")
    assert [pet["id"] for pet in await first.json()] == [1, 2]
    token = first.headers["X-Next-Page-Token"]
    second = await client.get(f"/v2/pet/findByStatus?status=available,pending&limit=2&pageToken={token}")
    assert [pet["id"] for pet in await second.json()] == [4]
    assert "X-Next-Page-Token" not in second.headers


async def test_lists_default_to_a_bounded_page(client: Client, backend: Backend) -> None:
    for _ in range(101):
        await backend.add_pet(tags=("x",))
    response = await client.get("/v2/pet/findByTags?tags=x")
    assert len(await response.json()) == 100
    assert response.headers["X-Next-Page-Token"]


async def test_a_bad_page_token_is_400(client: Client, many_pets: Backend) -> None:
    response = await client.get("/v2/pet/findByStatus?status=sold&pageToken=garbage")
    assert await error_of(Wire.JSON, response) == (400, "pageToken is invalid")
    listed = await client.get("/v2/pet/findByStatus?status=sold,available&limit=1")
    token = listed.headers["X-Next-Page-Token"]
    other_filter = await client.get(f"/v2/pet/findByStatus?status=sold&pageToken={token}")
    assert await error_of(Wire.JSON, other_filter) == (400, "pageToken does not belong to this filter")


@WIRES
async def test_find_by_tags_lists_each_pet_once(client: Client, many_pets: Backend, wire: Wire) -> None:
    response = await client.get("/v2/pet/findByTags?tags=x,y&tags=z", headers={"Accept": wire.value})
    assert response.status == 200
    assert [pet["id"] for pet in await wire.read(response)] == [1, 2, 3]


@WIRES
async def test_find_by_tags_without_tags_is_400(client: Client, wire: Wire) -> None:
    response = await client.get("/v2/pet/findByTags", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (400, "tags is required: one or more tag names")


@WIRES
async def test_update_with_form_changes_only_the_given_fields(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_pet(5, "Old", tags=("keep",))
    response = await client.post("/v2/pet/5", data={"status": "sold"}, headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "5"}
    stored = await backend.pet(5)
    assert (stored.name, stored.status, [t.name for t in stored.tags]) == (
        "Old",
        pet_pb2.PET_STATUS_SOLD,
        ["keep"],
    )


async def test_update_with_multipart_form(client: Client, backend: Backend) -> None:
    await backend.add_pet(5, "Old")
    form = aiohttp.FormData()
    form.add_field("name", "New")
    form.add_field("status", "pending")
    response = await client.post("/v2/pet/5", data=form, headers=KEY)
    assert response.status == 200
    stored = await backend.pet(5)
    assert (stored.name, stored.status) == ("New", pet_pb2.PET_STATUS_PENDING)


@WIRES
@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ({"status": "lost"}, (405, "status must be one of available, pending, sold")),
        ({"name": ""}, (405, "name is required")),
    ],
)
async def test_update_with_form_invalid_input_is_405(
    client: Client, backend: Backend, wire: Wire, form: dict[str, str], expected: tuple[int, str]
) -> None:
    await backend.add_pet(5, "Old")
    response = await client.post("/v2/pet/5", data=form, headers={**KEY, "Accept": wire.value})
    assert await error_of(wire, response) == expected


@WIRES
@pytest.mark.parametrize("form", [{"name": "x"}, {}])
async def test_update_with_form_unknown_pet_is_404(client: Client, wire: Wire, form: dict[str, str]) -> None:
    response = await client.post("/v2/pet/77", data=form, headers={**KEY, "Accept": wire.value})
    assert await error_of(wire, response) == (404, "pet 77 not found")


async def test_update_with_an_empty_form_changes_nothing(client: Client, backend: Backend) -> None:
    await backend.add_pet(5, "Old")
    response = await client.post("/v2/pet/5", headers=KEY)
    assert response.status == 200
    assert (await backend.pet(5)).name == "Old"


async def test_update_with_json_is_415(client: Client, backend: Backend) -> None:
    await backend.add_pet(5, "Old")
    response = await client.post("/v2/pet/5", json={"name": "x"}, headers=KEY)
    assert response.status == 415


@WIRES
async def test_delete_pet(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(6, "Bye")
    response = await client.delete("/v2/pet/6", headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "6"}
    assert 6 not in await backend.pet_ids()


@WIRES
@pytest.mark.parametrize(("pet_id", "status"), [("6", 404), ("x", 400)])
async def test_delete_pet_errors(client: Client, wire: Wire, pet_id: str, status: int) -> None:
    response = await client.delete(f"/v2/pet/{pet_id}", headers={**KEY, "Accept": wire.value})
    assert (await error_of(wire, response))[0] == status


def image_form(
    content_type: str = "image/png", metadata: str | None = "front view", data: bytes = PNG
) -> aiohttp.FormData:
    form = aiohttp.FormData()
    if metadata is not None:
        form.add_field("additionalMetadata", metadata)
    form.add_field("file", data, filename="rex.png", content_type=content_type)
    return form


@WIRES
async def test_upload_image(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(8, "Pic")
    response = await client.post(
        "/v2/pet/8/uploadImage", data=image_form(), headers={**KEY, "Accept": wire.value}
    )
    assert response.status == 200
    body = await wire.read(response)
    assert (body["code"], body["type"]) == (200, "unknown")
    shown = re.fullmatch(
        r"additionalMetadata: front view\nimage ([0-9a-f]{32}) stored, (.*)", body["message"]
    )
    assert shown is not None, body
    image_id = shown[1]
    url = f"http://{client.host}:{client.port}/v2/pet/8/images/{image_id}"
    assert shown[2] == f"{len(PNG)} bytes, image/png, at {url}"
    stored = await backend.stack.pet.store.get_image(8, image_id)
    assert (stored.pet_id, stored.data, stored.content_type) == (8, PNG, "image/png")
    assert (stored.file_name, stored.additional_metadata) == ("rex.png", "front view")


async def test_the_stored_media_type_is_the_decoded_one_not_the_parts_claim(
    client: Client, backend: Backend
) -> None:
    await backend.add_pet(8, "Pic")
    response = await client.post("/v2/pet/8/uploadImage", data=image_form("text/plain"), headers=KEY)
    assert ", image/png, at " in (await response.json())["message"]


async def test_upload_image_without_metadata(client: Client, backend: Backend) -> None:
    await backend.add_pet(8, "Pic")
    response = await client.post("/v2/pet/8/uploadImage", data=image_form(metadata=None), headers=KEY)
    assert (await response.json())["message"].startswith("additionalMetadata: null\n")


@WIRES
async def test_upload_image_errors(client: Client, backend: Backend, wire: Wire) -> None:
    headers = {**KEY, "Accept": wire.value}
    unknown = await client.post("/v2/pet/8/uploadImage", data=image_form(), headers=headers)
    assert await error_of(wire, unknown) == (404, "pet 8 not found")
    await backend.add_pet(8, "Pic")
    not_image = await client.post(
        "/v2/pet/8/uploadImage", data=image_form(data=b"\x89PNG-no"), headers=headers
    )
    assert await error_of(wire, not_image) == (400, NOT_AN_IMAGE)
    no_file = aiohttp.FormData()
    no_file.add_field("additionalMetadata", "x")
    no_file.add_field("other", b"x", filename="x.png")
    missing = await client.post("/v2/pet/8/uploadImage", data=no_file, headers=headers)
    assert (await error_of(wire, missing))[0] == 400
    text_field = await client.post("/v2/pet/8/uploadImage", data={"file": "not a file"}, headers=headers)
    assert (await error_of(wire, text_field))[0] == 415  # urlencoded is not multipart
    bad_id = await client.post("/v2/pet/zero/uploadImage", data=image_form(), headers=headers)
    assert (await error_of(wire, bad_id))[0] == 400


async def test_upload_image_over_the_limit_is_413(client: Client, backend: Backend) -> None:
    await backend.add_pet(8, "Pic")
    form = aiohttp.FormData()
    form.add_field("file", io.BytesIO(b"x" * (1024 * 1024 + 1)), filename="big.png", content_type="image/png")
    response = await client.post("/v2/pet/8/uploadImage", data=form, headers=KEY)
    assert response.status == 413
    assert await backend.stack.pet.store.list_images(8) == []


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data", b"--x\r\n\r\n"),
        ("multipart/form-data; boundary=x", b"garbage"),
        ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data\r\n\r\nv\r\n--x--\r\n"),
    ],
)
async def test_malformed_forms_are_400_not_500(
    client: Client, backend: Backend, content_type: str, body: bytes
) -> None:
    await backend.add_pet(5, "Old")
    for path in ("/v2/pet/5", "/v2/pet/5/uploadImage"):
        response = await client.post(path, data=body, headers={**KEY, "Content-Type": content_type})
        assert await error_of(Wire.JSON, response) == (400, "request body is not a valid form")


CATALOGUE_CHANGES = [
    ("POST", "/v2/pet", {"name": "Rex", "photoUrls": []}),
    ("PUT", "/v2/pet", {"id": 1, "name": "Stolen", "photoUrls": []}),
    ("DELETE", "/v2/pet/1", None),
]


@WIRES
@pytest.mark.parametrize(("method", "path", "pet"), CATALOGUE_CHANGES)
async def test_a_customer_changing_the_catalogue_is_403(
    client: Client, backend: Backend, wire: Wire, method: str, path: str, pet: dict[str, Any] | None
) -> None:
    await backend.add_pet(1, "Rex")
    token = await backend.customer("ann", 7)
    data = None if pet is None else wire.body("Pet", pet)
    backend.calls.clear()

    response = await client.request(method, path, data=data, headers=wire.headers(api_key=token))

    assert await error_of(wire, response) == (403, "only staff may change the catalogue")
    assert (await backend.pet(1)).name == "Rex"
    assert changes_asked(backend) == []  # refused by the gateway: the pet service never asked


@WIRES
async def test_a_customer_form_update_or_upload_is_403(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(1, "Rex")
    token = await backend.customer("ann", 7)
    headers = {"api_key": token, "Accept": wire.value}
    backend.calls.clear()

    form = await client.post("/v2/pet/1", data={"name": "Stolen"}, headers=headers)
    upload = await client.post("/v2/pet/1/uploadImage", data=image_form(), headers=headers)

    assert await error_of(wire, form) == (403, "only staff may change the catalogue")
    assert await error_of(wire, upload) == (403, "only staff may change the catalogue")
    assert ((await backend.pet(1)).name, await backend.stack.pet.store.list_images(1)) == ("Rex", [])
    assert changes_asked(backend) == []


def changes_asked(backend: Backend) -> list[str]:
    """The pet service's methods called since the calls were cleared, reads aside."""
    return [method for method in backend.calls.to("PetService") if method not in ("GetPet", "WatchPets")]


async def test_a_static_key_changes_the_catalogue_as_staff(client: Client, backend: Backend) -> None:
    response = await client.post("/v2/pet", json={"name": "Rex", "photoUrls": []}, headers=KEY)

    assert response.status == 200
    # The pet service itself creates only for staff.
    assert (await backend.pet((await response.json())["id"])).name == "Rex"


async def test_the_idempotency_key_goes_to_the_service_and_a_replay_says_so(
    client: Client, backend: Backend
) -> None:
    rex = {"name": "Rex", "photoUrls": []}
    fresh = await client.post("/v2/pet", json=rex, headers={**KEY, "Idempotency-Key": "k-1"})
    replayed = await client.post("/v2/pet", json=rex, headers={**KEY, "Idempotency-Key": "k-1"})
    plain = [await client.post("/v2/pet", json=rex, headers=KEY) for _ in range(2)]

    assert [r.status for r in (fresh, replayed, *plain)] == [200] * 4
    assert "Idempotent-Replayed" not in fresh.headers
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert (await replayed.json())["id"] == (await fresh.json())["id"]  # the retry created nothing
    assert "Idempotent-Replayed" not in plain[1].headers
    assert len(await backend.pet_ids()) == 3  # without a key each request is a new pet


@WIRES
async def test_a_key_used_for_another_request_is_422(client: Client, wire: Wire) -> None:
    headers = wire.headers(**KEY, **{"Idempotency-Key": "k-1"})
    first = await client.post(
        "/v2/pet", data=wire.body("Pet", {"name": "Rex", "photoUrls": []}), headers=headers
    )
    other = await client.post(
        "/v2/pet", data=wire.body("Pet", {"name": "Max", "photoUrls": []}), headers=headers
    )
    assert first.status == 200
    assert await error_of(wire, other) == (
        422,
        "this Idempotency-Key was already used with a different request",
    )


@WIRES
@pytest.mark.parametrize("key", ["two words", "é"])
async def test_a_malformed_idempotency_key_is_400(client: Client, wire: Wire, key: str) -> None:
    body = wire.body("Pet", {"name": "Rex", "photoUrls": []})
    response = await client.post(
        "/v2/pet", data=body, headers=wire.headers(**KEY, **{"Idempotency-Key": key})
    )
    assert await error_of(wire, response) == (
        400,
        "Idempotency-Key must be 1 to 255 characters of visible ASCII",
    )


@WIRES
@pytest.mark.parametrize(
    "query",
    [
        "status[]=available&status[]=pending",
        "status[0]=available&status[1]=pending",
        "status%5B0%5D=available&status%5B1%5D=pending",
        "status[0]=pending&status=available,pending&status[]=available",
    ],
)
async def test_find_by_status_takes_indexed_arrays(
    client: Client, many_pets: Backend, wire: Wire, query: str
) -> None:
    response = await client.get(f"/v2/pet/findByStatus?{query}", headers={"Accept": wire.value})
    assert response.status == 200
    assert [pet["id"] for pet in await wire.read(response)] == [1, 2, 4]


@pytest.mark.parametrize("query", ["tags[]=x&tags[]=z", "tags[0]=x&tags[1]=z", "tags[1]=z&tags=x"])
async def test_find_by_tags_takes_indexed_arrays(client: Client, many_pets: Backend, query: str) -> None:
    response = await client.get(f"/v2/pet/findByTags?{query}")
    assert [pet["id"] for pet in await response.json()] == [1, 3]


@WIRES
@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("findByStatus?status[x]=sold", "status"),
        ("findByStatus?status=sold&status[0=sold", "status"),
        ("findByTags?tags[0]]=x", "tags"),
    ],
)
async def test_malformed_array_indexes_are_400(client: Client, wire: Wire, path: str, name: str) -> None:
    response = await client.get(f"/v2/pet/{path}", headers={"Accept": wire.value})
    status, message = await error_of(wire, response)
    assert (status, message.split(":")[0]) == (400, f"malformed {name}[...] query parameter")


def test_an_encoded_pet_holds_only_its_own_bytes() -> None:
    """What the read cache keeps: a JSON encoder that hands back a 4 KiB buffer for a
    200-byte body made 10,000 cached pets cost 39 MiB."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        kept = [
            encode_pet(pet_pb2.Pet(id=n, name=f"rex-{n}", photo_urls=["https://example.com/a.jpg"]), fmt)
            for n in range(1, 201)
            for fmt in BodyFormat
        ]
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert max(len(entity.body) for entity in kept) < 300
    assert (after - before) / len(kept) < 600  # body, ETag, entry and list slot; not 4 KiB
