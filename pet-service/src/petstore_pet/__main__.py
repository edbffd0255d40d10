"""`python -m petstore_pet`: serve the pet service until SIGTERM."""

from __future__ import annotations

from petstore_common.grpc_server import run_service
from petstore_pet.service import pet_service
from petstore_pet.settings import PetSettings


def main() -> None:
    run_service("pet-service", PetSettings.from_env, pet_service)


if __name__ == "__main__":
    main()
