"""Rate limits: the keyed token buckets on their own, then through the application."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from petstore_gateway.client_address import parse_networks
from petstore_gateway.ratelimit import KeyedLimiter, RateLimits, client_limiter, login_limiter
from petstore_gateway.settings import GatewaySettings

from .backend import PASSWORD, Backend
from .conftest import STATIC_KEY, Client, metrics_text, serve_gateway
from .faults import ExhaustedPets
from .wire import Wire, error_of


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def limiter(per_second: int = 50, burst: int = 100, **kwargs: Any) -> tuple[KeyedLimiter, FakeClock]:
    clock = FakeClock()
    made = client_limiter(per_second, burst, clock=clock, **kwargs)
    assert made is not None
    return made, clock


def test_a_full_burst_is_admitted_then_refused_with_a_wait_in_whole_seconds() -> None:
    bucket, _ = limiter(per_second=1, burst=3)
    assert [bucket.acquire("a") for _ in range(3)] == [None, None, None]
    assert bucket.acquire("a") == 1


def test_tokens_come_back_at_the_configured_rate() -> None:
    bucket, clock = limiter(per_second=50, burst=100)
    assert all(bucket.acquire("a") is None for _ in range(100))
    assert bucket.acquire("a") is not None
    clock.now_ms += 20  # one token per 20 ms at 50/s
    assert bucket.acquire("a") is None
    assert bucket.acquire("a") is not None


def test_each_key_has_its_own_bucket() -> None:
    bucket, _ = limiter(per_second=1, burst=1)
    assert bucket.acquire("a") is None
    assert bucket.acquire("a") is not None
    assert bucket.acquire("b") is None


def test_the_login_limit_waits_the_rest_of_the_minute() -> None:
    clock = FakeClock()
    logins = login_limiter(10, clock=clock)
    assert logins is not None
    assert all(logins.acquire("ann") is None for _ in range(10))
    assert logins.acquire("ann") == 6  # one attempt every 6 s comes back
    clock.now_ms += 6000
    assert logins.acquire("ann") is None


def test_zero_turns_a_limit_off() -> None:
    assert client_limiter(0, 100) is None
    assert login_limiter(0) is None


def test_memory_stays_bounded_under_many_distinct_clients() -> None:
    bucket, _ = limiter(max_entries=100)
    for n in range(5000):
        assert bucket.acquire(f"client-{n}") is None
    assert len(bucket) == 100


def test_idle_buckets_are_forgotten_once_full_again() -> None:
    bucket, clock = limiter(per_second=50, burst=100)  # empty to full in 2 s
    for n in range(50):
        bucket.acquire(f"client-{n}")
    clock.now_ms += 1999
    bucket.acquire("late")
    assert len(bucket) == 51
    clock.now_ms += 1
    bucket.acquire("later")
    assert len(bucket) == 2  # "late" and "later"


def test_raw_keys_are_never_kept() -> None:
    bucket, _ = limiter()
    bucket.acquire("key:very-secret-api-key")
    stored = b"".join(bucket._entries)  # the map's keys are all there is to look at
    assert b"very-secret" not in stored
    assert len(stored) == 16


@settings(max_examples=60, deadline=None)
@given(
    per_second=st.integers(1, 100),
    burst=st.integers(1, 200),
    gaps=st.lists(st.integers(0, 200), min_size=1, max_size=300),
)
def test_never_more_than_the_burst_plus_what_the_rate_refilled(
    per_second: int, burst: int, gaps: list[int]
) -> None:
    bucket, clock = limiter(per_second=per_second, burst=burst)
    start, admitted = clock.now_ms, 0
    for gap in gaps:
        clock.now_ms += gap
        if bucket.acquire("a") is None:
            admitted += 1
        assert admitted <= burst + (clock.now_ms - start) * per_second / 1000


@pytest.mark.parametrize(
    ("per_second", "login_per_minute", "allowance"),
    [(50, 10, 600), (50, 0, 180_000), (0, 10, 600), (0, 0, None)],
)
def test_login_allowance_is_the_tightest_limit_per_hour(
    per_second: int, login_per_minute: int, allowance: int | None
) -> None:
    limits = RateLimits.create(per_second=per_second, burst=100, login_per_minute=login_per_minute)
    assert limits.login_allowance_per_hour() == allowance


# ---------------------------------------------------------------------------------------
# Through the application


@pytest.fixture
def limited_settings(settings: GatewaySettings) -> GatewaySettings:
    return replace(settings, rate_limit_per_second=1, rate_limit_burst=2, login_rate_limit_per_minute=2)


@pytest.fixture
async def limited(limited_settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    clients = backend.clients()
    async for served in serve_gateway(limited_settings, clients):
        yield served


@pytest.mark.parametrize("wire", list(Wire))
async def test_past_the_burst_a_client_gets_429_with_retry_after(limited: Client, wire: Wire) -> None:
    for _ in range(2):
        assert (await limited.get("/v2/pet/abc", headers={"Accept": wire.value})).status == 400
    response = await limited.get("/v2/pet/abc", headers={"Accept": wire.value})
    status, message = await error_of(wire, response)
    assert status == 429
    assert "too many requests" in message
    assert int(response.headers["Retry-After"]) >= 1
    assert response.headers["X-Request-ID"]


async def test_probes_are_never_limited(limited: Client) -> None:
    for _ in range(10):
        for path in ("/livez", "/readyz"):
            assert (await limited.get(path)).status == 200


async def test_refusals_are_counted(limited: Client) -> None:
    for _ in range(3):
        await limited.get("/v2/pet/abc")
    metrics = metrics_text(limited)
    assert 'gateway_rate_limited_total{limit="client"} 1.0' in metrics
    assert 'gateway_http_requests_total{method="GET",route="/v2/pet/{petId}",status="429"} 1.0' in metrics


async def test_a_genuine_api_key_has_its_own_bucket_made_up_ones_share_the_address(limited: Client) -> None:
    for _ in range(2):
        await limited.get("/v2/pet/abc")
    assert (await limited.get("/v2/pet/abc", headers={"api_key": "made-up"})).status == 429
    assert (await limited.get("/v2/pet/abc", headers={"api_key": STATIC_KEY})).status == 400


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket(
    limited_settings: GatewaySettings, backend: Backend
) -> None:
    # The test client connects from 127.0.0.1: here that is the ingress.
    behind_proxy = replace(limited_settings, trusted_proxies=parse_networks(["127.0.0.1"]))
    clients = backend.clients()
    async for client in serve_gateway(behind_proxy, clients):
        alice, bob = {"X-Forwarded-For": "198.51.100.1"}, {"X-Forwarded-For": "198.51.100.2"}
        for _ in range(2):
            assert (await client.get("/v2/pet/abc", headers=alice)).status == 400
        assert (await client.get("/v2/pet/abc", headers=alice)).status == 429
        assert (await client.get("/v2/pet/abc", headers=bob)).status == 400
        # Prepending a made-up address does not give alice a fresh bucket.
        spoofed = {"X-Forwarded-For": "203.0.113.50, 198.51.100.1"}
        assert (await client.get("/v2/pet/abc", headers=spoofed)).status == 429


async def test_x_forwarded_for_is_ignored_from_an_untrusted_peer(limited: Client) -> None:
    for n in range(2):
        assert (
            await limited.get("/v2/pet/abc", headers={"X-Forwarded-For": f"198.51.100.{n}"})
        ).status == 400
    assert (await limited.get("/v2/pet/abc", headers={"X-Forwarded-For": "198.51.100.9"})).status == 429


async def test_logins_are_limited_per_address_across_usernames(
    limited_settings: GatewaySettings, backend: Backend
) -> None:
    for user_id, name in enumerate(("ann", "bob", "cat", "dan"), start=1):
        await backend.add_user(name, user_id)
    clients = backend.clients()
    # A roomy per-client limit, so only the login limit (2 a minute) can refuse; the test
    # client connects from 127.0.0.1, here the ingress, so each forwarded address is a client.
    roomy = replace(
        limited_settings,
        rate_limit_per_second=100,
        rate_limit_burst=100,
        trusted_proxies=parse_networks(["127.0.0.1"]),
    )
    guesser, owner = {"X-Forwarded-For": "198.51.100.1"}, {"X-Forwarded-For": "198.51.100.2"}
    async for client in serve_gateway(roomy, clients):
        for name in ("ann", "bob"):  # one guess at each of many usernames
            response = await client.get(
                "/v2/user/login", params={"username": name, "password": "wrong"}, headers=guesser
            )
            assert response.status == 400
        refused = await client.get(
            "/v2/user/login", params={"username": "cat", "password": PASSWORD}, headers=guesser
        )
        status, message = await error_of(Wire.JSON, refused)
        assert (status, message) == (429, "too many login attempts from this address; retry after 30 s")
        assert refused.headers["Retry-After"] == "30"
        # Without a password it is no guess: refused as such, spending nothing.
        for _ in range(5):
            bare = await client.get("/v2/user/login", params={"username": "dan"}, headers=owner)
            assert await error_of(Wire.JSON, bare) == (400, "password is required")
        other = await client.get(
            "/v2/user/login", params={"username": "dan", "password": PASSWORD}, headers=owner
        )
        assert other.status == 200
        assert other.headers["X-Rate-Limit"] == "120"
        metrics = metrics_text(client)
        assert 'gateway_rate_limited_total{limit="login"} 1.0' in metrics


async def test_sign_ups_are_limited_per_address_but_not_for_staff(
    limited_settings: GatewaySettings, backend: Backend
) -> None:
    clients = backend.clients()
    two_an_hour = replace(
        limited_settings, rate_limit_per_second=100, rate_limit_burst=100, signup_rate_limit_per_hour=2
    )
    async for client in serve_gateway(two_an_hour, clients):
        for n in range(2):
            response = await client.post(
                "/v2/user", json={"username": f"u{n}", "email": "u@example.com", "password": PASSWORD}
            )
            assert response.status == 200
        refused = await client.post(
            "/v2/user", json={"username": "u9", "email": "u@example.com", "password": PASSWORD}
        )
        assert await error_of(Wire.JSON, refused) == (
            429,
            "too many sign-ups from this address; retry after 1800 s",
        )
        assert refused.headers["Retry-After"] == "1800"
        staff = await client.post(
            "/v2/user",
            json={"username": "u8", "email": "u@example.com", "password": PASSWORD},
            headers={"api_key": STATIC_KEY},
        )
        assert staff.status == 200


async def test_every_session_of_a_customer_spends_one_budget(
    limited_settings: GatewaySettings, backend: Backend
) -> None:
    clients = backend.clients()
    await backend.add_user("ann", 1)
    first, second = await backend.login("ann"), await backend.login("ann")
    behind_proxy = replace(limited_settings, trusted_proxies=parse_networks(["127.0.0.1"]))
    async for client in serve_gateway(behind_proxy, clients):
        for token, address in ((first, "198.51.100.1"), (second, "198.51.100.2")):
            headers = {"api_key": token, "X-Forwarded-For": address}
            assert (await client.get("/v2/pet/abc", headers=headers)).status == 400
        # Burst 2 spent by two sessions from two addresses: a third session buys nothing.
        third = {"api_key": await backend.login("ann"), "X-Forwarded-For": "198.51.100.3"}
        assert (await client.get("/v2/pet/abc", headers=third)).status == 429
        # The address itself still has its own budget.
        assert (await client.get("/v2/pet/abc", headers={"X-Forwarded-For": "198.51.100.3"})).status == 400


async def test_an_ended_session_spends_its_address_budget(
    limited_settings: GatewaySettings, backend: Backend
) -> None:
    clients = backend.clients()
    await backend.add_user("ann", 1)
    stale = await backend.login("ann")
    await backend.logout(stale)  # logged out (or its password changed, or the account deleted)
    async for client in serve_gateway(limited_settings, clients):
        for _ in range(2):
            assert (await client.get("/v2/pet/abc")).status == 400  # the address's burst
        assert (await client.get("/v2/pet/abc", headers={"api_key": stale})).status == 429
        fresh = await backend.login("ann")
        assert (await client.get("/v2/pet/abc", headers={"api_key": fresh})).status == 400


async def test_with_both_limits_off_login_sends_no_allowance(
    settings: GatewaySettings, backend: Backend
) -> None:
    await backend.add_user("ann", 1)
    clients = backend.clients()
    off = replace(settings, rate_limit_per_second=0, login_rate_limit_per_minute=0)
    async for client in serve_gateway(off, clients):
        for _ in range(150):  # past the default burst of 100
            assert (await client.get("/v2/pet/abc")).status == 400
        response = await client.get("/v2/user/login", params={"username": "ann", "password": PASSWORD})
        assert response.status == 200
        assert "X-Rate-Limit" not in response.headers


async def test_a_service_out_of_capacity_is_429_with_retry_after(
    settings: GatewaySettings, backend: Backend
) -> None:
    real = backend.clients()
    clients = replace(real, pet=cast(Any, ExhaustedPets()))
    async for client in serve_gateway(settings, clients):
        response = await client.get("/v2/pet/1")
        assert await error_of(Wire.JSON, response) == (429, "Concurrent RPC limit exceeded!")
        assert response.headers["Retry-After"] == "1"
