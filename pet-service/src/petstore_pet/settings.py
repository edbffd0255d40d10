"""The pet service's settings: the shared ones (it reads nothing else)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from petstore_common.settings import ServiceSettings

DEFAULT_PORT = 50051
DEFAULT_DATABASE = "petstore_pet"


@dataclass(frozen=True, slots=True)
class PetSettings:
    """Everything the pet service reads from its environment, read once at start-up."""

    service: ServiceSettings

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PetSettings:
        env = os.environ if env is None else env
        return cls(
            ServiceSettings.from_env(default_port=DEFAULT_PORT, default_database=DEFAULT_DATABASE, env=env)
        )
