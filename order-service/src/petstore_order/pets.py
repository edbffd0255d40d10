"""The one question the order service asks the pet service: does this pet exist?"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

import grpc

from petstore.pet.v1 import pet_service_pb2, pet_service_pb2_grpc
from petstore_common.errors import Unavailable
from petstore_common.grpc_client import create_channel

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

PET_SERVICE_UNAVAILABLE = "the pet service is unavailable"

log = logging.getLogger(__name__)


class PetDirectory(Protocol):
    async def exists(self, pet_id: int, *, budget_seconds: float | None = None) -> bool:
        """Whether the pet exists; Unavailable when that cannot be known right now.
        `budget_seconds` is what is left of the caller's own deadline, if it has one."""


class GrpcPetDirectory:
    """Asks PetService.GetPet. Only NOT_FOUND means "no such pet": any other failure (the
    service down, slow or broken) is Unavailable, so an outage is never reported as a
    missing pet."""

    def __init__(self, channel: grpc.aio.Channel, *, timeout_seconds: float) -> None:
        self._stub: PetServiceAsyncStub = pet_service_pb2_grpc.PetServiceStub(channel)
        self._timeout_seconds = timeout_seconds

    async def exists(self, pet_id: int, *, budget_seconds: float | None = None) -> bool:
        # Never wait longer than our caller will: its deadline travels on to the pet service.
        timeout = (
            self._timeout_seconds if budget_seconds is None else min(self._timeout_seconds, budget_seconds)
        )
        try:
            await self._stub.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return False
            log.warning("pet service call failed", extra={"grpc_code": exc.code().name})
            raise Unavailable(PET_SERVICE_UNAVAILABLE) from None
        return True


@asynccontextmanager
async def grpc_pet_directory(address: str, *, timeout_seconds: float) -> AsyncIterator[GrpcPetDirectory]:
    """A directory over one channel to `address`, closed on exit. The channel connects lazily
    and reconnects by itself, so the pet service may start after (or restart under) us."""
    async with create_channel(address) as channel:
        yield GrpcPetDirectory(channel, timeout_seconds=timeout_seconds)
