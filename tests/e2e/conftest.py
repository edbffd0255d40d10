"""The stack under test: real processes talking real gRPC, driven over HTTP.

The stack runs on MONGODB_URI when one is given (`make test` starts FerretDB), else on the
embedded store. Set PETSTORE_E2E_BASE_URL to point the same tests at a stack started
elsewhere (e.g. docker compose).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import ClientSession, ClientTimeout

from petstore_devstack.stack import Stack
from tests.e2e.client import Api

STATIC_KEY = "e2e-static-key-0123456789"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    log_dir: Path = tmp_path_factory.mktemp("stack-logs")
    stack = Stack(
        mongodb_uri=os.environ.get("MONGODB_URI", ""),
        api_keys=STATIC_KEY,
        database_prefix=f"e2e_{uuid.uuid4().hex[:8]}",
        log_dir=log_dir,
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def base_url(stack: Stack) -> str:
    return os.environ.get("PETSTORE_E2E_BASE_URL") or stack.base_url


@pytest.fixture
async def api(base_url: str) -> AsyncIterator[Api]:
    async with ClientSession(timeout=ClientTimeout(total=15)) as session:
        yield Api(session, base_url, STATIC_KEY)


@pytest.fixture
def unique() -> str:
    """A suffix that keeps each test's data apart from every other test's."""
    return uuid.uuid4().hex[:10]
