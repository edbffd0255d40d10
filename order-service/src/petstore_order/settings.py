"""The order service's settings: the shared ones plus where the pet service is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from petstore_common.settings import (
    ServiceSettings,
    SettingsError,
    caller_signing_key,
    env_float,
    env_int,
    env_str,
)
from petstore_order.sale import DEFAULT_RECOVER_AFTER_SECONDS, DEFAULT_RECOVERY_INTERVAL_SECONDS
from petstore_order.servicer import DEFAULT_MAX_OPEN_ORDERS

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
    caller_signing_key: str = field(repr=False)
    """CALLER_SIGNING_KEY: the order service signs its calls to the pet service with it (as the
    issuer "order-service"); a secret, so never part of repr or logs."""
    reserve_pets: bool = True
    """ORDER_RESERVES_PET: an order reserves its pet, delivery sells it, cancelling frees it (a
    pet is sold once). false: the classic rule, where every order stands alone."""
    sale_recover_after_seconds: float = DEFAULT_RECOVER_AFTER_SECONDS
    """A step of a sale left unfinished this long is finished or undone by recovery."""
    sale_recovery_interval_seconds: float = DEFAULT_RECOVERY_INTERVAL_SECONDS
    """How often recovery looks for such steps."""
    max_open_orders_per_customer: int = DEFAULT_MAX_OPEN_ORDERS
    """Placed or approved orders one customer may hold at once (0: no bound)."""

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
            caller_signing_key=caller_signing_key(env),
            reserve_pets=_env_bool(env, "ORDER_RESERVES_PET", True),
            sale_recover_after_seconds=env_float(
                env, "SALE_RECOVER_AFTER_SECONDS", DEFAULT_RECOVER_AFTER_SECONDS, minimum=0.1
            ),
            sale_recovery_interval_seconds=env_float(
                env, "SALE_RECOVERY_INTERVAL_SECONDS", DEFAULT_RECOVERY_INTERVAL_SECONDS, minimum=0.1
            ),
            max_open_orders_per_customer=env_int(
                env, "MAX_OPEN_ORDERS_PER_CUSTOMER", DEFAULT_MAX_OPEN_ORDERS
            ),
        )


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false, not {raw!r}")
