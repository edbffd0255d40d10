"""The user service's settings: shared defaults, a required secret that never shows, the TTL."""

from __future__ import annotations

import pytest

from petstore_common.settings import SettingsError
from petstore_user.settings import UserSettings

SECRET = "x" * 32


def test_defaults() -> None:
    settings = UserSettings.from_env({"PETSTORE_SESSION_SECRET": SECRET})

    assert settings.service.listen_addr == "127.0.0.1:50053"
    assert (settings.service.mongodb_uri, settings.service.database) == ("", "petstore_user")
    assert (settings.session_keys.current, settings.session_keys.previous) == (SECRET, ())
    assert settings.session_ttl_seconds == 3600


def test_environment_overrides() -> None:
    settings = UserSettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SECRET,
            "SESSION_TTL_SECONDS": "60",
            "GRPC_LISTEN_ADDR": "0.0.0.0:6000",
            "MONGODB_URI": "mongodb://db:27017/",
            "MONGODB_DATABASE": "users_elsewhere",
        }
    )

    assert settings.session_ttl_seconds == 60
    assert (settings.service.listen_addr, settings.service.mongodb_uri, settings.service.database) == (
        "0.0.0.0:6000",
        "mongodb://db:27017/",
        "users_elsewhere",
    )


def test_the_secret_is_used_exactly_as_given() -> None:
    """The gateway reads it unstripped: both sides must hold the very same key."""
    secret = f" {SECRET} "

    assert UserSettings.from_env({"PETSTORE_SESSION_SECRET": secret}).session_keys.current == secret


@pytest.mark.parametrize("env", [{}, {"PETSTORE_SESSION_SECRET": ""}, {"PETSTORE_SESSION_SECRET": "x" * 31}])
def test_a_missing_or_short_session_secret_refuses_to_start(env: dict[str, str]) -> None:
    with pytest.raises(
        SettingsError, match=r"^PETSTORE_SESSION_SECRET must be set to at least 32 characters$"
    ):
        UserSettings.from_env(env)


@pytest.mark.parametrize(
    ("ttl", "message"),
    [
        ("0", "SESSION_TTL_SECONDS must be at least 1, got 0"),
        ("soon", "SESSION_TTL_SECONDS must be an integer"),
    ],
)
def test_a_bad_session_ttl_refuses_to_start(ttl: str, message: str) -> None:
    with pytest.raises(SettingsError, match=f"^{message}"):
        UserSettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, "SESSION_TTL_SECONDS": ttl})


def test_previous_secrets_verify_too_and_are_checked_at_start() -> None:
    """Logout reads tokens signed before a rotation: the user service reads the list too."""
    old = "o" * 32
    env = {"PETSTORE_SESSION_SECRET": SECRET, "PETSTORE_SESSION_SECRETS_PREVIOUS": old}
    assert UserSettings.from_env(env).session_keys.previous == (old,)
    with pytest.raises(SettingsError, match=r"^PETSTORE_SESSION_SECRETS_PREVIOUS"):
        UserSettings.from_env({**env, "PETSTORE_SESSION_SECRETS_PREVIOUS": SECRET})
    with pytest.raises(SettingsError, match=r"^PETSTORE_SESSION_SECRETS_PREVIOUS"):
        UserSettings.from_env({**env, "PETSTORE_SESSION_SECRETS_PREVIOUS": "o" * 31})


def test_the_secret_stays_out_of_repr() -> None:
    settings = UserSettings.from_env(
        {"PETSTORE_SESSION_SECRET": "s3cr3t" * 8, "PETSTORE_SESSION_SECRETS_PREVIOUS": "0ld-s3cr3t" * 4}
    )

    assert "s3cr3t" not in repr(settings)
    assert "session_ttl_seconds=3600" in repr(settings)
