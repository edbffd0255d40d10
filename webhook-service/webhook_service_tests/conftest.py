"""Fixtures the webhook service's tests share: an embedded store, a resolver that answers
from a table instead of DNS, and the settings of an in-process server."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

import pytest

from petstore_common.caller_testing import trusting_env
from petstore_common.settings import ServiceSettings
from petstore_webhook.storage.memory import MemoryWebhookStore


class FakeResolver:
    """Host -> its addresses; a host it does not know does not resolve. Records what it was asked."""

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self.table = dict(table)
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        try:
            return list(self.table[host])
        except KeyError:
            raise OSError(f"{host}: name or service not known") from None


PUBLIC_HOST = "hooks.example.com"
PUBLIC_ADDRESS = "93.184.215.14"


@pytest.fixture
def store() -> MemoryWebhookStore:
    return MemoryWebhookStore()


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver({PUBLIC_HOST: [PUBLIC_ADDRESS]})


def local_settings() -> ServiceSettings:
    """An in-process server on a free loopback port, trusting the test run's callers."""
    return ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )


def closed_address() -> str:
    """A loopback address nothing listens on: a port the OS just handed out and took back."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"
