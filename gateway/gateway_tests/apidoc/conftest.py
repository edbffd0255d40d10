"""The served descriptions, fetched once for the package's tests.

A gateway builds both documents once, at start-up, from its operations and settings, and serves
the same bytes to every request: a test that only reads them needs no services and no gateway of
its own. One gateway with the tests' default settings, in front of the real services, serves them
once a session (checked as any response: 200 and JSON); each test parses its own copy, so that
nothing one test does to its dicts reaches another."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from typing import Any

import pytest

from ..backend import running_backend
from ..conftest import default_settings, serve_gateway
from .described import DOCUMENT_PATHS, fetch_raw

ServedDocuments = dict[str, bytes]
"""Document name ("swagger", "openapi") -> the body the gateway served."""


async def _serve_once() -> ServedDocuments:
    async with (
        running_backend() as backend,
        aclosing(serve_gateway(default_settings(), backend.clients())) as served,
    ):
        async for client in served:
            return {name: await fetch_raw(client, path) for name, path in DOCUMENT_PATHS.items()}
    raise AssertionError("the gateway never served")


@pytest.fixture(scope="session")
def served_documents() -> ServedDocuments:
    return asyncio.run(_serve_once())


@pytest.fixture
def documents(served_documents: ServedDocuments) -> dict[str, dict[str, Any]]:
    """Both documents as the gateway serves them, this test's own copy."""
    return {name: json.loads(body) for name, body in served_documents.items()}
