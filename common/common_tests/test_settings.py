from __future__ import annotations

import pytest

from petstore_common.settings import (
    ServiceSettings,
    SettingsError,
    env_float,
    env_int,
    env_list,
    session_secret,
)


def test_defaults_bind_loopback_and_select_the_embedded_store() -> None:
    settings = ServiceSettings.from_env(default_port=50051, default_database="petstore_pet", env={})
    assert settings.listen_addr == "127.0.0.1:50051"
    assert settings.mongodb_uri == ""
    assert settings.database == "petstore_pet"
    assert settings.metrics_port == 0


def test_environment_overrides_defaults() -> None:
    env = {
        "GRPC_LISTEN_ADDR": "0.0.0.0:6000",
        "MONGODB_URI": "mongodb://db:27017/",
        "MONGODB_DATABASE": "pets",
        "LOG_LEVEL": "debug",
        "MAX_CONCURRENT_RPCS": "8",
    }
    settings = ServiceSettings.from_env(default_port=1, default_database="x", env=env)
    assert (settings.listen_addr, settings.mongodb_uri, settings.database) == (
        "0.0.0.0:6000",
        "mongodb://db:27017/",
        "pets",
    )
    assert settings.log_level == "DEBUG"
    assert settings.max_concurrent_rpcs == 8


@pytest.mark.parametrize("raw", ["ten", "1.5", ""])
def test_env_int_rejects_non_integers_but_defaults_when_blank(raw: str) -> None:
    if raw:
        with pytest.raises(SettingsError, match="N must be an integer"):
            env_int({"N": raw}, "N", 3)
    else:
        assert env_int({"N": raw}, "N", 3) == 3


def test_env_bounds_are_enforced() -> None:
    with pytest.raises(SettingsError, match="at least 1"):
        env_int({"N": "0"}, "N", 3, minimum=1)
    with pytest.raises(SettingsError, match="must be a number"):
        env_float({"F": "soon"}, "F", 1.0)


def test_env_list_splits_and_drops_blanks() -> None:
    assert env_list({"K": " a, ,b ,"}, "K") == ("a", "b")
    assert env_list({}, "K") == ()


@pytest.mark.parametrize("secret", ["", "x" * 31])
def test_a_missing_or_short_session_secret_is_refused(secret: str) -> None:
    with pytest.raises(SettingsError, match="PETSTORE_SESSION_SECRET"):
        session_secret({"PETSTORE_SESSION_SECRET": secret})


def test_the_session_secret_is_read_as_is() -> None:
    assert session_secret({"PETSTORE_SESSION_SECRET": " " + "k" * 32}) == " " + "k" * 32
