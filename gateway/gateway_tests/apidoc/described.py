"""Reading the served descriptions in tests: which operations, which statuses."""

from __future__ import annotations

from typing import Any

from ..conftest import Client

HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch"})


async def fetch(client: Client, path: str) -> dict[str, Any]:
    response = await client.get(path)
    assert response.status == 200, await response.text()
    assert response.content_type == "application/json"
    document: dict[str, Any] = await response.json()
    return document


async def both_documents(client: Client) -> dict[str, dict[str, Any]]:
    return {
        "swagger": await fetch(client, "/v2/swagger.json"),
        "openapi": await fetch(client, "/v2/openapi.json"),
    }


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
