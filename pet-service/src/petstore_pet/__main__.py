"""`python -m petstore_pet`: serve the pet service until SIGTERM."""

from __future__ import annotations

import asyncio

from petstore_common.grpc_server import serve
from petstore_common.logging import configure_logging
from petstore_common.settings import ServiceSettings
from petstore_pet.service import pet_service


def main() -> None:
    settings = ServiceSettings.from_env(default_port=50051, default_database="petstore_pet")
    configure_logging("pet-service", settings.log_level)
    asyncio.run(serve(pet_service, settings))


if __name__ == "__main__":
    main()
