"""Versions end to end: ETags per representation, 304 on If-None-Match, 412 on a stale
If-Match, for pets and users (RFC 9110 sections 8.8.3 and 13)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.callers import Cast, as_
from tests.e2e.client import JSON, XML, Api, Reply, parse, to_xml
from tests.e2e.test_pet_catalogue import failure

FORMATS = [JSON, XML]
VERSIONED = re.compile(r'"([1-9][0-9]*)-[0-9a-f]{16}"')


def version_of(reply: Reply) -> int:
    match = VERSIONED.fullmatch(reply.headers["ETag"])
    assert match is not None, reply.headers.get("ETag")
    return int(match.group(1))


async def get(api: Api, path: str, fmt: str, key: str | None, **headers: str) -> Reply:
    return await api.call("GET", path, accept=fmt, api_key=key, headers=headers)


async def put(api: Api, path: str, payload: dict[str, Any], fmt: str, key: str, **headers: str) -> Reply:
    body = json.dumps(payload) if fmt == JSON else to_xml(payload, "Pet" if path == "/pet" else "User")
    return await api.call("PUT", path, body=body, content_type=fmt, accept=fmt, api_key=key, headers=headers)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_pet_revalidates_and_a_stale_write_is_412(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/pet/{cast.pet['id']}"
    first = await get(api, path, fmt, None)
    etag = first.headers["ETag"]
    other_format = await get(api, path, XML if fmt == JSON else JSON, None)

    assert version_of(first) == version_of(other_format) == 1
    assert other_format.headers["ETag"] != etag  # one tag per representation
    not_modified = await get(api, path, fmt, None, **{"If-None-Match": etag})
    assert (not_modified.status, not_modified.text, not_modified.headers["ETag"]) == (304, "", etag)

    renamed = await put(
        api, "/pet", {**cast.pet, "name": "Renamed"}, fmt, api.static_key, **{"If-Match": etag}
    )
    assert (parse(renamed, fmt)["name"], version_of(renamed)) == ("Renamed", 2)
    stale = await put(
        api, "/pet", {**cast.pet, "name": "Lost update"}, fmt, api.static_key, **{"If-Match": etag}
    )
    assert failure(stale, 412, fmt)
    assert parse(await get(api, path, fmt, None), fmt)["name"] == "Renamed"
    changed = await get(api, path, fmt, None, **{"If-None-Match": etag})
    assert (changed.status, version_of(changed)) == (200, 2)
    # Without If-Match a write goes ahead as before.
    assert (await put(api, "/pet", {**cast.pet, "name": "Plain"}, fmt, api.static_key)).status == 200


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_stale_form_update_is_412(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/pet/{cast.pet['id']}"
    etag = (await get(api, path, fmt, None)).headers["ETag"]
    assert (await put(api, "/pet", {**cast.pet, "status": "sold"}, fmt, api.static_key)).status == 200

    form = await api.call(
        "POST",
        path,
        body="name=Late",
        content_type="application/x-www-form-urlencoded",
        accept=fmt,
        api_key=api.static_key,
        headers={"If-Match": etag},
    )

    assert failure(form, 412, fmt)
    assert parse(await get(api, path, fmt, None), fmt)["name"] == cast.pet["name"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_user_revalidates_and_a_stale_update_is_412(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/user/{cast.ann.username}"
    own = await get(api, path, fmt, cast.ann.token)
    etag = own.headers["ETag"]
    assert version_of(own) == 1
    not_modified = await get(api, path, fmt, cast.ann.token, **{"If-None-Match": etag})
    assert (not_modified.status, not_modified.text) == (304, "")

    change = {"username": cast.ann.username, "email": "ann@example.test", "firstName": "Annie"}
    assert (await put(api, path, change, fmt, cast.ann.token, **{"If-Match": etag})).status == 200
    stale = await put(api, path, {**change, "firstName": "Lost"}, fmt, cast.ann.token, **{"If-Match": etag})

    assert failure(stale, 412, fmt)
    after = await get(api, path, fmt, cast.ann.token)
    assert (parse(after, fmt)["firstName"], version_of(after)) == ("Annie", 2)


async def test_the_public_view_of_a_user_has_a_tag_that_hides_the_version(api: Api, cast: Cast) -> None:
    public = await as_(api, cast.bob.token, "GET", f"/user/{cast.ann.username}", JSON)
    assert re.fullmatch(r'"p-[0-9a-f]{16}"', public.headers["ETag"])
    again = await get(
        api, f"/user/{cast.ann.username}", JSON, None, **{"If-None-Match": public.headers["ETag"]}
    )
    assert again.status == 304
