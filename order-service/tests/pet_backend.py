"""A real pet service in this process (memory store), for the order service to ask over gRPC."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from petstore.pet.v1 import pet_pb2
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.settings import ServiceSettings
from petstore_pet.service import build_definition
from petstore_pet.storage.memory import MemoryPetStore


def local_settings(listen_addr: str = "127.0.0.1:0") -> ServiceSettings:
    """Settings of an in-process server on loopback (port 0 picks a free port)."""
    return ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": listen_addr}
    )


@dataclass
class PetBackend:
    store: MemoryPetStore
    running: RunningService

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.running.port}"

    async def add_pet(self, pet_id: int | None = None) -> int:
        """Store a pet (under `pet_id` when given); returns its id."""
        pet = pet_pb2.Pet(name="Rex", status=pet_pb2.PET_STATUS_AVAILABLE)
        if pet_id is not None:
            pet.id = pet_id
        return (await self.store.create(pet)).id


@asynccontextmanager
async def pet_backend(listen_addr: str = "127.0.0.1:0") -> AsyncIterator[PetBackend]:
    store = MemoryPetStore()
    running = await start_service(build_definition(store), local_settings(listen_addr))
    try:
        yield PetBackend(store, running)
    finally:
        await running.stop(None)


def closed_address() -> str:
    """A loopback address nothing listens on: a port the OS just handed out and took back."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"
