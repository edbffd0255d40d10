"""What the webhook tests share: receivers that outlive one test's event loop, registering an
endpoint as staff, checking each delivery's signature, and telling, per order and per pet,
which events arrived, twice, or out of their order."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.exceptions import WebhookVerificationError

from petstore_devstack.webhook_receiver import ReceivedWebhook, WebhookReceiver
from petstore_webhook.event_types import ORDER_EVENT_TYPES, PET_EVENT_TYPES, event_type_names

ALL_EVENT_TYPES = event_type_names()
PLACEHOLDER_SECRET = "whsec_" + "cGxhY2Vob2xkZXItc2VjcmV0LWJlZm9yZS10aGUtZW5kcG9pbnQ="
"""The receivers start before their endpoint exists (its URL is theirs), so before the secret
does: the tests verify each delivery themselves with the endpoint's secret (`verify`)."""


def rank(event_type: str) -> int:
    """An event's place in its subject's life: its enum value (placed 1 < approved 2 <
    delivered 3 < cancelled/deleted; reserved 1 < sold/released). A subject's events, in
    sequence, have strictly rising ranks: the lifecycles never go back."""
    for names in (ORDER_EVENT_TYPES, PET_EVENT_TYPES):
        for value, name in names.items():
            if name == event_type:
                return value
    raise AssertionError(f"unknown event type {event_type!r}")


RECEIVER_HOST_ENV = "PETSTORE_E2E_WEBHOOK_HOST"
RECEIVER_PORTS_ENV = "PETSTORE_E2E_WEBHOOK_PORTS"
RECEIVER_TLS_DIR_ENV = "PETSTORE_E2E_WEBHOOK_TLS_DIR"


@dataclass(frozen=True)
class ReceiverPlacement:
    """Where the receivers listen in the container modes, so that the webhook service in its
    container or pod reaches them and trusts them: deploy/compose/e2e.sh and deploy/k8s/e2e.sh
    choose it before the stack starts and mount `tls_dir`'s ca.pem as its WEBHOOK_CA_FILE."""

    host: str
    """An address of this host the containers reach (the Docker bridge's, k3s's cni0)."""
    ports: tuple[int, int]
    """The steady receiver's port, then the scripted one's."""
    tls_dir: str
    """The certificate made for `host` (webhook_receiver.write_certificate)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ReceiverPlacement | None:
        """None when the run sets none (process mode, or a container mode run by hand)."""
        if not env.get(RECEIVER_HOST_ENV):
            return None
        steady, scripted = (int(port) for port in env[RECEIVER_PORTS_ENV].split(","))
        return cls(env[RECEIVER_HOST_ENV], (steady, scripted), env[RECEIVER_TLS_DIR_ENV])


class ReceiverThread:
    """WebhookReceivers served from an event loop of their own, in a thread: a test session's
    receivers must exist before the stack starts (the webhook service trusts their CAs, read at
    start-up), and pytest-asyncio gives each test a loop of its own. The tests read `received`
    (appended to from the thread) and script `answers` (a deque): both safe across threads."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="webhook-receivers", daemon=True)
        self.receivers: list[WebhookReceiver] = []

    def start(self, count: int, placement: ReceiverPlacement | None = None) -> list[WebhookReceiver]:
        self._thread.start()
        for index in range(count):
            if placement is None:
                receiver = WebhookReceiver(PLACEHOLDER_SECRET)
            else:
                receiver = WebhookReceiver(
                    PLACEHOLDER_SECRET,
                    host=placement.host,
                    port=placement.ports[index],
                    tls_dir=placement.tls_dir,
                )
            asyncio.run_coroutine_threadsafe(receiver.start(), self._loop).result(timeout=30)
            self.receivers.append(receiver)
        return self.receivers

    def stop(self) -> None:
        for receiver in self.receivers:
            asyncio.run_coroutine_threadsafe(receiver.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@dataclass(frozen=True)
class WebhookReceivers:
    """The e2e session's receivers."""

    steady: WebhookReceiver
    """Answers every request 204: each test's endpoint has a path of its own on it."""
    scripted: WebhookReceiver
    """For the one test that scripts its answers (`answers`): nobody else points at it."""
    ca_file: str
    """Both receivers' CAs in one PEM file: the webhook service's WEBHOOK_CA_FILE."""


@contextmanager
def threaded_receivers(
    ca_bundle: Path, placement: ReceiverPlacement | None = None
) -> Iterator[WebhookReceivers]:
    """The session's receivers, in a thread (on loopback, or as `placement` says), and
    `ca_bundle` written with their CAs."""
    thread = ReceiverThread()
    try:
        steady, scripted = thread.start(2, placement)
        ca_bundle.write_text(Path(steady.ca_file).read_text() + Path(scripted.ca_file).read_text())
        yield WebhookReceivers(steady, scripted, str(ca_bundle))
    finally:
        thread.stop()


def signature_error(item: ReceivedWebhook, secret: str) -> str:
    """Why the delivery does not verify against `secret` ("" when it does): Standard Webhooks'
    own check (headers, signature, a timestamp within five minutes of now)."""
    try:
        Webhook(secret).verify(item.body, dict(item.headers), json_parse=False)
    except (WebhookVerificationError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return ""


@dataclass
class Verifier:
    """Verifies what a receiver got for one endpoint as it arrives: a signature's timestamp is
    only good for five minutes, and a fault run's first deliveries are older than that by its
    end. `errors` maps the index of each delivery that failed to why."""

    receiver: WebhookReceiver
    path: str
    secret: str
    checked: int = 0
    errors: dict[int, str] = field(default_factory=dict)

    def mine(self) -> list[ReceivedWebhook]:
        return [item for item in self.receiver.received if item.path == self.path]

    def check_new(self) -> list[ReceivedWebhook]:
        items = self.mine()
        for index in range(self.checked, len(items)):
            error = signature_error(items[index], self.secret)
            if error:
                self.errors[index] = error
        self.checked = len(items)
        return items


def subject_of(payload: Mapping[str, Any]) -> str:
    """ "order:12" or "pet:7": whose event a webhook body tells of."""
    return f"{str(payload['type']).split('.', 1)[0]}:{payload['data']['id']}"


@dataclass(frozen=True)
class Arrival:
    id: str
    type: str
    subject: str
    payload: Mapping[str, Any]
    answer: object
    """What the receiver answered: an int status, or HANG."""

    @property
    def accepted(self) -> bool:
        """Answered 2xx: delivered. Anything else the sender must try again."""
        return isinstance(self.answer, int) and 200 <= self.answer < 300


def arrivals(items: Iterable[ReceivedWebhook]) -> list[Arrival]:
    found = []
    for item in items:
        payload = item.json()
        found.append(Arrival(item.id, payload["type"], subject_of(payload), payload, item.answer))
    return found


@dataclass
class Report:
    """Per subject, against the events expected of it (the acknowledged changes)."""

    expected: dict[str, list[str]]
    """subject -> the event types its acknowledged changes must have sent, in order."""
    delivered: dict[str, list[str]] = field(default_factory=dict)
    """subject -> the distinct event types it got, in order of first arrival."""
    duplicates: dict[str, int] = field(default_factory=dict)
    """subject -> arrivals of an id it had already got."""
    late_duplicates: dict[str, int] = field(default_factory=dict)
    """subject -> duplicates arriving after a later event of the subject's first arrival."""
    out_of_order: dict[str, list[str]] = field(default_factory=dict)
    """subject -> its first arrivals' types when they do not rise (an event overtook another)."""
    conflicting_ids: list[str] = field(default_factory=list)
    """Webhook-ids that came with two different bodies."""
    refused: int = 0
    """Requests the receiver did not accept (scripted 5xx or held): not deliveries."""

    @property
    def missing(self) -> dict[str, list[str]]:
        return {
            subject: [kind for kind in kinds if kind not in self.delivered.get(subject, [])]
            for subject, kinds in self.expected.items()
            if any(kind not in self.delivered.get(subject, []) for kind in kinds)
        }


def report(expected: dict[str, list[str]], seen: Sequence[Arrival]) -> Report:
    """Only what the receiver accepted counts: a request it refused (500, held) is not delivered,
    and its event must still come, before any later event of its subject."""
    result = Report(expected)
    bodies: dict[str, Mapping[str, Any]] = {}
    highest: dict[str, int] = {}
    for arrival in seen:
        subject = arrival.subject
        if not arrival.accepted:
            result.refused += 1
            continue
        if arrival.id in bodies:
            if bodies[arrival.id] != arrival.payload:
                result.conflicting_ids.append(arrival.id)
            result.duplicates[subject] = result.duplicates.get(subject, 0) + 1
            if rank(arrival.type) < highest.get(subject, 0):
                result.late_duplicates[subject] = result.late_duplicates.get(subject, 0) + 1
            continue
        bodies[arrival.id] = arrival.payload
        result.delivered.setdefault(subject, []).append(arrival.type)
        if rank(arrival.type) <= highest.get(subject, 0):
            result.out_of_order[subject] = result.delivered[subject]
        highest[subject] = max(highest.get(subject, 0), rank(arrival.type))
    return result


def describe(result: Report, *, arrivals_count: int, bad_signatures: int) -> str:
    expected = sum(len(kinds) for kinds in result.expected.values())
    delivered = sum(
        1
        for subject, kinds in result.expected.items()
        for kind in kinds
        if kind in result.delivered.get(subject, [])
    )
    extra = sum(len(kinds) for kinds in result.delivered.values()) - delivered
    lines = [
        "webhook delivery report",
        f"  events expected (acknowledged changes): {expected} over {len(result.expected)} orders and pets",
        f"  expected events delivered: {delivered}; missing: {sum(len(k) for k in result.missing.values())}",
        f"  further events delivered (changes that happened but whose answer the client never got): {extra}",
        f"  requests received: {arrivals_count}; with a bad signature: {bad_signatures}; refused by the "
        f"receiver on purpose (5xx, or held until the sender gave up): {result.refused}",
        f"  duplicated: {sum(result.duplicates.values())} arrivals of an id already received, over "
        f"{len(result.duplicates)} subjects; of them after a later event of the subject: "
        f"{sum(result.late_duplicates.values())}",
        f"  out of order: {len(result.out_of_order)} subjects; ids with two different bodies: "
        f"{len(result.conflicting_ids)}",
        "  Duplicates are at-least-once delivery doing its job: a delivery whose 2xx the webhook service",
        "  did not record before it was killed or frozen (or whose request timed out while it was",
        "  stopped) is sent again, with the same webhook-id, so a receiver drops it by that id.",
        "  Out of order would be a later event of an order or pet overtaking an earlier one: each",
        "  subject's next delivery waits until its earlier one is delivered, so there must be none.",
    ]
    if result.missing:
        lines.append(f"  MISSING: {dict(list(result.missing.items())[:20])}")
    if result.out_of_order:
        lines.append(f"  OUT OF ORDER: {dict(list(result.out_of_order.items())[:20])}")
    return "\n".join(lines)


async def wait_until(condition: Any, within: float, what: str, *, every: float = 0.2) -> None:
    """Poll `condition()` until true, failing with `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within}s")
        await asyncio.sleep(every)
