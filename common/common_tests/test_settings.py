from __future__ import annotations

import re

import pytest

from petstore_common import caller_keys
from petstore_common.caller_gate import TokenMode
from petstore_common.caller_tokens import TrustedKey
from petstore_common.settings import (
    MAX_PREVIOUS_SESSION_SECRETS,
    MIN_SESSION_SECRET_LENGTH,
    ServiceSettings,
    SettingsError,
    caller_signing_key,
    env_float,
    env_int,
    env_list,
    session_keys,
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


CURRENT, OLD, OLDER = ("c" * 32, "o" * 40, "p" * 48)
SHORT = "x" * (MIN_SESSION_SECRET_LENGTH - 1)
TOO_MANY = ",".join(str(n) * MIN_SESSION_SECRET_LENGTH for n in range(MAX_PREVIOUS_SESSION_SECRETS + 1))


def test_previous_session_secrets_are_a_list_after_the_current_one() -> None:
    keys = session_keys(
        {"PETSTORE_SESSION_SECRET": CURRENT, "PETSTORE_SESSION_SECRETS_PREVIOUS": f" {OLD}, ,{OLDER} "}
    )
    assert (keys.current, keys.previous) == (CURRENT, (OLD, OLDER))
    assert session_keys({"PETSTORE_SESSION_SECRET": CURRENT}).previous == ()


@pytest.mark.parametrize(
    ("previous", "message"),
    [
        (
            f"{OLD},{'x' * (MIN_SESSION_SECRET_LENGTH - 1)}",
            f"secret 2 is shorter than {MIN_SESSION_SECRET_LENGTH}",
        ),
        (f"{OLD},{CURRENT}", "must not repeat"),  # the current one again
        (f"{OLD},{OLDER},{OLD}", "must not repeat"),
        (
            ",".join(str(n) * 32 for n in range(MAX_PREVIOUS_SESSION_SECRETS + 1)),
            f"at most {MAX_PREVIOUS_SESSION_SECRETS}",
        ),
    ],
)
def test_bad_previous_session_secrets_refuse_to_start(previous: str, message: str) -> None:
    env = {"PETSTORE_SESSION_SECRET": CURRENT, "PETSTORE_SESSION_SECRETS_PREVIOUS": previous}
    with pytest.raises(SettingsError, match=f"^PETSTORE_SESSION_SECRETS_PREVIOUS.*{message}") as refused:
        session_keys(env)
    assert CURRENT not in str(refused.value)
    assert OLD not in str(refused.value)


def test_previous_secrets_do_not_stand_in_for_a_missing_current_one() -> None:
    with pytest.raises(SettingsError, match=r"^PETSTORE_SESSION_SECRET must be set"):
        session_keys({"PETSTORE_SESSION_SECRETS_PREVIOUS": OLD})


def test_trusted_caller_keys_are_read_per_issuer_several_each() -> None:
    old, new, order = (caller_keys.generate().public for _ in range(3))
    env = {
        "TRUSTED_CALLER_KEYS": f"gateway={old}, gateway={new},order-service={order}",
        "CALLER_TOKENS": "Optional",
    }

    settings = ServiceSettings.from_env(default_port=1, default_database="x", env=env)

    assert settings.trusted_caller_keys == (
        TrustedKey("gateway", old),
        TrustedKey("gateway", new),
        TrustedKey("order-service", order),
    )
    assert settings.caller_tokens is TokenMode.OPTIONAL


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"TRUSTED_CALLER_KEYS": "intruder=" + "A" * 43},
            "the issuer one of gateway, order-service, webhook-service; got 'intruder'",
        ),
        ({"TRUSTED_CALLER_KEYS": "gateway"}, "TRUSTED_CALLER_KEYS: gateway: the public key must be 32 bytes"),
        (
            {"TRUSTED_CALLER_KEYS": "gateway=not*a*key"},
            "TRUSTED_CALLER_KEYS: gateway: the public key is not base64url",
        ),
        ({"CALLER_TOKENS": "sometimes"}, "CALLER_TOKENS must be required or optional, got 'sometimes'"),
    ],
)
def test_unusable_caller_token_settings_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        ServiceSettings.from_env(default_port=1, default_database="x", env=env)


def test_a_signing_key_must_be_a_32_byte_seed() -> None:
    seed = caller_keys.generate().seed
    assert caller_signing_key({"CALLER_SIGNING_KEY": f" {seed} "}) == seed
    for bad in ("", "short", seed + "AAAA"):
        with pytest.raises(SettingsError, match="CALLER_SIGNING_KEY"):
            caller_signing_key({"CALLER_SIGNING_KEY": bad})
