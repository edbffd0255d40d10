"""The gateway's settings, read once from the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from petstore_common.session_tokens import SessionKeys
from petstore_common.settings import (
    SettingsError,
    caller_signing_key,
    env_float,
    env_int,
    env_list,
    env_str,
    session_keys,
)
from petstore_common.watch import SILENCE_SECONDS
from petstore_gateway.client_address import MAX_PORT, Network, parse_networks

ANY_ORIGIN = "*"
_ORIGIN = re.compile(r"https?://[^/\s?#]+")
_PUBLIC_BASE_URL = re.compile(r"https?://[^/\s?#@]+(/[^\s?#]*[^\s?#/])?")
MAX_PUBLIC_BASE_URL_CHARS = 1024

# Slow clients: each stalled or idle connection is closed within the longest of
# these timeouts, and the body bytes they make the gateway hold are bounded across all of them.
HEADER_TIMEOUT_SECONDS = 10.0
BODY_TIMEOUT_SECONDS = 10.0
KEEPALIVE_TIMEOUT_SECONDS = 30.0
MAX_BODY_BYTES = 1024 * 1024
BODY_BUFFER_BYTES = 16 * MAX_BODY_BYTES
DEFAULT_WEBHOOK_SERVICE_ADDR = "127.0.0.1:50054"
"""The port after the user service's (50051 pet, 50052 order, 50053 user)."""


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    host: str
    port: int
    pet_service_addr: str
    order_service_addr: str
    user_service_addr: str
    api_keys: tuple[str, ...] = field(repr=False)
    """Static api keys; secrets, so never part of repr or logs."""
    session_keys: SessionKeys = field(repr=False)
    """The HS256 secret the user service signs session tokens with, and the previous ones that
    still verify (PETSTORE_SESSION_SECRET, PETSTORE_SESSION_SECRETS_PREVIOUS)."""
    grpc_timeout_seconds: float = 5.0
    """The deadline of every call to a service."""
    max_body_bytes: int = MAX_BODY_BYTES
    body_buffer_bytes: int = BODY_BUFFER_BYTES
    """Request-body bytes held at once across all connections; a body that would pass it, or
    its caller's share of it (body_budget.py), is 503 with Retry-After before it is read. At
    least max_body_bytes."""
    header_timeout_seconds: float = HEADER_TIMEOUT_SECONDS
    """From the first byte of a request to the end of its headers; then 408 and closed."""
    body_timeout_seconds: float = BODY_TIMEOUT_SECONDS
    """A body that receives no byte this long, while the gateway is ready for more, or that is
    not complete this long plus its length at MIN_BODY_BYTES_PER_SECOND after its head
    (connections.py), is 408 and its connection closed."""
    keepalive_timeout_seconds: float = KEEPALIVE_TIMEOUT_SECONDS
    """A connection without a request this long (after it opened or after its last answer) is
    closed. A proxy in front should drop its idle upstream connections sooner."""
    log_level: str = "INFO"
    grace_seconds: float = 10.0
    """How long in-flight requests may finish after SIGTERM."""
    rate_limit_per_second: int = 50
    """Sustained requests per second per client (api_key, else address); 0 turns the limit off."""
    rate_limit_burst: int = 100
    """Requests a client may make at once before the per-second rate applies."""
    login_rate_limit_per_minute: int = 10
    """Login attempts (with a password) per minute per address, on top of the per-client limit
    and of the user service's per-account wait; 0 turns it off."""
    signup_rate_limit_per_hour: int = 20
    """Sign-ups (POST /user by anybody but staff) per hour per address; 0 turns it off."""
    cors_allow_origins: tuple[str, ...] = (ANY_ORIGIN,)
    """Origins browsers may call from (CORS): "*" for any, () for none (CORS off)."""
    trusted_proxies: tuple[Network, ...] = ()
    """Proxies (an ingress) whose X-Forwarded-For names the client for per-address limits."""
    pet_cache_max_entries: int = 20_000
    """Encoded pet representations the read cache holds at most; 0 turns the cache off."""
    pet_cache_max_bytes: int = 16 * 1024 * 1024
    """Bytes the read cache holds at most (bodies plus a fixed cost per entry)."""
    pet_watch_silence_seconds: float = SILENCE_SECONDS
    """The fallback silence limit: a WatchPets stream silent this long (no change, no heartbeat)
    is lost before its first message, or when the pet service announces no heartbeat (a release
    from before heartbeat_ms). Once a stream announces its heartbeat, SILENCE_MULTIPLE of it is
    the limit instead: the stream, not this setting, says how often the service speaks."""
    workers: int = 1
    """Gateway processes sharing the listen port (SO_REUSEPORT), each with its own cache."""
    metrics_port: int = 0
    """Port of the Prometheus /metrics listener (never the API's); worker i serves its own on
    metrics_port + i. 0: no metrics listener."""
    instance_id: str = ""
    """Echoed by /livez as X-Instance-ID: the process runner sets a fresh one per run, to know
    that the gateway answering on the port is the one it started."""
    public_base_url: str = ""
    """scheme://host[:port][/prefix] clients reach the gateway at, for the image URLs it stores
    in photoUrls; empty: each upload's own scheme and Host."""
    # -- Caller tokens (petstore_common.caller_tokens) --
    webhook_service_addr: str = DEFAULT_WEBHOOK_SERVICE_ADDR
    """Where the webhook service is: only /v2/webhooks calls it, and readiness does not wait for
    it (webhooks are off the shop's critical path)."""
    caller_signing_key: str = field(default="", repr=False)
    """CALLER_SIGNING_KEY: the private key the gateway signs every gRPC call's caller token with
    (as the issuer "gateway"). Required to open channels to the services (create_app refuses to
    start without it); tests that bring their own clients may leave it empty."""

    def __post_init__(self) -> None:
        metrics_ports = range(self.metrics_port, self.metrics_port + self.workers)
        if self.metrics_port and (metrics_ports[-1] > MAX_PORT or self.port in metrics_ports):
            raise SettingsError(
                f"METRICS_PORT: the {self.workers} worker(s) serve metrics on METRICS_PORT to "
                f"METRICS_PORT+{self.workers - 1}: ports up to {MAX_PORT}, none of them GATEWAY_PORT"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = os.environ if env is None else env
        keys = session_keys(env)
        max_body_bytes = env_int(env, "MAX_BODY_BYTES", MAX_BODY_BYTES, minimum=1)
        return cls(
            host=env_str(env, "GATEWAY_HOST", "127.0.0.1"),
            port=env_int(env, "GATEWAY_PORT", 8080),
            pet_service_addr=env_str(env, "PET_SERVICE_ADDR", "127.0.0.1:50051"),
            order_service_addr=env_str(env, "ORDER_SERVICE_ADDR", "127.0.0.1:50052"),
            user_service_addr=env_str(env, "USER_SERVICE_ADDR", "127.0.0.1:50053"),
            webhook_service_addr=env_str(env, "WEBHOOK_SERVICE_ADDR", DEFAULT_WEBHOOK_SERVICE_ADDR),
            api_keys=env_list(env, "PETSTORE_API_KEYS"),
            session_keys=keys,
            grpc_timeout_seconds=env_float(env, "GRPC_TIMEOUT_SECONDS", 5.0, minimum=0.001),
            max_body_bytes=max_body_bytes,
            body_buffer_bytes=env_int(env, "BODY_BUFFER_BYTES", BODY_BUFFER_BYTES, minimum=max_body_bytes),
            header_timeout_seconds=_seconds(env, "HEADER_TIMEOUT_SECONDS", HEADER_TIMEOUT_SECONDS),
            body_timeout_seconds=_seconds(env, "BODY_TIMEOUT_SECONDS", BODY_TIMEOUT_SECONDS),
            keepalive_timeout_seconds=_seconds(env, "KEEPALIVE_TIMEOUT_SECONDS", KEEPALIVE_TIMEOUT_SECONDS),
            log_level=env_str(env, "LOG_LEVEL", "INFO").upper(),
            grace_seconds=env_float(env, "GRACE_SECONDS", 10.0),
            rate_limit_per_second=env_int(env, "RATE_LIMIT_PER_SECOND", 50),
            rate_limit_burst=env_int(env, "RATE_LIMIT_BURST", 100, minimum=1),
            login_rate_limit_per_minute=env_int(env, "LOGIN_RATE_LIMIT_PER_MINUTE", 10),
            signup_rate_limit_per_hour=env_int(env, "SIGNUP_RATE_LIMIT_PER_HOUR", 20),
            cors_allow_origins=_cors_origins(env),
            trusted_proxies=_trusted_proxies(env),
            pet_cache_max_entries=env_int(env, "PET_CACHE_MAX_ENTRIES", 20_000),
            pet_cache_max_bytes=env_int(env, "PET_CACHE_MAX_BYTES", 16 * 1024 * 1024),
            pet_watch_silence_seconds=env_float(
                env, "PET_WATCH_SILENCE_SECONDS", SILENCE_SECONDS, minimum=0.1
            ),
            workers=env_int(env, "GATEWAY_WORKERS", 1, minimum=1),
            metrics_port=env_int(env, "METRICS_PORT", 0),
            instance_id=_instance_id(env),
            public_base_url=_public_base_url(env),
            caller_signing_key=_caller_signing_key(env),
        )


def _caller_signing_key(env: Mapping[str, str]) -> str:
    """CALLER_SIGNING_KEY, checked when set (petstore_common.settings.caller_signing_key)."""
    return caller_signing_key(env) if env.get("CALLER_SIGNING_KEY", "").strip() else ""


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    return env_float(env, name, default, minimum=0.01)


def _public_base_url(env: Mapping[str, str]) -> str:
    """PUBLIC_BASE_URL: an http(s) URL without query, fragment, credentials or trailing slash."""
    value = env_str(env, "PUBLIC_BASE_URL", "").rstrip("/")
    if value and (len(value) > MAX_PUBLIC_BASE_URL_CHARS or not _PUBLIC_BASE_URL.fullmatch(value)):
        raise SettingsError(
            "PUBLIC_BASE_URL must be http(s)://host[:port][/path] without query, fragment or "
            f"credentials, at most {MAX_PUBLIC_BASE_URL_CHARS} characters"
        )
    return value


def _trusted_proxies(env: Mapping[str, str]) -> tuple[Network, ...]:
    try:
        return parse_networks(env_list(env, "TRUSTED_PROXIES"))
    except ValueError as exc:
        raise SettingsError(f"TRUSTED_PROXIES: {exc}") from None


def _cors_origins(env: Mapping[str, str]) -> tuple[str, ...]:
    """CORS_ALLOW_ORIGINS: unset means any origin; set but empty turns CORS off."""
    if "CORS_ALLOW_ORIGINS" not in env:
        return (ANY_ORIGIN,)
    origins = env_list(env, "CORS_ALLOW_ORIGINS")
    for origin in origins:
        if origin != ANY_ORIGIN and not _ORIGIN.fullmatch(origin):
            raise SettingsError(
                f"CORS_ALLOW_ORIGINS entries must be * or scheme://host[:port] without a path, got {origin!r}"
            )
    return (ANY_ORIGIN,) if ANY_ORIGIN in origins else origins


INSTANCE_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{0,64}")
"""What GATEWAY_INSTANCE_ID may hold: it becomes a response header."""


def _instance_id(env: Mapping[str, str]) -> str:
    value = env_str(env, "GATEWAY_INSTANCE_ID", "")
    if not INSTANCE_ID_PATTERN.fullmatch(value):
        raise SettingsError("GATEWAY_INSTANCE_ID must be at most 64 characters of A-Z a-z 0-9 . _ -")
    return value
