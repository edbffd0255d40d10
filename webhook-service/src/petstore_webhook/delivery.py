"""Sending deliveries: one worker per enabled endpoint, so a slow or hung endpoint delays only
its own deliveries, never another endpoint's.

A worker takes its endpoint's due deliveries (each subject's earliest pending one: the store
never hands out a later event of a subject before an earlier one is delivered), sends them
together, records each attempt, and sleeps until the next is due or it is woken (intake kept
new deliveries for it). A failed attempt is tried again after an exponential backoff with full
jitter; after `max_attempts` the endpoint is disabled, saying which event failed and how.

Every connection goes through `GuardedResolver`, which drops the addresses targets.py refuses:
an endpoint checked when registered cannot be pointed at the internal network later by
changing its DNS (rebinding). An IP-literal host is never resolved, so it is checked here.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from prometheus_client import Counter, Histogram

from petstore_webhook.payloads import webhook_body
from petstore_webhook.signing import USER_AGENT, signed_headers
from petstore_webhook.storage.base import (
    Attempt,
    Delivery,
    EndpointRecord,
    EndpointState,
    Outcome,
    WebhookStore,
)
from petstore_webhook.targets import IPNetwork, address_allowed

log = logging.getLogger(__name__)

BATCH = 32
"""Deliveries one worker sends at once (each of a different subject)."""
RESPONSE_BYTES_READ = 4096
"""What is read of a response body before it is dropped: the status is the answer."""
ERROR_CHARACTERS = 200
"""How much of a failure's description an attempt keeps."""
ENDPOINTS_REFRESH_SECONDS = 5.0
"""How often the supervisor re-reads the endpoint list (also at once when woken)."""
IDLE_SECONDS = 30.0
"""The longest a worker sleeps with nothing due: a safety net, wake-ups come sooner."""
STORE_ERROR_SECONDS = 1.0
"""A worker's pause after its store failed, before it tries again."""

DELIVERIES = Counter(
    "petstore_webhook_deliveries_total",
    "Delivery attempts, by outcome (delivered: a 2xx answer; failed: anything else).",
    ["outcome"],
)
ENDPOINTS_DISABLED = Counter(
    "petstore_webhook_endpoints_disabled_total",
    "Endpoints disabled because a delivery failed its last attempt.",
)
DELIVERY_SECONDS = Histogram(
    "petstore_webhook_delivery_seconds",
    "Time one delivery attempt took, connecting included, whatever its outcome.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """How deliveries are made (from WebhookSettings)."""

    max_attempts: int
    retry_base_seconds: float
    retry_max_seconds: float
    timeout_seconds: float
    allowed_networks: tuple[IPNetwork, ...] = ()
    ca_file: str | None = None


_JITTER = random.Random()  # noqa: S311 (spreads retries out; not a secret)


def retry_delay(attempts: int, policy: DeliveryPolicy, rng: random.Random | None = None) -> float:
    """Seconds before the next attempt after `attempts` failed ones: uniform in
    [0, min(max, base * 2**(attempts-1))] ("full jitter": retries of many deliveries spread out)."""
    exponent = min(attempts - 1, 64)  # 2**64 * base is past any max: no float overflow
    ceiling = min(policy.retry_max_seconds, policy.retry_base_seconds * 2.0**exponent)
    return (rng or _JITTER).uniform(0.0, ceiling)


def utc_now() -> datetime:
    return datetime.now(UTC)


class RefusedAddress(OSError):
    """The host resolves only to addresses deliveries may not reach."""


class GuardedResolver(AbstractResolver):
    """Resolves as aiohttp's default resolver does, keeping only the addresses
    `targets.address_allowed` allows; none left: RefusedAddress (the connection fails)."""

    def __init__(self, allowed_networks: Sequence[IPNetwork], inner: AbstractResolver | None = None) -> None:
        self._allowed = tuple(allowed_networks)
        self._inner = inner or aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        resolved = await self._inner.resolve(host, port, family)
        kept = [result for result in resolved if address_allowed(result["host"], self._allowed)]
        if not kept:
            refused = ", ".join(sorted({result["host"] for result in resolved}))
            raise RefusedAddress(f"{host} resolves to addresses deliveries may not reach ({refused})")
        return kept

    async def close(self) -> None:
        await self._inner.close()


def literal_address_refused(url: str, allowed_networks: Sequence[IPNetwork]) -> str | None:
    """Why `url` may not be sent to when its host is an IP address (aiohttp connects to those
    without asking the resolver); None when it may, or when its host is a name."""
    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if address_allowed(host, allowed_networks):
        return None
    return f"{host} is an address deliveries may not reach"


def client_tls(ca_file: str | None) -> ssl.SSLContext:
    """The system's trusted CAs, plus `ca_file`'s when given; certificates and names checked."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


@dataclass(frozen=True, slots=True)
class _Result:
    outcome: Outcome
    status: int = 0
    error: str = ""


class EndpointWorker:
    """Sends one endpoint's deliveries until cancelled or until it disables the endpoint."""

    def __init__(
        self,
        store: WebhookStore,
        endpoint: EndpointRecord,
        policy: DeliveryPolicy,
        tls: ssl.SSLContext,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.endpoint = endpoint
        self._store = store
        self._policy = policy
        self._tls = tls
        self._clock = clock
        self._woken = asyncio.Event()

    def wake(self) -> None:
        self._woken.set()

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(
            resolver=GuardedResolver(self._policy.allowed_networks), ssl=self._tls, limit=BATCH
        )
        async with aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self._policy.timeout_seconds),
            headers={"user-agent": USER_AGENT},
            trust_env=False,  # no proxy from the environment: the connection goes where checked
        ) as session:
            while True:
                try:
                    if await self._pass(session):
                        return
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("webhook worker failed; retrying", extra={"endpoint_id": self.endpoint.id})
                    await asyncio.sleep(STORE_ERROR_SECONDS)

    async def _pass(self, session: aiohttp.ClientSession) -> bool:
        """Send what is due, else sleep until something is; True once the endpoint is disabled."""
        self._woken.clear()
        due = await self._store.due_deliveries(self.endpoint.id, now=self._clock(), limit=BATCH)
        if due:
            failed_last = await asyncio.gather(*(self._deliver(session, delivery) for delivery in due))
            reasons = [reason for reason in failed_last if reason is not None]
            if reasons:  # once, after the whole batch: no request of it is still on its way
                await self._disable(reasons[0])
            return bool(reasons)
        next_at = await self._store.next_due(self.endpoint.id)
        wait = IDLE_SECONDS
        if next_at is not None:
            wait = min(wait, max(0.0, (next_at - self._clock()).total_seconds()))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await self._woken.wait()
        return False

    async def _deliver(self, session: aiohttp.ClientSession, delivery: Delivery) -> str | None:
        """One attempt of one delivery, recorded; why the endpoint is to be disabled when it
        was the delivery's last attempt and failed."""
        event = delivery.event
        attempt_number = delivery.attempts + 1
        now = self._clock()
        started = time.monotonic()
        result = await self._send(session, delivery, now)
        DELIVERY_SECONDS.observe(time.monotonic() - started)
        DELIVERIES.labels(outcome=result.outcome.value).inc()
        attempt = Attempt(
            endpoint_id=self.endpoint.id,
            message_id=event.id,
            event_type=event.type,
            attempt=attempt_number,
            attempted_at=now,
            outcome=result.outcome,
            response_status=result.status,
            error=result.error,
        )
        if result.outcome is Outcome.DELIVERED:
            await self._store.record_attempt(attempt, next_attempt_at=None)
            return None
        delay = retry_delay(attempt_number, self._policy)
        await self._store.record_attempt(attempt, next_attempt_at=self._clock() + timedelta(seconds=delay))
        if attempt_number < self._policy.max_attempts:
            return None
        return f"event {event.id} ({event.type}) failed {attempt_number} attempts; the last: {result.error}"

    async def _disable(self, reason: str) -> None:
        await self._store.disable_endpoint(self.endpoint.id, reason)
        ENDPOINTS_DISABLED.inc()
        log.warning("webhook endpoint disabled", extra={"endpoint_id": self.endpoint.id, "reason": reason})

    async def _send(self, session: aiohttp.ClientSession, delivery: Delivery, now: datetime) -> _Result:
        refused = literal_address_refused(self.endpoint.url, self._policy.allowed_networks)
        if refused is not None:
            return _Result(Outcome.FAILED, error=refused)
        body = webhook_body(delivery.event)
        headers = signed_headers(
            secret=self.endpoint.secret, message_id=delivery.event.id, body=body, now=now
        )
        try:
            async with session.post(
                self.endpoint.url, data=body, headers=headers, allow_redirects=False
            ) as answer:
                await answer.content.read(RESPONSE_BYTES_READ)
                status = answer.status
        except TimeoutError:
            return _Result(Outcome.FAILED, error=f"no answer within {self._policy.timeout_seconds:g} s")
        except (aiohttp.ClientError, OSError) as exc:
            return _Result(Outcome.FAILED, error=_describe(exc))
        if 200 <= status < 300:
            return _Result(Outcome.DELIVERED, status=status)
        return _Result(Outcome.FAILED, status=status, error=f"answered HTTP {status}")


def _describe(exc: BaseException) -> str:
    # aiohttp wraps the resolver's refusal in a connection error that does not repeat its words.
    refused = exc if isinstance(exc, RefusedAddress) else exc.__cause__
    text = str(refused) if isinstance(refused, RefusedAddress) else str(exc) or type(exc).__name__
    return text[:ERROR_CHARACTERS]


class DeliverySupervisor:
    """Keeps one worker task per enabled endpoint: starts the missing ones, stops those of
    endpoints deleted or disabled, restarts one that ended while its endpoint is enabled."""

    def __init__(
        self,
        store: WebhookStore,
        policy: DeliveryPolicy,
        *,
        refresh_seconds: float = ENDPOINTS_REFRESH_SECONDS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._policy = policy
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._tls = client_tls(policy.ca_file)
        self._workers: dict[int, tuple[EndpointWorker, asyncio.Task[None]]] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        """Cancelled workers not yet ended (closing their connections): held until they are."""
        self._refresh = asyncio.Event()

    def wake(self, endpoint_ids: Iterable[int]) -> None:
        """New deliveries for these endpoints: their workers look now (an endpoint without a
        worker yet makes the supervisor re-read the list)."""
        for endpoint_id in endpoint_ids:
            running = self._workers.get(endpoint_id)
            if running is None:
                self._refresh.set()
            else:
                running[0].wake()

    def running(self) -> frozenset[int]:
        """The endpoints whose workers run."""
        return frozenset(endpoint_id for endpoint_id, (_, task) in self._workers.items() if not task.done())

    async def run(self) -> None:
        try:
            while True:
                self._refresh.clear()
                try:
                    self._sync(await self._store.list_endpoints())
                except Exception:
                    log.exception("reading the webhook endpoints failed; retrying")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._refresh_seconds):
                        await self._refresh.wait()
        finally:
            await self._stop(list(self._workers))

    def _sync(self, endpoints: Sequence[EndpointRecord]) -> None:
        enabled = {endpoint.id: endpoint for endpoint in endpoints if endpoint.state is EndpointState.ENABLED}
        gone = [endpoint_id for endpoint_id in self._workers if endpoint_id not in enabled]
        for endpoint_id in gone:
            task = self._workers.pop(endpoint_id)[1]
            task.cancel()
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
        for endpoint_id, endpoint in enabled.items():
            running = self._workers.get(endpoint_id)
            if running is not None and not running[1].done():
                continue
            worker = EndpointWorker(self._store, endpoint, self._policy, self._tls, clock=self._clock)
            task = asyncio.create_task(worker.run(), name=f"webhook-endpoint-{endpoint_id}")
            task.add_done_callback(self._worker_ended)
            self._workers[endpoint_id] = (worker, task)

    def _worker_ended(self, task: asyncio.Task[None]) -> None:
        # A worker that disabled its endpoint ends; the next list read drops it.
        if not task.cancelled() and task.exception() is not None:
            log.error("webhook worker ended", exc_info=task.exception())
        self._refresh.set()

    async def _stop(self, endpoint_ids: Iterable[int]) -> None:
        tasks = [self._workers.pop(endpoint_id)[1] for endpoint_id in endpoint_ids] + list(self._stopping)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
