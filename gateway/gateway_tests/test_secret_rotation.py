"""Rotating secrets logs nobody out: a session signed with a previous session secret and a staff
key still listed are served; a secret or key since removed is refused with the usual 401 (what
docs/rotating-secrets.md promises). Settings are read at start: a list changes with a restart or
a rollout, which these tests stand for by building a gateway from the new environment."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from petstore_gateway.settings import GatewaySettings

from .backend import SESSION_SECRET, Backend
from .conftest import Client, serve_gateway

NEXT_SECRET = "next-session-secret-" + "n" * 32
"""The secret a rotation moves to; the backend's user service signs with SESSION_SECRET."""
ORDERS = "/v2/store/order"
"""Open to any authenticated caller: 200 with a credential that is believed, 401 without."""


@asynccontextmanager
async def gateway(backend: Backend, **env: str) -> AsyncIterator[Client]:
    """A gateway started with `env` in front of the backend: a process after a rollout."""
    settings = GatewaySettings.from_env({"GRPC_TIMEOUT_SECONDS": "2", **env})
    async for client in serve_gateway(settings, backend.clients()):
        yield client


async def status_of(client: Client, credential: str) -> tuple[int, dict[str, object]]:
    async with client.get(ORDERS, headers={"api_key": credential, "Accept": "application/json"}) as reply:
        return reply.status, json.loads(await reply.read())


@pytest.mark.parametrize(
    ("current", "previous"),
    [
        (NEXT_SECRET, SESSION_SECRET),  # rotated: the session's secret is now a previous one
        (SESSION_SECRET, NEXT_SECRET),  # the next secret announced before anybody signs with it
    ],
)
async def test_a_session_signed_with_a_listed_secret_is_served(
    backend: Backend, current: str, previous: str
) -> None:
    token = await backend.customer("ann", 7)  # signed with SESSION_SECRET
    env = {"PETSTORE_SESSION_SECRET": current, "PETSTORE_SESSION_SECRETS_PREVIOUS": previous}
    async with gateway(backend, **env) as client:
        status, _ = await status_of(client, token)
    assert status == 200


async def test_a_session_signed_with_a_removed_secret_is_refused(backend: Backend) -> None:
    token = await backend.customer("ann", 7)
    async with gateway(backend, PETSTORE_SESSION_SECRET=NEXT_SECRET) as client:
        status, body = await status_of(client, token)
    assert status == 401
    assert body == {"code": 401, "type": "error", "message": "invalid api_key"}
    assert await backend.session_active(token)  # open at the user service: the secret decided


async def test_both_staff_keys_work_during_a_rotation_and_a_removed_one_is_refused(
    backend: Backend,
) -> None:
    async with gateway(
        backend, PETSTORE_SESSION_SECRET=SESSION_SECRET, PETSTORE_API_KEYS="old-staff-key,new-staff-key"
    ) as client:
        assert [(await status_of(client, key))[0] for key in ("old-staff-key", "new-staff-key")] == [200, 200]
    async with gateway(
        backend, PETSTORE_SESSION_SECRET=SESSION_SECRET, PETSTORE_API_KEYS="new-staff-key"
    ) as client:
        assert (await status_of(client, "new-staff-key"))[0] == 200
        status, body = await status_of(client, "old-staff-key")
    assert status == 401
    assert body == {"code": 401, "type": "error", "message": "invalid api_key"}
