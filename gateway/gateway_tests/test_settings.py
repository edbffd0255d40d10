from __future__ import annotations

import pytest

from petstore_common.settings import SettingsError
from petstore_devstack.doc_tables import documentation_words
from petstore_gateway.settings import GatewaySettings

SECRET = "x" * 32


def test_defaults() -> None:
    settings = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET})
    assert (settings.host, settings.port) == ("127.0.0.1", 8080)
    assert (
        settings.pet_service_addr,
        settings.order_service_addr,
        settings.user_service_addr,
        settings.webhook_service_addr,
    ) == ("127.0.0.1:50051", "127.0.0.1:50052", "127.0.0.1:50053", "127.0.0.1:50054")
    assert settings.api_keys == ()
    assert settings.grpc_timeout_seconds == 5.0
    assert settings.max_body_bytes == 1024 * 1024


def test_environment_overrides() -> None:
    settings = GatewaySettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SECRET,
            "GATEWAY_HOST": "0.0.0.0",
            "GATEWAY_PORT": "9000",
            "PETSTORE_API_KEYS": " one , two,,",
            "GRPC_TIMEOUT_SECONDS": "0.5",
            "MAX_BODY_BYTES": "2048",
            "LOG_LEVEL": "debug",
            "WEBHOOK_SERVICE_ADDR": "dns:///webhook-service:50054",
        }
    )
    assert (settings.host, settings.port, settings.api_keys) == ("0.0.0.0", 9000, ("one", "two"))
    assert settings.webhook_service_addr == "dns:///webhook-service:50054"
    assert (settings.grpc_timeout_seconds, settings.max_body_bytes, settings.log_level) == (
        0.5,
        2048,
        "DEBUG",
    )


@pytest.mark.parametrize("secret", ["", "short", "x" * 31])
def test_a_missing_or_short_session_secret_refuses_to_start(secret: str) -> None:
    with pytest.raises(SettingsError, match="PETSTORE_SESSION_SECRET"):
        GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": secret})


def test_secrets_stay_out_of_repr() -> None:
    settings = GatewaySettings.from_env(
        {"PETSTORE_SESSION_SECRET": "s3cr3t" * 8, "PETSTORE_API_KEYS": "k3y-value"}
    )
    assert "s3cr3t" not in repr(settings)
    assert "k3y-value" not in repr(settings)


def test_rate_limits_default_on_and_zero_turns_them_off() -> None:
    defaults = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET})
    assert (
        defaults.rate_limit_per_second,
        defaults.rate_limit_burst,
        defaults.login_rate_limit_per_minute,
    ) == (50, 100, 10)
    off = GatewaySettings.from_env(
        {"PETSTORE_SESSION_SECRET": SECRET, "RATE_LIMIT_PER_SECOND": "0", "LOGIN_RATE_LIMIT_PER_MINUTE": "0"}
    )
    assert (off.rate_limit_per_second, off.login_rate_limit_per_minute) == (0, 0)


@pytest.mark.parametrize(
    ("name", "value"), [("RATE_LIMIT_PER_SECOND", "-1"), ("RATE_LIMIT_BURST", "0"), ("RATE_LIMIT_BURST", "x")]
)
def test_bad_rate_limits_refuse_to_start(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, name: value})


def test_trusted_proxies_are_networks_and_a_bad_one_refuses_to_start() -> None:
    settings = GatewaySettings.from_env(
        {"PETSTORE_SESSION_SECRET": SECRET, "TRUSTED_PROXIES": "10.0.0.0/8, ::1"}
    )
    assert [str(network) for network in settings.trusted_proxies] == ["10.0.0.0/8", "::1/128"]
    assert GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET}).trusted_proxies == ()
    with pytest.raises(SettingsError, match="TRUSTED_PROXIES"):
        GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, "TRUSTED_PROXIES": "ingress"})


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("", ""),
        ("https://shop.example", "https://shop.example"),
        ("https://shop.example/", "https://shop.example"),
        ("http://10.0.0.7:8080/petstore", "http://10.0.0.7:8080/petstore"),
    ],
)
def test_public_base_url_is_an_http_url_without_a_trailing_slash(value: str, stored: str) -> None:
    settings = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, "PUBLIC_BASE_URL": value})
    assert settings.public_base_url == stored


@pytest.mark.parametrize(
    "value",
    [
        "shop.example",
        "ftp://shop.example",
        "https://shop.example/?q=1",
        "https://shop.example/#top",
        "https://user:pw@shop.example",
        "https://shop example",
        "https://shop.example/" + "p" * 1024,
    ],
)
def test_a_bad_public_base_url_refuses_to_start(value: str) -> None:
    with pytest.raises(SettingsError, match="PUBLIC_BASE_URL"):
        GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, "PUBLIC_BASE_URL": value})


def test_sign_ups_default_to_20_an_hour_per_address_as_the_readme_says() -> None:
    defaults = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET})
    off = GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SECRET, "SIGNUP_RATE_LIMIT_PER_HOUR": "0"})
    assert (defaults.signup_rate_limit_per_hour, off.signup_rate_limit_per_hour) == (20, 0)
    readme = documentation_words()
    per_hour = defaults.signup_rate_limit_per_hour
    assert f"| `SIGNUP_RATE_LIMIT_PER_HOUR` | gateway | {per_hour} |" in readme
    assert f"`SIGNUP_RATE_LIMIT_PER_HOUR` ({per_hour})" in readme
    assert f"`LOGIN_RATE_LIMIT_PER_MINUTE` ({defaults.login_rate_limit_per_minute})" in readme
