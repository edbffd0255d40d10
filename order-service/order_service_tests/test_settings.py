"""The order service's settings: the shared ones, plus where the pet service is."""

from __future__ import annotations

import pytest

from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import KEYS
from petstore_common.settings import SettingsError
from petstore_order.settings import OrderSettings

SIGNING = {"CALLER_SIGNING_KEY": KEYS[ORDER_SERVICE].seed}


def test_defaults_serve_on_50052_and_ask_the_local_pet_service() -> None:
    settings = OrderSettings.from_env(env=SIGNING)

    assert settings.service.listen_addr == "127.0.0.1:50052"
    assert settings.service.database == "petstore_order"
    assert settings.service.mongodb_uri == ""
    assert settings.pet_service_addr == "127.0.0.1:50051"
    assert settings.pet_service_timeout_seconds == 2.0


def test_environment_overrides_defaults() -> None:
    env = {
        **SIGNING,
        "GRPC_LISTEN_ADDR": "0.0.0.0:6002",
        "MONGODB_URI": "mongodb://db:27017/",
        "MONGODB_DATABASE": "orders",
        "PET_SERVICE_ADDR": " pet-service:50051 ",
        "PET_SERVICE_TIMEOUT_SECONDS": "0.5",
    }

    settings = OrderSettings.from_env(env=env)

    assert (settings.service.listen_addr, settings.service.mongodb_uri, settings.service.database) == (
        "0.0.0.0:6002",
        "mongodb://db:27017/",
        "orders",
    )
    assert (settings.pet_service_addr, settings.pet_service_timeout_seconds) == ("pet-service:50051", 0.5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("soon", "PET_SERVICE_TIMEOUT_SECONDS must be a number, got 'soon'"),
        ("0", "PET_SERVICE_TIMEOUT_SECONDS must be at least 0.01, got 0.0"),
    ],
)
def test_an_unusable_pet_timeout_is_refused(raw: str, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        OrderSettings.from_env(env={**SIGNING, "PET_SERVICE_TIMEOUT_SECONDS": raw})
    assert str(caught.value) == message


def test_the_order_service_does_not_start_without_a_signing_key() -> None:
    # The pet service refuses the order service's unsigned calls: no order could be placed.
    with pytest.raises(SettingsError, match="CALLER_SIGNING_KEY must be set"):
        OrderSettings.from_env(env={})
    with pytest.raises(SettingsError, match="CALLER_SIGNING_KEY: the signing key is not base64url"):
        OrderSettings.from_env(env={"CALLER_SIGNING_KEY": "not a key!"})


def test_the_signing_key_stays_out_of_repr() -> None:
    assert KEYS[ORDER_SERVICE].seed not in repr(OrderSettings.from_env(env=SIGNING))
