"""Run as a script by the skew tests: the working tree's pet service (memory store) on the protos
first on PYTHONPATH, those of a release whose Pet has one more field. Prints its port, then
serves until its stdin closes. Trusts the callers TRUSTED_CALLER_KEYS names."""

from __future__ import annotations

import asyncio
import os
import sys

from petstore.pet.v1 import pet_pb2
from petstore_common.grpc_server import start_service
from petstore_common.settings import ServiceSettings
from petstore_pet.service import build_definition
from petstore_pet.storage.memory import MemoryPetStore


async def serve(added_field: str) -> None:
    if added_field not in pet_pb2.Pet.DESCRIPTOR.fields_by_name:
        sys.exit(f"these protos' Pet has no {added_field}: {pet_pb2.__file__}")
    settings = ServiceSettings.from_env(
        default_port=0,
        default_database="unused",
        env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", "TRUSTED_CALLER_KEYS": os.environ["TRUSTED_CALLER_KEYS"]},
    )
    service = await start_service(build_definition(MemoryPetStore()), settings)
    print(service.port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await service.stop(None)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
