"""Pets through the gateway: POST/PUT /pet, GET /pet/{petId}, in JSON and XML."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, parse

FORMATS = [JSON, XML]


def a_pet(unique: str, **fields: Any) -> dict[str, Any]:
    pet: dict[str, Any] = {
        "category": {"id": 1, "name": "Dogs"},
        "name": f"rex-{unique}",
        "photoUrls": ["https://example.test/rex.png"],
        "tags": [{"id": 7, "name": f"tag-{unique}"}],
        "status": "available",
    }
    pet.update(fields)
    return pet


def free_id() -> int:
    """A client-chosen id far from the server's counter."""
    return random.randint(10**12, 2**62)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_created_pet_reads_back_identically(api: Api, unique: str, fmt: str) -> None:
    created = parse(await api.send("POST", "/pet", a_pet(unique), fmt), fmt)
    assert isinstance(created["id"], int)
    assert created["id"] > 0
    assert created == {**a_pet(unique), "id": created["id"]}
    for read_fmt in FORMATS:
        read = parse(await api.call("GET", f"/pet/{created['id']}", accept=read_fmt), read_fmt)
        assert read == created


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_client_chosen_id_is_kept_and_never_overwritten(api: Api, unique: str, fmt: str) -> None:
    pet_id = free_id()
    first = parse(await api.send("POST", "/pet", a_pet(unique, id=pet_id), fmt), fmt)
    assert first["id"] == pet_id
    again = await api.send("POST", "/pet", a_pet(unique, id=pet_id, name="intruder"), fmt)
    assert again.status == 409
    assert str(pet_id) in again.error_message()
    still = parse(await api.call("GET", f"/pet/{pet_id}"), JSON)
    assert still["name"] == f"rex-{unique}"


async def test_forty_parallel_creates_get_forty_distinct_ids(api: Api, unique: str) -> None:
    replies = await asyncio.gather(
        *(api.send("POST", "/pet", a_pet(f"{unique}-{i}"), JSON) for i in range(40))
    )
    assert [r.status for r in replies] == [200] * 40
    ids = {r.json["id"] for r in replies}
    assert len(ids) == 40


INVALID_PETS = {
    "no-name": {"name": None},
    "no-photoUrls": {"photoUrls": None},
    "empty-name": {"name": ""},
    "bad-status": {"status": "lost"},
    "id-type": {"id": "seven"},
    "id-0": {"id": 0},
    "id-negative": {"id": -4},
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("change", INVALID_PETS.values(), ids=INVALID_PETS.keys())
async def test_invalid_pets_are_405(api: Api, unique: str, fmt: str, change: dict[str, Any]) -> None:
    pet = {k: v for k, v in {**a_pet(unique), **change}.items() if v is not None}
    reply = await api.send("POST", "/pet", pet, fmt)
    assert reply.status == 405, reply.text
    assert reply.error_message()


async def test_wrongly_typed_json_fields_are_405(api: Api, unique: str) -> None:
    changes = (
        {"name": 5},
        {"tags": [{"id": "x"}]},
        {"category": "Dogs"},
        {"photoUrls": "x"},
        {"photoUrls": [1]},
    )
    for change in changes:
        reply = await api.send("POST", "/pet", {**a_pet(unique), **change}, JSON)
        assert reply.status == 405, (change, reply.text)


@pytest.mark.parametrize(("fmt", "body"), [(JSON, '{"name": "x",'), (XML, "<Pet><name>x</Pet>")])
async def test_unparseable_bodies_are_400(api: Api, fmt: str, body: str) -> None:
    for method in ("POST", "PUT"):
        reply = await api.call(
            method, "/pet", body=body, content_type=fmt, accept=fmt, api_key=api.static_key
        )
        assert reply.status == 400, reply.text
        assert reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_update_replaces_a_pet(api: Api, unique: str, fmt: str) -> None:
    created = parse(await api.send("POST", "/pet", a_pet(unique), fmt), fmt)
    changed = {**created, "name": f"max-{unique}", "status": "sold", "tags": []}
    updated = parse(await api.send("PUT", "/pet", changed, fmt), fmt)
    assert updated["name"] == f"max-{unique}"
    assert updated["status"] == "sold"
    assert parse(await api.call("GET", f"/pet/{created['id']}"), JSON)["name"] == f"max-{unique}"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_update_errors(api: Api, unique: str, fmt: str) -> None:
    unknown = await api.send("PUT", "/pet", a_pet(unique, id=free_id()), fmt)
    assert unknown.status == 404, unknown.text
    assert unknown.error_message()
    no_id = await api.send("PUT", "/pet", a_pet(unique), fmt)
    assert no_id.status == 405, no_id.text
    invalid = await api.send("PUT", "/pet", a_pet(unique, id=free_id(), status="lost"), fmt)
    assert invalid.status == 405, invalid.text


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("pet_id", ["abc", "1.5", str(2**70), "0", "-3", str(2**63)])
async def test_get_with_a_bad_id_is_400(api: Api, fmt: str, pet_id: str) -> None:
    reply = await api.call("GET", f"/pet/{pet_id}", accept=fmt)
    assert reply.status == 400, reply.text
    assert reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_get_unknown_pet_is_404(api: Api, fmt: str) -> None:
    reply = await api.call("GET", f"/pet/{free_id()}", accept=fmt)
    assert reply.status == 404
    assert "not found" in reply.error_message()


async def test_hostile_xml_is_refused_fast(api: Api) -> None:
    xxe = (
        '<?xml version="1.0"?><!DOCTYPE Pet [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<Pet><name>&x;</name><photoUrls/></Pet>"
    )
    lol = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)
    )
    bomb = lol + "]><Pet><name>&lol9;</name><photoUrls/></Pet>"
    for body in (xxe, bomb):
        started = time.monotonic()
        reply = await api.call(
            "POST", "/pet", body=body, content_type=XML, accept=XML, api_key=api.static_key
        )
        assert reply.status == 400, reply.text
        assert time.monotonic() - started < 1.0
        assert "root:" not in reply.text
        assert "lollol" not in reply.text


async def test_bodies_over_one_mebibyte_are_413(api: Api, unique: str) -> None:
    pet = a_pet(unique, name="x" * (1024 * 1024 + 10))
    reply = await api.call("POST", "/pet", body=json.dumps(pet), content_type=JSON, api_key=api.static_key)
    assert reply.status == 413
    assert reply.error_message()


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("*/*", JSON),
        ("application/xml", XML),
        ("application/xml;q=0.5, application/json;q=0.9", JSON),
        ("application/json;q=0.1, application/xml", XML),
        ("text/html, application/*;q=0.2", JSON),
    ],
)
async def test_accept_chooses_the_format(api: Api, unique: str, accept: str | None, expected: str) -> None:
    created = (await api.send("POST", "/pet", a_pet(unique), JSON)).json
    reply = await api.call("GET", f"/pet/{created['id']}", accept=accept)
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith(expected)


async def test_nothing_acceptable_is_406(api: Api) -> None:
    reply = await api.call("GET", "/pet/1", accept="text/html")
    assert reply.status == 406
    assert reply.error_message()


@pytest.mark.parametrize("content_type", ["application/octet-stream", "text/plain", "application/x-yaml"])
async def test_an_unsupported_content_type_is_415(api: Api, unique: str, content_type: str) -> None:
    reply = await api.call(
        "POST",
        "/pet",
        body=json.dumps(a_pet(unique)).encode(),
        content_type=content_type,
        api_key=api.static_key,
    )
    assert reply.status == 415, reply.text
    assert reply.error_message()


async def test_request_ids_are_echoed_or_made(api: Api) -> None:
    given = await api.call("GET", "/pet/1", headers={"X-Request-ID": "e2e-trace-1"})
    assert given.headers["X-Request-ID"] == "e2e-trace-1"
    made = await api.call("GET", "/pet/abc")
    assert made.status == 400
    assert made.headers["X-Request-ID"]
    hostile = await api.call("GET", "/pet/1", headers={"X-Request-ID": "a b<script>"})
    assert hostile.headers["X-Request-ID"] != "a b<script>"


@pytest.mark.since("pet-service", "1.1.0")
@pytest.mark.parametrize(
    "url", ["javascript:alert(document.cookie)", " JavaScript:alert(1)", "data:text/html,<script>x</script>"]
)
async def test_photo_urls_that_would_run_in_a_page_are_405(api: Api, unique: str, url: str) -> None:
    pet = {**a_pet(unique), "photoUrls": ["https://example.com/ok.png", url]}
    reply = await api.send("POST", "/pet", pet, JSON)
    assert reply.status == 405, reply.text
    assert "photoUrls[1]: must be an http or https URL" in reply.error_message()
