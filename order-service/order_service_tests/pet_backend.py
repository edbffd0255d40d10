"""A pet service stand-in in this process, for the order service to ask over gRPC.

It answers the two questions the order service asks of the pet service (FindExistingPets, and
GetPet from a pet service of an earlier release) from a set of pet ids, on the shared server
bootstrap, so the order service's tests need nothing of the pet service's package: each
service's tests stand on their own, and only the contract (protos/) binds the two.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.caller_testing import trusting_env
from petstore_common.grpc_server import RunningService, ServiceDefinition, start_service
from petstore_common.settings import ServiceSettings

SERVICE_NAME = "petstore.pet.v1.PetService"
Context = grpc.aio.ServicerContext[Any, Any]


def local_settings(listen_addr: str = "127.0.0.1:0") -> ServiceSettings:
    """Settings of an in-process server on loopback (port 0 picks a free port), trusting the
    test run's callers (the gateway's and the order service's keys)."""
    return ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": listen_addr, **trusting_env()}
    )


@dataclass(eq=False)
class PetStandIn:
    """Pets by id, as far as the order service asks; every other RPC is UNIMPLEMENTED."""

    pet_ids: set[int] = field(default_factory=set)

    async def GetPet(
        self, request: pet_service_pb2.GetPetRequest, context: Context
    ) -> pet_service_pb2.GetPetResponse:
        if request.id not in self.pet_ids:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"pet {request.id} not found")
        pet = pet_pb2.Pet(id=request.id, name="Rex", status=pet_pb2.PET_STATUS_AVAILABLE, version=1)
        return pet_service_pb2.GetPetResponse(pet=pet)

    async def FindExistingPets(
        self, request: pet_service_pb2.FindExistingPetsRequest, context: Context
    ) -> pet_service_pb2.FindExistingPetsResponse:
        return pet_service_pb2.FindExistingPetsResponse(ids=sorted(set(request.ids) & self.pet_ids))

    def register(self, server: grpc.aio.Server) -> None:
        methods: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            "GetPet": grpc.unary_unary_rpc_method_handler(
                self.GetPet,
                request_deserializer=pet_service_pb2.GetPetRequest.FromString,
                response_serializer=pet_service_pb2.GetPetResponse.SerializeToString,
            ),
            "FindExistingPets": grpc.unary_unary_rpc_method_handler(
                self.FindExistingPets,
                request_deserializer=pet_service_pb2.FindExistingPetsRequest.FromString,
                response_serializer=pet_service_pb2.FindExistingPetsResponse.SerializeToString,
            ),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, methods),))


@dataclass
class PetBackend:
    pets: PetStandIn
    running: RunningService

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.running.port}"

    async def add_pet(self, pet_id: int | None = None) -> int:
        """A pet (under `pet_id` when given, else the next free id); returns its id."""
        if pet_id is None:
            pet_id = next(i for i in itertools.count(1) if i not in self.pets.pet_ids)
        self.pets.pet_ids.add(pet_id)
        return pet_id


async def _always_ready() -> None:
    """Nothing to reach: the pets are in memory."""


@asynccontextmanager
async def pet_backend(listen_addr: str = "127.0.0.1:0") -> AsyncIterator[PetBackend]:
    pets = PetStandIn()
    definition = ServiceDefinition(SERVICE_NAME, pets.register, _always_ready)
    running = await start_service(definition, local_settings(listen_addr))
    try:
        yield PetBackend(pets, running)
    finally:
        await running.stop(None)


def closed_address() -> str:
    """A loopback address nothing listens on: a port the OS just handed out and took back."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"
