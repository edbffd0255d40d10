"""The gateway's settings, read once from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from petstore_common.settings import SettingsError, env_float, env_int, env_list, env_str

MIN_SESSION_SECRET_LENGTH = 32


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    host: str
    port: int
    pet_service_addr: str
    order_service_addr: str
    user_service_addr: str
    api_keys: tuple[str, ...] = field(repr=False)
    """Static api keys; secrets, so never part of repr or logs."""
    session_secret: str = field(repr=False)
    """The HS256 key the user service signs session tokens with."""
    grpc_timeout_seconds: float = 5.0
    """The deadline of every call to a service."""
    max_body_bytes: int = 1024 * 1024
    log_level: str = "INFO"
    grace_seconds: float = 10.0
    """How long in-flight requests may finish after SIGTERM."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = os.environ if env is None else env
        secret = env.get("PETSTORE_SESSION_SECRET", "")
        if len(secret) < MIN_SESSION_SECRET_LENGTH:
            raise SettingsError(
                f"PETSTORE_SESSION_SECRET must be set to at least {MIN_SESSION_SECRET_LENGTH} characters"
            )
        return cls(
            host=env_str(env, "GATEWAY_HOST", "127.0.0.1"),
            port=env_int(env, "GATEWAY_PORT", 8080),
            pet_service_addr=env_str(env, "PET_SERVICE_ADDR", "127.0.0.1:50051"),
            order_service_addr=env_str(env, "ORDER_SERVICE_ADDR", "127.0.0.1:50052"),
            user_service_addr=env_str(env, "USER_SERVICE_ADDR", "127.0.0.1:50053"),
            api_keys=env_list(env, "PETSTORE_API_KEYS"),
            session_secret=secret,
            grpc_timeout_seconds=env_float(env, "GRPC_TIMEOUT_SECONDS", 5.0, minimum=0.001),
            max_body_bytes=env_int(env, "MAX_BODY_BYTES", 1024 * 1024, minimum=1),
            log_level=env_str(env, "LOG_LEVEL", "INFO").upper(),
            grace_seconds=env_float(env, "GRACE_SECONDS", 10.0),
        )
