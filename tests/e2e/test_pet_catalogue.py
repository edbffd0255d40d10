"""The pet catalogue beyond the core: findByStatus, findByTags, the form update, DELETE and
uploadImage, in JSON and XML."""

from __future__ import annotations

import io
import re
import struct
import zlib
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import FormData

from tests.e2e.client import JSON, XML, Api, Reply, from_xml, parse
from tests.e2e.test_pets import a_pet, free_id

FORMATS = [JSON, XML]
FORM = "application/x-www-form-urlencoded"
STATUS_REQUIRED = "status is required: one or more of available, pending, sold"
STATUS_INVALID = "status must be one of available, pending, sold"
NO_KEY = "api_key header (or Authorization: Bearer) is required for this operation"
MEBIBYTE = 1024 * 1024


def failure(reply: Reply, status: int, fmt: str) -> str:
    """The error message of `reply`, once its status and negotiated format are checked."""
    assert reply.status == status, (reply.status, reply.text)
    assert reply.headers["Content-Type"].startswith(fmt), reply.headers["Content-Type"]
    return reply.error_message()


def success_message(reply: Reply, fmt: str) -> str:
    """The message of the classic success ApiResponse {code: 200, type: "unknown", message}."""
    body = parse(reply, fmt)
    assert body["code"] == 200, body
    assert body["type"] == "unknown", body
    assert set(body) == {"code", "type", "message"}, body
    return str(body["message"])


def parse_pets(reply: Reply, fmt: str) -> list[dict[str, Any]]:
    """A pet list: a JSON array, or <pets><Pet>…</Pet></pets>."""
    assert reply.status == 200, (reply.status, reply.text)
    assert reply.headers["Content-Type"].startswith(fmt), reply.headers["Content-Type"]
    if fmt == JSON:
        body = reply.json
        assert isinstance(body, list), body
        return body
    root = reply.xml
    assert root.tag == "pets", reply.text
    assert all(child.tag == "Pet" for child in root), reply.text
    return [from_xml(child) for child in root]


async def find_all(
    api: Api, path: str, params: list[tuple[str, str]], fmt: str = JSON
) -> list[dict[str, Any]]:
    """Every page of a list, following X-Next-Page-Token."""
    pets: list[dict[str, Any]] = []
    token = ""
    for _ in range(100):
        page_params = [*params, ("limit", "1000")] + ([("pageToken", token)] if token else [])
        reply = await api.call("GET", path, params=page_params, accept=fmt)
        pets.extend(parse_pets(reply, fmt))
        token = reply.headers.get("X-Next-Page-Token", "")
        if not token:
            return pets
    raise AssertionError("more than 100 pages")


async def create(api: Api, pet: dict[str, Any]) -> dict[str, Any]:
    reply = await api.send("POST", "/pet", pet, JSON)
    assert reply.status == 200, reply.text
    created: dict[str, Any] = reply.json
    return created


def ids_of(pets: list[dict[str, Any]]) -> list[int]:
    return [int(pet["id"]) for pet in pets]


# --- GET /pet/findByStatus ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_status_takes_comma_separated_or_repeated_values(
    api: Api, unique: str, fmt: str
) -> None:
    pending = await create(api, a_pet(unique, status="pending"))
    sold = await create(api, a_pet(unique, status="sold"))
    available = await create(api, a_pet(unique, status="available"))
    for params in ([("status", "pending,sold")], [("status", "pending"), ("status", "sold")]):
        found = await find_all(api, "/pet/findByStatus", params, fmt)
        assert {pet["status"] for pet in found} <= {"pending", "sold"}
        ids = ids_of(found)
        assert ids == sorted(ids)
        assert len(ids) == len(set(ids))
        assert pending in found
        assert sold in found
        assert available["id"] not in ids
    only_pending = await find_all(api, "/pet/findByStatus", [("status", "pending")], fmt)
    assert pending in only_pending
    assert sold["id"] not in ids_of(only_pending)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_status_reflects_later_changes(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique, status="pending"))
    changed = await api.send("PUT", "/pet", {**pet, "status": "sold"}, JSON)
    assert changed.status == 200, changed.text
    assert pet["id"] not in ids_of(await find_all(api, "/pet/findByStatus", [("status", "pending")], fmt))
    assert {**pet, "status": "sold"} in await find_all(api, "/pet/findByStatus", [("status", "sold")], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([], STATUS_REQUIRED),
        ([("status", "")], STATUS_REQUIRED),
        ([("status", ",")], STATUS_REQUIRED),
        ([("status", "lost")], STATUS_INVALID),
        ([("status", "available,lost")], STATUS_INVALID),
        ([("status", "available"), ("status", "Sold")], STATUS_INVALID),
        ([("status", "sold"), ("limit", "0")], "limit must be an integer from 1 to 1000"),
        ([("status", "sold"), ("limit", "1001")], "limit must be an integer from 1 to 1000"),
        ([("status", "sold"), ("limit", "ten")], "limit must be an integer from 1 to 1000"),
        ([("status", "sold"), ("limit", "-1")], "limit must be an integer from 1 to 1000"),
    ],
    ids=[
        "missing",
        "empty",
        "only-commas",
        "unknown",
        "one-unknown",
        "case-matters",
        "limit-0",
        "limit-1001",
        "limit-text",
        "limit-negative",
    ],
)
async def test_find_by_status_errors_are_400(
    api: Api, fmt: str, params: list[tuple[str, str]], message: str
) -> None:
    reply = await api.call("GET", "/pet/findByStatus", params=params, accept=fmt)
    assert failure(reply, 400, fmt) == message


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_status_pages_with_limit_and_page_token(api: Api, unique: str, fmt: str) -> None:
    mine = [await create(api, a_pet(f"{unique}-{i}", status="sold")) for i in range(3)]
    seen: list[dict[str, Any]] = []
    token = ""
    pages = 0
    while True:
        params = [("status", "sold"), ("limit", "2")] + ([("pageToken", token)] if token else [])
        reply = await api.call("GET", "/pet/findByStatus", params=params, accept=fmt)
        page = parse_pets(reply, fmt)
        pages += 1
        assert 1 <= len(page) <= 2
        token = reply.headers.get("X-Next-Page-Token", "")
        if token:
            assert len(page) == 2  # a short page is the last one
        seen.extend(page)
        if not token:
            break
        assert pages < 1000
    assert pages >= 2  # at least the three sold pets above: more than one page of two
    ids = ids_of(seen)
    assert ids == sorted(ids)
    assert len(ids) == len(set(ids))
    assert all(pet in seen for pet in mine)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_status_refuses_bad_page_tokens(api: Api, unique: str, fmt: str) -> None:
    for i in range(2):
        await create(api, a_pet(f"{unique}-{i}", status="pending"))
    first = await api.call("GET", "/pet/findByStatus", params={"status": "pending", "limit": "1"}, accept=fmt)
    assert len(parse_pets(first, fmt)) == 1
    token = first.headers["X-Next-Page-Token"]
    assert token
    forged = await api.call(
        "GET", "/pet/findByStatus", params={"status": "pending", "pageToken": "garbage!"}, accept=fmt
    )
    assert "pageToken is invalid" in failure(forged, 400, fmt)  # the parameter the client sent
    other_filter = await api.call(
        "GET", "/pet/findByStatus", params={"status": "sold", "pageToken": token}, accept=fmt
    )
    assert "pageToken does not belong to this filter" in failure(other_filter, 400, fmt)
    same_filter = await api.call(
        "GET", "/pet/findByStatus", params={"status": "pending", "pageToken": token}, accept=fmt
    )
    assert parse_pets(same_filter, fmt)[0]["id"] > parse_pets(first, fmt)[0]["id"]


async def test_lists_are_bounded_to_a_hundred_by_default(api: Api, unique: str) -> None:
    tag = f"crowd-{unique}"
    # One after another: FerretDB's SQLite backend slows to a crawl under many parallel writes.
    created = [await create(api, a_pet(f"{unique}-{i}", tags=[{"name": tag}])) for i in range(101)]
    first = await api.call("GET", "/pet/findByTags", params={"tags": tag})
    page = parse_pets(first, JSON)
    assert len(page) == 100
    token = first.headers["X-Next-Page-Token"]
    second = await api.call("GET", "/pet/findByTags", params={"tags": tag, "pageToken": token})
    rest = parse_pets(second, JSON)
    assert len(rest) == 1
    assert "X-Next-Page-Token" not in second.headers
    assert sorted(ids_of(page + rest)) == sorted(ids_of(created))
    everything = await api.call("GET", "/pet/findByTags", params={"tags": tag, "limit": "1000"})
    assert len(parse_pets(everything, JSON)) == 101
    assert "X-Next-Page-Token" not in everything.headers
    by_status = await api.call("GET", "/pet/findByStatus", params={"status": "available,pending,sold"})
    assert len(parse_pets(by_status, JSON)) == 100  # at least the 101 above exist
    assert by_status.headers["X-Next-Page-Token"]


# --- GET /pet/findByTags --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_tags_lists_each_pet_once(api: Api, unique: str, fmt: str) -> None:
    both = await create(
        api, a_pet(unique, tags=[{"id": 1, "name": f"a-{unique}"}, {"id": 2, "name": f"b-{unique}"}])
    )
    only_b = await create(api, a_pet(unique, tags=[{"id": 2, "name": f"b-{unique}"}], status="sold"))
    neither = await create(api, a_pet(unique, tags=[{"id": 3, "name": f"c-{unique}"}]))
    for params in (
        [("tags", f"a-{unique},b-{unique}")],
        [("tags", f"a-{unique}"), ("tags", f"b-{unique}")],
        [("tags", f"b-{unique},a-{unique},b-{unique}")],
    ):
        found = parse_pets(await api.call("GET", "/pet/findByTags", params=params, accept=fmt), fmt)
        # Ordered by id, which need not be the order of creation: replicas draw ids in blocks.
        assert found == sorted([both, only_b], key=lambda pet: int(pet["id"]))
        assert neither not in found
    only_a = parse_pets(
        await api.call("GET", "/pet/findByTags", params={"tags": f"a-{unique}"}, accept=fmt), fmt
    )
    assert only_a == [both]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_find_by_tags_with_no_match_is_an_empty_list(api: Api, unique: str, fmt: str) -> None:
    reply = await api.call("GET", "/pet/findByTags", params={"tags": f"nobody-{unique}"}, accept=fmt)
    assert parse_pets(reply, fmt) == []
    assert "X-Next-Page-Token" not in reply.headers


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("params", [[], [("tags", "")], [("tags", ", ,")]], ids=["missing", "empty", "blank"])
async def test_find_by_tags_without_tags_is_400(api: Api, fmt: str, params: list[tuple[str, str]]) -> None:
    reply = await api.call("GET", "/pet/findByTags", params=params, accept=fmt)
    assert failure(reply, 400, fmt) == "tags is required: one or more tag names"


# --- POST /pet/{petId} (form) ---------------------------------------------------------------


async def post_form(
    api: Api, pet_id: int | str, fields: dict[str, str], fmt: str, *, key: bool = True
) -> Reply:
    return await api.call(
        "POST",
        f"/pet/{pet_id}",
        body=urlencode(fields),
        content_type=FORM,
        accept=fmt,
        api_key=api.static_key if key else None,
    )


@pytest.mark.parametrize("fmt", FORMATS)
async def test_form_update_changes_only_the_given_fields(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    status_only = await post_form(api, pet["id"], {"status": "pending"}, fmt)
    assert success_message(status_only, fmt) == str(pet["id"])
    after_status = parse(await api.call("GET", f"/pet/{pet['id']}", accept=fmt), fmt)
    assert after_status == {**pet, "status": "pending"}
    name_only = await post_form(api, pet["id"], {"name": f"max-{unique}"}, fmt)
    assert success_message(name_only, fmt) == str(pet["id"])
    after_name = parse(await api.call("GET", f"/pet/{pet['id']}"), JSON)
    assert after_name == {**pet, "status": "pending", "name": f"max-{unique}"}
    both = await post_form(api, pet["id"], {"name": f"bo-{unique}", "status": "sold"}, fmt)
    assert success_message(both, fmt) == str(pet["id"])
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == {
        **pet,
        "name": f"bo-{unique}",
        "status": "sold",
    }


@pytest.mark.parametrize("fmt", FORMATS)
async def test_form_update_as_multipart_and_empty(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    form = FormData()
    form.add_field("name", f"multi-{unique}")
    form.add_field("status", "sold")
    reply = await send_multipart(api, f"/pet/{pet['id']}", form, fmt)
    assert success_message(reply, fmt) == str(pet["id"])
    changed = {**pet, "name": f"multi-{unique}", "status": "sold"}
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == changed
    empty = await post_form(api, pet["id"], {}, fmt)
    assert success_message(empty, fmt) == str(pet["id"])
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == changed


@pytest.mark.parametrize("fmt", FORMATS)
async def test_form_update_errors(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    unknown_id = free_id()
    for fields in ({"name": "x"}, {}):
        unknown = await post_form(api, unknown_id, fields, fmt)
        assert failure(unknown, 404, fmt) == f"pet {unknown_id} not found"
    bad_status = await post_form(api, pet["id"], {"name": "never", "status": "lost"}, fmt)
    assert failure(bad_status, 405, fmt) == STATUS_INVALID
    empty_name = await post_form(api, pet["id"], {"name": ""}, fmt)
    assert failure(empty_name, 405, fmt)
    blank_name = await post_form(api, pet["id"], {"name": "   "}, fmt)
    assert failure(blank_name, 405, fmt)
    for bad_id in ("abc", "0", "-3", "1.5", str(2**63)):
        reply = await post_form(api, bad_id, {"name": "x"}, fmt)
        assert failure(reply, 400, fmt).startswith("Invalid ID supplied"), bad_id
    no_key = await post_form(api, pet["id"], {"name": "x"}, fmt, key=False)
    assert failure(no_key, 401, fmt) == NO_KEY
    as_json = await api.call(
        "POST",
        f"/pet/{pet['id']}",
        body='{"name": "x"}',
        content_type=JSON,
        accept=fmt,
        api_key=api.static_key,
    )
    assert failure(as_json, 415, fmt)
    assert parse(await api.call("GET", f"/pet/{pet['id']}"), JSON) == pet  # nothing above changed it


# --- DELETE /pet/{petId} --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_pet(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    no_key = await api.call("DELETE", f"/pet/{pet['id']}", accept=fmt)
    assert failure(no_key, 401, fmt) == NO_KEY
    assert (await api.call("GET", f"/pet/{pet['id']}")).status == 200
    deleted = await api.call("DELETE", f"/pet/{pet['id']}", accept=fmt, api_key=api.static_key)
    assert success_message(deleted, fmt) == str(pet["id"])
    gone = await api.call("GET", f"/pet/{pet['id']}", accept=fmt)
    assert failure(gone, 404, fmt) == f"pet {pet['id']} not found"
    again = await api.call("DELETE", f"/pet/{pet['id']}", accept=fmt, api_key=api.static_key)
    assert failure(again, 404, fmt) == f"pet {pet['id']} not found"
    assert pet["id"] not in ids_of(await find_all(api, "/pet/findByTags", [("tags", f"tag-{unique}")]))


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_pet_errors(api: Api, fmt: str) -> None:
    absent = free_id()
    reply = await api.call("DELETE", f"/pet/{absent}", accept=fmt, api_key=api.static_key)
    assert failure(reply, 404, fmt) == f"pet {absent} not found"
    for bad_id in ("abc", "0", str(2**70)):
        bad = await api.call("DELETE", f"/pet/{bad_id}", accept=fmt, api_key=api.static_key)
        assert failure(bad, 400, fmt).startswith("Invalid ID supplied"), bad_id
    wrong_key = await api.call("DELETE", f"/pet/{absent}", accept=fmt, api_key="not-a-key")
    assert failure(wrong_key, 401, fmt) == "invalid api_key"


# --- POST /pet/{petId}/uploadImage ----------------------------------------------------------


def tiny_png() -> bytes:
    """A real 1x1 grey PNG: signature, IHDR, IDAT and IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x80")  # filter byte, one grey pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


PNG = tiny_png()
NOT_AN_IMAGE = "file is not a complete PNG, JPEG, GIF or WebP image"


def image_form(
    data: bytes = PNG, content_type: str = "image/png", metadata: str | None = "front view"
) -> FormData:
    form = FormData()
    if metadata is not None:
        form.add_field("additionalMetadata", metadata)
    form.add_field("file", io.BytesIO(data), filename="rex.png", content_type=content_type)
    return form


async def send_multipart(api: Api, path: str, form: FormData, fmt: str, *, key: bool = True) -> Reply:
    headers = {"Accept": fmt}
    if key:
        headers["api_key"] = api.static_key
    async with api.session.post(api.base_url + path, data=form, headers=headers) as response:
        return Reply(response.status, response.headers, await response.text())


async def upload(api: Api, pet_id: int | str, form: FormData, fmt: str, *, key: bool = True) -> Reply:
    return await send_multipart(api, f"/pet/{pet_id}/uploadImage", form, fmt, key=key)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_upload_image(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    reply = await upload(api, pet["id"], image_form(), fmt)
    message = success_message(reply, fmt)
    named = re.fullmatch(
        rf"additionalMetadata: front view\nimage ([0-9a-f]{{32}}) stored, {len(PNG)} bytes, "
        r"image/png, at (\S+)",
        message,
    )
    assert named is not None, message
    assert named[2] == f"{api.base_url}/pet/{pet['id']}/images/{named[1]}"
    without = await upload(api, pet["id"], image_form(metadata=None), fmt)
    assert success_message(without, fmt).startswith("additionalMetadata: null\n")
    other_id = re.findall(r"image (\S+) stored", success_message(without, fmt))
    assert other_id
    assert other_id[0] not in message  # each upload is its own image
    stored = parse(await api.call("GET", f"/pet/{pet['id']}"), JSON)
    assert stored == {**pet, "photoUrls": [*pet["photoUrls"], named[2], f"{named[2][:-32]}{other_id[0]}"]}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_upload_image_refuses_what_is_not_an_image(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    declared_text = await upload(api, pet["id"], image_form(b"hello", "text/plain"), fmt)
    assert failure(declared_text, 400, fmt) == NOT_AN_IMAGE
    fake_png = await upload(
        api, pet["id"], image_form(b"\x89PNG\r\n\x1a\n only the signature", "image/png"), fmt
    )
    assert failure(fake_png, 400, fmt) == NOT_AN_IMAGE
    truncated = await upload(api, pet["id"], image_form(PNG[:41]), fmt)  # cut inside its pixel data
    assert failure(truncated, 400, fmt) == NOT_AN_IMAGE
    empty = await upload(api, pet["id"], image_form(b""), fmt)
    assert failure(empty, 400, fmt) == "image data is required"
    no_file = FormData()
    no_file.add_field("additionalMetadata", "x")
    no_file.add_field("other", io.BytesIO(PNG), filename="rex.png", content_type="image/png")
    assert failure(await upload(api, pet["id"], no_file, fmt), 400, fmt) == (
        "file is required: a multipart part named file"
    )
    text_file = FormData()
    text_file.add_field("file", "not a file")
    text_file.add_field("x", io.BytesIO(b"force multipart"), filename="x.bin")
    assert failure(await upload(api, pet["id"], text_file, fmt), 400, fmt) == (
        "file must be a file part, not a text field"
    )
    urlencoded = await api.call(
        "POST",
        f"/pet/{pet['id']}/uploadImage",
        body=urlencode({"file": "x"}),
        content_type=FORM,
        accept=fmt,
        api_key=api.static_key,
    )
    assert failure(urlencoded, 415, fmt) == "Content-Type must be multipart/form-data"
    raw_png = await api.call(
        "POST",
        f"/pet/{pet['id']}/uploadImage",
        body=PNG,
        content_type="image/png",
        accept=fmt,
        api_key=api.static_key,
    )
    assert failure(raw_png, 415, fmt) == "Content-Type must be multipart/form-data"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_upload_image_over_the_size_cap_is_413(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    big = PNG + b"\x00" * MEBIBYTE
    reply = await upload(api, pet["id"], image_form(big), fmt)
    assert failure(reply, 413, fmt) == f"request body is larger than {MEBIBYTE} bytes"
    just_under = PNG + b"\x00" * (MEBIBYTE - len(PNG) - 4096)  # room for the multipart framing
    fits = await upload(api, pet["id"], image_form(just_under), fmt)
    assert f" stored, {len(just_under)} bytes, image/png, at " in success_message(fits, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_upload_image_errors(api: Api, unique: str, fmt: str) -> None:
    absent = free_id()
    unknown = await upload(api, absent, image_form(), fmt)
    assert failure(unknown, 404, fmt) == f"pet {absent} not found"
    pet = await create(api, a_pet(unique))
    no_key = await upload(api, pet["id"], image_form(), fmt, key=False)
    assert failure(no_key, 401, fmt) == NO_KEY
    for bad_id in ("zero", "0", "-1"):
        bad = await upload(api, bad_id, image_form(), fmt)
        assert failure(bad, 400, fmt).startswith("Invalid ID supplied"), bad_id


# --- HEAD -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_head_on_the_pet_lists_and_pet(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    absent = free_id()
    cases = [
        (f"/pet/{pet['id']}", None, 200),
        (f"/pet/{absent}", None, 404),
        ("/pet/abc", None, 400),
        ("/pet/findByStatus", {"status": "available"}, 200),
        ("/pet/findByStatus", {"status": "lost"}, 400),
        ("/pet/findByStatus", None, 400),
        ("/pet/findByTags", {"tags": f"tag-{unique}"}, 200),
        ("/pet/findByTags", None, 400),
    ]
    for path, params, status in cases:
        got = await api.call("GET", path, params=params, accept=fmt)
        head = await api.call("HEAD", path, params=params, accept=fmt)
        assert got.status == status, (path, params, got.text)
        assert head.status == status, (path, params)
        assert head.text == "", (path, params)
        assert head.headers["Content-Type"].startswith(fmt), (path, params)
