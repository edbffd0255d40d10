"""The tests of deploy/k8s against a running cluster: `make e2e-k8s` (deploy/k8s/e2e.sh)
starts k3s, applies the manifests and runs them with PETSTORE_E2E_MODE=k8s. Outside that run
(e.g. `make test`) there is no cluster, and tests/conftest.py leaves this folder out."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from aiohttp import ClientSession, ClientTimeout

from tests.e2e import tls
from tests.e2e.client import JSON, Api
from tests.e2e.test_pets import a_pet


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("PETSTORE_E2E_BASE_URL", "")
    assert url.startswith(("http://127.", "https://127.")), "the tests send traffic only to 127.0.0.0/8"
    return url


@pytest.fixture(scope="session")
def api_key() -> str:
    return os.environ["PETSTORE_API_KEYS"].split(",")[0]


@pytest.fixture
async def api(base_url: str, api_key: str) -> AsyncIterator[Api]:
    connector = tls.connector()  # through the TLS proxy: the run's certificate
    async with ClientSession(timeout=ClientTimeout(total=15), connector=connector) as session:
        yield Api(session, base_url, api_key)


@pytest.fixture
async def pet_tag(api: Api) -> str:
    """The tag of a fresh pet: GET /pet/findByTags with it reaches pet-service on every call
    (the gateway caches GET /pet/{id}, not searches) and answers that one pet."""
    unique = uuid.uuid4().hex[:10]
    reply = await api.send("POST", "/pet", a_pet(unique), JSON)
    assert reply.status == 200, reply.text
    return f"tag-{unique}"
