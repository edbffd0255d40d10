"""Webhooks through crashes: a bounded burst of orders (placed, approved, delivered, cancelled)
through the gateway while the webhook service is SIGKILLed and restarted, then frozen
(SIGSTOP/SIGCONT), the order service SIGKILLed and restarted, and the database frozen, then
killed and started again on its data; the receiver itself fails its first few requests (5xx, and
one held unanswered past the sender's timeout). Afterwards every event of every change the API
acknowledged (a 200) reaches the receiver: none missing, none with a bad signature, each order's
and each pet's in order. Duplicates are allowed (delivery is at least once) and counted.

The report printed at the end gives events expected, delivered, duplicated and out of order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import ClientSession

from petstore_devstack.stack import Stack
from petstore_devstack.webhook_receiver import HANG, WebhookReceiver
from petstore_webhook.event_types import event_type_names
from tests.e2e.webhooks import PLACEHOLDER_SECRET, Verifier, arrivals, describe, report, wait_until
from tests.faults.conftest import STATIC_KEY, Database, running_stack
from tests.faults.load import Outcome, Request, create_pets, send

# The database is this test's own FerretDB, which it freezes and kills.
pytestmark = pytest.mark.mongo

ORDERS = 60
BURST_SECONDS = 20.0
"""The orders start evenly over this long (one every third of a second), each then moved on."""
KEY_BUDGET_SECONDS = 60.0
"""How long a client retries one request (503, no answer, its key still at work): longer than
any outage of the run."""
DELIVERY_SECONDS = 120.0
"""How long after the burst every expected event may take to arrive: the outboxes are read
every WEBHOOK_POLL_SECONDS, and a delivery cut by a fault is retried within the backoff's cap."""
WEBHOOK_ENV = {
    "WEBHOOK_POLL_SECONDS": "0.5",
    "WEBHOOK_RETRY_BASE_SECONDS": "0.5",
    "WEBHOOK_RETRY_MAX_SECONDS": "4",
    "WEBHOOK_TIMEOUT_SECONDS": "5",
    "WEBHOOK_MAX_ATTEMPTS": "100",
}
"""Retries close together and never giving up within the run: the receiver always answers 204,
so every failure here is a fault of the run's making, and the endpoint must not be disabled."""
IN_PROGRESS = "still being processed"
"""The 409 of an Idempotency-Key whose first attempt is still at work: retried."""
PLANS = ("deliver", "cancel", "approve")
"""What happens to order i after it is placed: PLANS[i % 3] (approve and deliver; cancel; approve)."""


@dataclass
class Ledger:
    """What the clients were told."""

    expected: dict[str, list[str]] = field(default_factory=dict)
    """subject ("order:12", "pet:7") -> the event types its acknowledged changes send, in order."""
    unacknowledged: list[str] = field(default_factory=list)
    """Requests whose effect is unknown to the client (no 200 within the budget, or a 404 for a
    cancel whose earlier attempt went unanswered): their events may come, or not."""
    answers: dict[str, int] = field(default_factory=dict)

    def expect(self, subject: str, *event_types: str) -> None:
        self.expected.setdefault(subject, []).extend(event_types)


async def until_settled(session: ClientSession, request: Request, ledger: Ledger) -> tuple[Outcome, bool]:
    """Send until the answer is definite (not 503, no answer, or a key still at work) or the
    budget is spent. The last answer, and whether an earlier attempt went unanswered."""
    deadline = time.monotonic() + KEY_BUDGET_SECONDS
    retried = False
    while True:
        outcome = await send(session, request)
        label = f"{request.name.split()[0]} {outcome.status}"
        ledger.answers[label] = ledger.answers.get(label, 0) + 1
        in_progress = outcome.status == 409 and IN_PROGRESS in json.dumps(outcome.body)
        if not (outcome.status in (None, 500, 502, 503, 504) or in_progress) or time.monotonic() > deadline:
            return outcome, retried
        retried = True
        await asyncio.sleep(0.2)


async def one_order(
    session: ClientSession, base: str, number: int, pet_id: int, ledger: Ledger, start_at: float
) -> None:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    key = f"webhook-fault-{number}"
    place = Request(
        f"place {number}",
        "POST",
        f"{base}/store/order",
        {"petId": pet_id},
        STATIC_KEY,
        (("Idempotency-Key", key),),
    )
    placed, _ = await until_settled(session, place, ledger)
    if placed.status != 200:
        ledger.unacknowledged.append(f"{place.name}: {placed.status}")
        return
    order_id = placed.body["id"]
    order, pet = f"order:{order_id}", f"pet:{pet_id}"
    ledger.expect(order, "order.placed")
    ledger.expect(pet, "pet.reserved")
    plan = PLANS[number % len(PLANS)]
    if plan == "cancel":
        await asyncio.sleep(0.3)
        cancel = Request(f"cancel {order_id}", "DELETE", f"{base}/store/order/{order_id}", api_key=STATIC_KEY)
        cancelled, retried = await until_settled(session, cancel, ledger)
        if cancelled.status == 200:
            ledger.expect(order, "order.cancelled")
            ledger.expect(pet, "pet.released")
        else:  # a 404 after a retry: the unanswered attempt cancelled it
            assert (cancelled.status, retried) == (404, True) or cancelled.status in (None, 503), cancelled
            ledger.unacknowledged.append(f"{cancel.name}: {cancelled.status}")
        return
    for status in ("approved", "delivered")[: 2 if plan == "deliver" else 1]:
        await asyncio.sleep(0.3)
        move = Request(
            f"{status} {order_id}", "PUT", f"{base}/store/order/{order_id}", {"status": status}, STATIC_KEY
        )
        moved, _ = await until_settled(session, move, ledger)
        if moved.status != 200:
            assert moved.status in (None, 503), moved
            ledger.unacknowledged.append(f"{move.name}: {moved.status}")
            return
        ledger.expect(order, f"order.{status}")
        if status == "delivered":
            ledger.expect(pet, "pet.sold")


@dataclass
class Faults:
    """The run's faults, one after another, each on a process of this test's own (by PID)."""

    stack: Stack
    database: Database
    done: list[str] = field(default_factory=list)

    async def run(self) -> None:
        for wait, fault in (
            (2.0, self.kill_webhook_service),
            (2.0, self.freeze_webhook_service),
            (2.0, self.kill_order_service),
            (2.0, self.freeze_database),
            (2.0, self.kill_database),
        ):
            await asyncio.sleep(wait)  # orders flow between faults
            started = time.monotonic()
            await asyncio.to_thread(fault)
            self.done.append(f"{fault.__name__} ({time.monotonic() - started:.1f} s)")

    def _kill(self, name: str) -> None:
        process = self.stack.processes[name].process
        assert process is not None
        assert process.poll() is None, f"{name} was not running"
        process.send_signal(signal.SIGKILL)
        process.wait()
        time.sleep(1.0)
        self.stack.start_process(name)  # returns once it is healthy

    def kill_webhook_service(self) -> None:
        self._kill("webhook")

    def freeze_webhook_service(self) -> None:
        self.stack.signal("webhook", signal.SIGSTOP)
        time.sleep(2.5)
        self.stack.signal("webhook", signal.SIGCONT)

    def kill_order_service(self) -> None:
        self._kill("order")

    def freeze_database(self) -> None:
        self.database.freeze()
        time.sleep(2.5)
        self.database.thaw()

    def kill_database(self) -> None:
        self.database.kill()
        time.sleep(1.0)
        self.database.start()


async def register(session: ClientSession, base: str, receiver: WebhookReceiver) -> tuple[str, str]:
    """An endpoint for every event type on a path of its own: its path and secret."""
    path = "/webhooks/fault-run"
    url = receiver.url.removesuffix("/webhooks") + path
    body = {"url": url, "eventTypes": list(event_type_names())}
    created = await send(session, Request("register", "POST", f"{base}/webhooks", body, STATIC_KEY))
    assert created.status == 200, created
    return path, str(created.body["secret"])


async def test_every_acknowledged_change_reaches_the_receiver_through_crashes(
    database: Database, log_dir: Path, session: ClientSession, capsys: pytest.CaptureFixture[str]
) -> None:
    async with WebhookReceiver(PLACEHOLDER_SECRET) as receiver:
        env = {**WEBHOOK_ENV, "WEBHOOK_CA_FILE": receiver.ca_file}
        # Started and stopped from a thread: the receiver's loop (this one) serves meanwhile.
        context = running_stack(log_dir, mongodb_uri=database.uri, **env)
        stack = await asyncio.to_thread(context.__enter__)
        try:
            await run_and_check(stack, database, receiver, session, capsys)
        finally:
            await asyncio.to_thread(context.__exit__, None, None, None)


async def run_and_check(
    stack: Stack,
    database: Database,
    receiver: WebhookReceiver,
    session: ClientSession,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = stack.base_url
    path, secret = await register(session, base, receiver)
    verifier = Verifier(receiver, path, secret)
    pets = await create_pets(session, base, STATIC_KEY, ORDERS, name="webhook fault")
    ledger = Ledger()
    started = time.monotonic()
    burst = [
        asyncio.create_task(one_order(session, base, n, pet, ledger, started + n * BURST_SECONDS / ORDERS))
        for n, pet in enumerate(pets)
    ]
    # The receiver fails a few requests on its own, one by never answering: their events come
    # again, and no later event of their order or pet may overtake them meanwhile.
    receiver.answers.extend([500, HANG, 503, 500])
    faults = Faults(stack, database)
    verifying = asyncio.create_task(keep_verifying(verifier))
    try:
        await faults.run()
        await asyncio.gather(*burst)
        burst_over = time.monotonic()
        with contextlib.suppress(AssertionError):  # the report below says what is missing
            await wait_until(
                lambda: not report(ledger.expected, arrivals(verifier.check_new())).missing,
                DELIVERY_SECONDS,
                "every expected event",
                every=0.5,
            )
        waited = time.monotonic() - burst_over
        await asyncio.sleep(2.0)  # a last duplicate in flight is counted too
    finally:
        verifying.cancel()
    items = verifier.check_new()
    seen = arrivals(items)
    # Only the run's own orders and pets (the service may hold nothing else, but say so if it does).
    result = report(ledger.expected, [arrival for arrival in seen if arrival.subject in ledger.expected])
    endpoint = await send(session, Request("list", "GET", f"{base}/webhooks", api_key=STATIC_KEY))
    with capsys.disabled():  # the report is the test's point: shown whether it passes or not
        print(
            "\n== webhook delivery through crashes",
            f"faults: {', '.join(faults.done)}",
            f"answers: {dict(sorted(ledger.answers.items()))}",
            f"unacknowledged requests ({len(ledger.unacknowledged)}): {ledger.unacknowledged[:20]}",
            f"waited {waited:.1f} s after the burst ({time.monotonic() - started:.1f} s in all)",
            describe(result, arrivals_count=len(items), bad_signatures=len(verifier.errors)),
            f"endpoint afterwards: {endpoint.body}",
            sep="\n",
        )

    assert len(faults.done) == 5, faults.done
    placed = [subject for subject in ledger.expected if subject.startswith("order:")]
    assert len(placed) == ORDERS, ledger.unacknowledged  # every order got its 200 within its budget
    assert not verifier.errors, dict(list(verifier.errors.items())[:5])
    assert not result.missing, result.missing
    assert not result.out_of_order, result.out_of_order
    assert not result.conflicting_ids, result.conflicting_ids
    # Events of no order or pet of the run come only from changes the clients were not told of.
    stray = sorted({arrival.subject for arrival in seen} - set(ledger.expected))
    print(f"events of subjects nobody was told of a change to: {stray}")
    if not ledger.unacknowledged:
        assert not stray


async def keep_verifying(verifier: Verifier) -> None:
    """Check each delivery's signature as it comes (its timestamp is good for five minutes)."""
    while True:
        verifier.check_new()
        await asyncio.sleep(0.25)
