"""The webhook service's settings: the shared ones, where the order and pet services are, and
how deliveries are made (where to, how often retried, how long waited for)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from petstore_common.settings import (
    ServiceSettings,
    SettingsError,
    caller_signing_key,
    env_float,
    env_int,
    env_list,
    env_str,
)
from petstore_webhook.targets import IPNetwork

DEFAULT_PORT = 50054
"""After the pet (50051), order (50052) and user (50053) services."""
DEFAULT_DATABASE = "petstore_webhook"
DEFAULT_ORDER_SERVICE_ADDR = "127.0.0.1:50052"
DEFAULT_PET_SERVICE_ADDR = "127.0.0.1:50051"
DEFAULT_MAX_ATTEMPTS = 30
"""With the default backoff, retries go on for up to about 19 hours (about half that on
average, the waits being jittered): a receiver down overnight is not disabled."""
DEFAULT_RETRY_BASE_SECONDS = 2.0
DEFAULT_RETRY_MAX_SECONDS = 3600.0
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_POLL_SECONDS = 1.0
MIN_SECONDS = 0.01
"""The shortest wait any of the time settings takes: zero would spin."""


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """Everything the webhook service reads from its environment, read once at start-up."""

    service: ServiceSettings
    order_service_addr: str
    """host:port of the order service, whose order events are read (ReadOrderEvents)."""
    pet_service_addr: str
    """host:port of the pet service, whose pet events are read (ReadPetEvents)."""
    caller_signing_key: str = field(repr=False)
    """CALLER_SIGNING_KEY: signs the calls to both services as the issuer "webhook-service";
    a secret, so never part of repr or logs."""
    allowed_networks: tuple[IPNetwork, ...] = ()
    """WEBHOOK_ALLOWED_NETWORKS: networks endpoints may resolve into although they are not
    public (targets.py refuses private, loopback... addresses otherwise)."""
    ca_file: str | None = None
    """WEBHOOK_CA_FILE: a PEM file of CAs trusted beside the system's (https stays required)."""
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    """Attempts of one delivery before its endpoint is disabled."""
    retry_base_seconds: float = DEFAULT_RETRY_BASE_SECONDS
    """The first retry's longest wait; each retry doubles it (full jitter)."""
    retry_max_seconds: float = DEFAULT_RETRY_MAX_SECONDS
    """The longest wait between two attempts, however many failed."""
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    """How long one delivery request may take, connecting included."""
    poll_seconds: float = DEFAULT_POLL_SECONDS
    """How often the services' event outboxes are read while they hold nothing."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WebhookSettings:
        env = os.environ if env is None else env
        retry_base = env_float(
            env, "WEBHOOK_RETRY_BASE_SECONDS", DEFAULT_RETRY_BASE_SECONDS, minimum=MIN_SECONDS
        )
        retry_max = env_float(
            env, "WEBHOOK_RETRY_MAX_SECONDS", DEFAULT_RETRY_MAX_SECONDS, minimum=MIN_SECONDS
        )
        if retry_max < retry_base:
            raise SettingsError(
                f"WEBHOOK_RETRY_MAX_SECONDS ({retry_max}) must be at least "
                f"WEBHOOK_RETRY_BASE_SECONDS ({retry_base})"
            )
        return cls(
            service=ServiceSettings.from_env(
                default_port=DEFAULT_PORT, default_database=DEFAULT_DATABASE, env=env
            ),
            order_service_addr=env_str(env, "ORDER_SERVICE_ADDR", DEFAULT_ORDER_SERVICE_ADDR),
            pet_service_addr=env_str(env, "PET_SERVICE_ADDR", DEFAULT_PET_SERVICE_ADDR),
            caller_signing_key=caller_signing_key(env),
            allowed_networks=allowed_networks(env),
            ca_file=ca_file(env),
            max_attempts=env_int(env, "WEBHOOK_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, minimum=1),
            retry_base_seconds=retry_base,
            retry_max_seconds=retry_max,
            timeout_seconds=env_float(
                env, "WEBHOOK_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS, minimum=MIN_SECONDS
            ),
            poll_seconds=env_float(env, "WEBHOOK_POLL_SECONDS", DEFAULT_POLL_SECONDS, minimum=MIN_SECONDS),
        )


def allowed_networks(env: Mapping[str, str]) -> tuple[IPNetwork, ...]:
    """WEBHOOK_ALLOWED_NETWORKS: comma-separated CIDRs (an address alone is its own network)."""
    networks = []
    for entry in env_list(env, "WEBHOOK_ALLOWED_NETWORKS"):
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise SettingsError(
                f"WEBHOOK_ALLOWED_NETWORKS: {entry!r} is not a network (CIDR, e.g. 10.0.0.0/8)"
            ) from None
    return tuple(networks)


def ca_file(env: Mapping[str, str]) -> str | None:
    """WEBHOOK_CA_FILE, when set: a file that must exist (a typo would fail every delivery)."""
    path = env.get("WEBHOOK_CA_FILE", "").strip()
    if not path:
        return None
    if not os.path.isfile(path):
        raise SettingsError(f"WEBHOOK_CA_FILE: no file at {path}")
    return path
