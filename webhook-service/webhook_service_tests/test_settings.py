"""The webhook service's settings: the shared ones, where the order and pet services are, and
how deliveries are made. A bad value stops the service at start (SettingsError)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from petstore_common.caller_gate import WEBHOOK_SERVICE
from petstore_common.caller_testing import KEYS
from petstore_common.settings import SettingsError
from petstore_webhook.settings import WebhookSettings

SIGNING = {"CALLER_SIGNING_KEY": KEYS[WEBHOOK_SERVICE].seed}


def test_defaults_serve_on_50054_and_read_the_local_services() -> None:
    settings = WebhookSettings.from_env(env=SIGNING)

    assert settings.service.listen_addr == "127.0.0.1:50054"
    assert (settings.service.database, settings.service.mongodb_uri) == ("petstore_webhook", "")
    assert (settings.order_service_addr, settings.pet_service_addr) == ("127.0.0.1:50052", "127.0.0.1:50051")
    assert (settings.allowed_networks, settings.ca_file) == ((), None)
    assert (settings.max_attempts, settings.retry_base_seconds, settings.retry_max_seconds) == (
        30,
        2.0,
        3600.0,
    )
    longest_waits = [
        min(settings.retry_max_seconds, settings.retry_base_seconds * 2 ** (attempt - 1))
        for attempt in range(1, settings.max_attempts)
    ]
    assert sum(longest_waits) / 3600 > 18  # docs/webhooks.md: "up to about 19 hours"
    assert (settings.timeout_seconds, settings.poll_seconds) == (10.0, 1.0)


def test_environment_overrides_defaults(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env = {
        **SIGNING,
        "GRPC_LISTEN_ADDR": "0.0.0.0:6004",
        "MONGODB_URI": "mongodb://db:27017/",
        "ORDER_SERVICE_ADDR": " order-service:50052 ",
        "PET_SERVICE_ADDR": "pet-service:50051",
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8, 10.1.2.3, fd00::/8",
        "WEBHOOK_CA_FILE": str(ca),
        "WEBHOOK_MAX_ATTEMPTS": "3",
        "WEBHOOK_RETRY_BASE_SECONDS": "0.05",
        "WEBHOOK_RETRY_MAX_SECONDS": "0.2",
        "WEBHOOK_TIMEOUT_SECONDS": "1.5",
        "WEBHOOK_POLL_SECONDS": "0.1",
    }

    settings = WebhookSettings.from_env(env=env)

    assert (settings.service.listen_addr, settings.service.mongodb_uri) == (
        "0.0.0.0:6004",
        "mongodb://db:27017/",
    )
    assert (settings.order_service_addr, settings.pet_service_addr) == (
        "order-service:50052",
        "pet-service:50051",
    )
    assert settings.allowed_networks == (
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("10.1.2.3/32"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert settings.ca_file == str(ca)
    assert (settings.max_attempts, settings.retry_base_seconds, settings.retry_max_seconds) == (3, 0.05, 0.2)
    assert (settings.timeout_seconds, settings.poll_seconds) == (1.5, 0.1)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/8,intranet"},
            "WEBHOOK_ALLOWED_NETWORKS: 'intranet' is not a network",
        ),
        (
            {"WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/33"},
            "WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33' is not a network",
        ),
        ({"WEBHOOK_CA_FILE": "/nonexistent/ca.pem"}, "WEBHOOK_CA_FILE: no file at /nonexistent/ca.pem"),
        ({"WEBHOOK_MAX_ATTEMPTS": "0"}, "WEBHOOK_MAX_ATTEMPTS must be at least 1, got 0"),
        ({"WEBHOOK_MAX_ATTEMPTS": "many"}, "WEBHOOK_MAX_ATTEMPTS must be an integer, got 'many'"),
        ({"WEBHOOK_RETRY_BASE_SECONDS": "0"}, "WEBHOOK_RETRY_BASE_SECONDS must be at least 0.01, got 0.0"),
        ({"WEBHOOK_RETRY_MAX_SECONDS": "-1"}, "WEBHOOK_RETRY_MAX_SECONDS must be at least 0.01, got -1.0"),
        (
            {"WEBHOOK_RETRY_BASE_SECONDS": "10", "WEBHOOK_RETRY_MAX_SECONDS": "5"},
            "WEBHOOK_RETRY_MAX_SECONDS (5.0) must be at least WEBHOOK_RETRY_BASE_SECONDS (10.0)",
        ),
        ({"WEBHOOK_TIMEOUT_SECONDS": "0"}, "WEBHOOK_TIMEOUT_SECONDS must be at least 0.01, got 0.0"),
        ({"WEBHOOK_TIMEOUT_SECONDS": "soon"}, "WEBHOOK_TIMEOUT_SECONDS must be a number, got 'soon'"),
        ({"WEBHOOK_POLL_SECONDS": "0"}, "WEBHOOK_POLL_SECONDS must be at least 0.01, got 0.0"),
    ],
)
def test_unusable_values_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        WebhookSettings.from_env(env={**SIGNING, **env})
    assert str(caught.value).startswith(message)


def test_the_webhook_service_does_not_start_without_a_signing_key() -> None:
    # The order and pet services refuse unsigned calls: no event could be read.
    with pytest.raises(SettingsError, match="CALLER_SIGNING_KEY must be set"):
        WebhookSettings.from_env(env={})


def test_the_signing_key_stays_out_of_repr() -> None:
    assert KEYS[WEBHOOK_SERVICE].seed not in repr(WebhookSettings.from_env(env=SIGNING))
