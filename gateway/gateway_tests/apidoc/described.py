"""Reading the served descriptions in tests: which operations, which statuses."""

from __future__ import annotations

import json
from typing import Any

from ..conftest import Client

HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch"})


DOCUMENT_PATHS = {"swagger": "/v2/swagger.json", "openapi": "/v2/openapi.json"}


async def fetch_raw(client: Client, path: str) -> bytes:
    """The body of a description as served (a 200 of JSON)."""
    response = await client.get(path)
    assert response.status == 200, await response.text()
    assert response.content_type == "application/json"
    return await response.read()


async def fetch(client: Client, path: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(await fetch_raw(client, path))
    return document


async def both_documents(client: Client) -> dict[str, dict[str, Any]]:
    return {name: await fetch(client, path) for name, path in DOCUMENT_PATHS.items()}


def base_path(document: dict[str, Any]) -> str:
    if "swagger" in document:
        return str(document["basePath"])
    return str(document["servers"][0]["url"])


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(METHOD, route template as the gateway routes it) -> the operation."""
    base = base_path(document)
    return {
        (method.upper(), base + path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    }


def statuses(document: dict[str, Any], method: str, route: str) -> set[int]:
    return {int(status) for status in operations(document)[(method, route)]["responses"]}
