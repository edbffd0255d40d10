"""The order service's settings: the shared ones plus where the pet service is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from petstore_common.settings import ServiceSettings, env_float, env_str

DEFAULT_PORT = 50052
DEFAULT_DATABASE = "petstore_order"
DEFAULT_PET_SERVICE_ADDR = "127.0.0.1:50051"
DEFAULT_PET_SERVICE_TIMEOUT_SECONDS = 2.0
MIN_PET_SERVICE_TIMEOUT_SECONDS = 0.01


@dataclass(frozen=True, slots=True)
class OrderSettings:
    """Everything the order service reads from its environment, read once at start-up."""

    service: ServiceSettings
    pet_service_addr: str
    """host:port of the pet service, asked whether an order's pet exists."""
    pet_service_timeout_seconds: float
    """Deadline of each GetPet call: a hung pet service turns into UNAVAILABLE, not a hung order."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OrderSettings:
        env = os.environ if env is None else env
        return cls(
            service=ServiceSettings.from_env(
                default_port=DEFAULT_PORT, default_database=DEFAULT_DATABASE, env=env
            ),
            pet_service_addr=env_str(env, "PET_SERVICE_ADDR", DEFAULT_PET_SERVICE_ADDR),
            pet_service_timeout_seconds=env_float(
                env,
                "PET_SERVICE_TIMEOUT_SECONDS",
                DEFAULT_PET_SERVICE_TIMEOUT_SECONDS,
                minimum=MIN_PET_SERVICE_TIMEOUT_SECONDS,
            ),
        )
