"""Twelve-factor settings: environment variables with safe defaults, read once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from petstore_common import caller_keys
from petstore_common.caller_gate import ISSUERS, TokenMode
from petstore_common.caller_tokens import TrustedKey
from petstore_common.session_tokens import SessionKeys


class SettingsError(ValueError):
    """An environment variable holds a value that cannot be used."""


def env_str(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "").strip()
    return value or default


def env_int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated list; blanks are dropped."""
    return tuple(item.strip() for item in env.get(name, "").split(",") if item.strip())


MIN_SESSION_SECRET_LENGTH = 32
"""HS256 wants a key of at least 256 bits."""


def session_secret(env: Mapping[str, str]) -> str:
    """PETSTORE_SESSION_SECRET, read as is: the user service signs with it and the gateway
    verifies with it, so both must hold the very same key, and neither starts without one."""
    secret = env.get("PETSTORE_SESSION_SECRET", "")
    if len(secret) < MIN_SESSION_SECRET_LENGTH:
        raise SettingsError(
            f"PETSTORE_SESSION_SECRET must be set to at least {MIN_SESSION_SECRET_LENGTH} characters"
        )
    return secret


MAX_PREVIOUS_SESSION_SECRETS = 4
"""A rotation needs one (two while the next secret is announced before it signs); a token
without a kid is tried against each, so the list stays short."""


def session_keys(env: Mapping[str, str]) -> SessionKeys:
    """PETSTORE_SESSION_SECRET signs new session tokens; PETSTORE_SESSION_SECRETS_PREVIOUS
    (comma-separated) lists the secrets that still verify: the previous ones, until every
    session they signed has expired (docs/rotating-secrets.md). Each as long as the current
    one must be, all different."""
    name = "PETSTORE_SESSION_SECRETS_PREVIOUS"
    current, previous = session_secret(env), env_list(env, name)
    if len(previous) > MAX_PREVIOUS_SESSION_SECRETS:
        raise SettingsError(
            f"{name} holds at most {MAX_PREVIOUS_SESSION_SECRETS} secrets, got {len(previous)}"
        )
    for position, secret in enumerate(previous, 1):
        if len(secret) < MIN_SESSION_SECRET_LENGTH:
            raise SettingsError(
                f"{name}: secret {position} is shorter than {MIN_SESSION_SECRET_LENGTH} characters"
            )
    try:
        return SessionKeys(current, previous)
    except ValueError:
        raise SettingsError(
            f"{name} must not repeat PETSTORE_SESSION_SECRET or one of its own secrets"
        ) from None


def caller_signing_key(env: Mapping[str, str]) -> str:
    """CALLER_SIGNING_KEY: the private key a deployable signs its gRPC calls' caller tokens
    with (petstore_common.caller_keys); a caller that signs nothing is refused by the services,
    so it does not start without one."""
    seed = env.get("CALLER_SIGNING_KEY", "").strip()
    if not seed:
        raise SettingsError(
            "CALLER_SIGNING_KEY must be set: the base64url Ed25519 seed this deployable signs its "
            "gRPC calls with (`python -m petstore_common.caller_keys` makes one)"
        )
    try:
        caller_keys.private_key(seed)
    except caller_keys.InvalidKey as exc:
        raise SettingsError(f"CALLER_SIGNING_KEY: {exc}") from None
    return seed


def trusted_caller_keys(env: Mapping[str, str]) -> tuple[TrustedKey, ...]:
    """TRUSTED_CALLER_KEYS: comma-separated `issuer=<base64url public key>`, several keys per
    issuer allowed (how keys are rotated)."""
    keys = []
    for entry in env_list(env, "TRUSTED_CALLER_KEYS"):
        issuer, _, public = (part.strip() for part in entry.partition("="))
        if issuer not in ISSUERS:
            raise SettingsError(
                f"TRUSTED_CALLER_KEYS: entries are issuer=<public key>, the issuer one of "
                f"{', '.join(sorted(ISSUERS))}; got {issuer!r}"
            )
        try:
            caller_keys.public_key(public)
        except caller_keys.InvalidKey as exc:
            raise SettingsError(f"TRUSTED_CALLER_KEYS: {issuer}: {exc}") from None
        keys.append(TrustedKey(issuer, public))
    return tuple(keys)


def caller_token_mode(env: Mapping[str, str]) -> TokenMode:
    raw = env_str(env, "CALLER_TOKENS", TokenMode.REQUIRED.value).lower()
    try:
        return TokenMode(raw)
    except ValueError:
        raise SettingsError(f"CALLER_TOKENS must be required or optional, got {raw!r}") from None


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """What every gRPC service reads from its environment."""

    listen_addr: str
    """host:port to serve gRPC on (port 0 picks a free port)."""
    mongodb_uri: str
    """MongoDB connection string; empty selects the embedded in-memory store."""
    database: str
    """The MongoDB database this service owns."""
    mongodb_timeout_ms: int
    """Server selection and connect timeout: how fast a lost database turns into UNAVAILABLE."""
    mongodb_max_pool_size: int
    log_level: str
    grace_seconds: float
    """How long in-flight RPCs may finish after SIGTERM."""
    max_concurrent_rpcs: int
    """RPCs served at once before new ones get RESOURCE_EXHAUSTED."""
    metrics_port: int
    """Port of the Prometheus /metrics listener; 0 turns it off."""
    idempotency_ttl_seconds: float = 24 * 3600.0
    """How long an Idempotency-Key is remembered after its first request."""
    max_connection_age_seconds: float = 30.0
    """Clients are asked to reconnect after this long (GOAWAY), so they re-resolve the
    service's name and spread onto replicas that started since; 0 turns it off."""
    trusted_caller_keys: tuple[TrustedKey, ...] = ()
    """The public keys whose caller tokens the service accepts, each for its issuer."""
    caller_tokens: TokenMode = TokenMode.REQUIRED
    """Whether a call without a caller token is refused (required) or served (optional: while
    callers of a release that signs nothing remain)."""

    def check_caller_trust(self) -> None:
        """A service that requires caller tokens but trusts no key would refuse every call."""
        if self.caller_tokens is TokenMode.REQUIRED and not self.trusted_caller_keys:
            raise SettingsError(
                "TRUSTED_CALLER_KEYS must list the public keys of the callers this service trusts "
                "(issuer=<public key>, comma-separated), as CALLER_TOKENS is required"
            )

    @classmethod
    def from_env(
        cls,
        *,
        default_port: int,
        default_database: str,
        default_metrics_port: int = 0,
        env: Mapping[str, str] | None = None,
    ) -> ServiceSettings:
        env = os.environ if env is None else env
        return cls(
            listen_addr=env_str(env, "GRPC_LISTEN_ADDR", f"127.0.0.1:{default_port}"),
            mongodb_uri=env_str(env, "MONGODB_URI", ""),
            database=env_str(env, "MONGODB_DATABASE", default_database),
            mongodb_timeout_ms=env_int(env, "MONGODB_TIMEOUT_MS", 2000, minimum=1),
            mongodb_max_pool_size=env_int(env, "MONGODB_MAX_POOL_SIZE", 20, minimum=1),
            log_level=env_str(env, "LOG_LEVEL", "INFO").upper(),
            grace_seconds=env_float(env, "GRACE_SECONDS", 10.0),
            max_concurrent_rpcs=env_int(env, "MAX_CONCURRENT_RPCS", 256, minimum=1),
            metrics_port=env_int(env, "METRICS_PORT", default_metrics_port),
            idempotency_ttl_seconds=env_float(env, "IDEMPOTENCY_TTL_SECONDS", 24 * 3600.0),
            max_connection_age_seconds=env_float(env, "GRPC_MAX_CONNECTION_AGE_SECONDS", 30.0),
            trusted_caller_keys=trusted_caller_keys(env),
            caller_tokens=caller_token_mode(env),
        )


class HasServiceSettings(Protocol):
    """A service's own settings: the shared ones (`service`), plus whatever it alone reads."""

    @property
    def service(self) -> ServiceSettings: ...
