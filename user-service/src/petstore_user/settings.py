"""The user service's settings: the shared ones, plus the session secrets and lifetime."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from petstore_common.session_tokens import SessionKeys
from petstore_common.settings import ServiceSettings, env_int, session_keys

DEFAULT_PORT = 50053
DEFAULT_DATABASE = "petstore_user"
DEFAULT_SESSION_TTL_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class UserSettings:
    service: ServiceSettings
    session_keys: SessionKeys = field(repr=False)
    """The HS256 secret session tokens are signed with, and the previous ones that still
    verify (Logout reads tokens too); the gateway verifies with the same: never logged."""
    session_ttl_seconds: int = DEFAULT_SESSION_TTL_SECONDS
    """How long a session lasts after login."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> UserSettings:
        env = os.environ if env is None else env
        keys = session_keys(env)
        return cls(
            service=ServiceSettings.from_env(
                default_port=DEFAULT_PORT, default_database=DEFAULT_DATABASE, env=env
            ),
            session_keys=keys,
            session_ttl_seconds=env_int(env, "SESSION_TTL_SECONDS", DEFAULT_SESSION_TTL_SECONDS, minimum=1),
        )
