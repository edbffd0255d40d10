"""Steady background load for the fault tests: a few workers cycling through requests and
recording every outcome, including the ones that never got an HTTP answer. An order reserves
its pet, and a pet is ordered once (docs/sale.md), so a test that places orders gives each its
own pet: `create_pets` makes them up front, `order_requests` one order for each."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import ClientError, ClientSession


@dataclass(frozen=True)
class Request:
    name: str
    method: str
    url: str
    body: Any = None
    api_key: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Outcome:
    request: str
    started: float
    """time.monotonic() when the request was sent"""
    elapsed: float
    status: int | None
    """None when no HTTP answer came back (connection refused or cut)"""
    body: Any = None
    failure: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_error_body(self) -> bool:
        """The ApiResponse error body with the answer's own status as its code."""
        body = self.body
        return isinstance(body, dict) and body.get("type") == "error" and body.get("code") == self.status


@dataclass
class SteadyLoad:
    """`async with SteadyLoad(session, requests):` runs `workers` loops until the block ends.

    The workers take the requests in turn from one shared cursor, so each request is sent once
    per pass over the list: a list of distinct orders (each of its own pet) sends every order
    once, as long as the load does not wrap around (`wrapped`; size such a list with
    `most_requests`). With `then`, the list is sent once and `then` cycles after it: orders of
    a bounded pool first, reads for as long as the load runs."""

    session: ClientSession
    requests: Sequence[Request]
    workers: int = 4
    pause_seconds: float = 0.02
    then: Sequence[Request] = ()
    outcomes: list[Outcome] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stopping: bool = False
    _taken: int = 0

    async def __aenter__(self) -> SteadyLoad:
        self._tasks = [asyncio.create_task(self._work()) for _ in range(self.workers)]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping = True
        await asyncio.gather(*self._tasks)

    def between(self, start: float, end: float, name: str | None = None) -> list[Outcome]:
        return [o for o in self.outcomes if start <= o.started < end and (name is None or o.request == name)]

    @property
    def taken(self) -> int:
        """How many requests the workers have taken from the list (sent or being sent)."""
        return self._taken

    @property
    def wrapped(self) -> bool:
        """Whether some request of the list was taken a second time (never, with `then`)."""
        return not self.then and self._taken > len(self.requests)

    def _next(self) -> Request:
        if self._taken < len(self.requests) or not self.then:
            return self.requests[self._taken % len(self.requests)]
        return self.then[(self._taken - len(self.requests)) % len(self.then)]

    async def _work(self) -> None:
        while not self._stopping:
            request = self._next()
            self._taken += 1
            self.outcomes.append(await send(self.session, request))
            await asyncio.sleep(self.pause_seconds)


def most_requests(seconds: float, workers: int = 4, pause_seconds: float = 0.02) -> int:
    """The most requests a SteadyLoad of `workers` can take in `seconds`: each worker pauses
    `pause_seconds` after every answer, so however fast the answers, it sends no more."""
    return math.ceil(seconds * workers / pause_seconds) + workers


async def send(session: ClientSession, request: Request) -> Outcome:
    headers = {"Accept": "application/json", **dict(request.headers)}
    if request.api_key:
        headers["api_key"] = request.api_key
    started = time.monotonic()
    try:
        async with session.request(request.method, request.url, json=request.body, headers=headers) as reply:
            text = await reply.text()
            status = reply.status
            reply_headers = dict(reply.headers)
    except (TimeoutError, ClientError) as exc:
        return Outcome(request.name, started, time.monotonic() - started, None, failure=type(exc).__name__)
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    return Outcome(request.name, started, time.monotonic() - started, status, body, headers=reply_headers)


async def create_pet(session: ClientSession, base: str, api_key: str, name: str = "Rex") -> Outcome:
    """A pet created through the gateway at `base` (asserted): what most fault tests start from."""
    created = await send(
        session, Request("create", "POST", f"{base}/pet", {"name": name, "photoUrls": []}, api_key)
    )
    assert created.status == 200, created
    return created


async def create_pets(
    session: ClientSession, base: str, api_key: str, count: int, name: str = "pool", at_once: int = 16
) -> list[int]:
    """`count` new pets (each asserted), `at_once` created at a time: pets nobody has ordered,
    one for each order a test will place. Named `name` and their number, without a status."""
    slots = asyncio.Semaphore(at_once)

    async def one(number: int) -> int:
        async with slots:
            created = await create_pet(session, base, api_key, f"{name} {number}")
        pet_id: int = created.body["id"]
        return pet_id

    return list(await asyncio.gather(*(one(number) for number in range(count))))


def order_requests(
    base: str, api_key: str, pet_ids: Sequence[int], name: str = "order", **body: Any
) -> list[Request]:
    """One order (POST /store/order, all named `name`) for each pet of `pet_ids`, with `body`
    besides its petId."""
    return [
        Request(name, "POST", f"{base}/store/order", {"petId": pet_id, **body}, api_key) for pet_id in pet_ids
    ]


async def wait_for(session: ClientSession, request: Request, status: int, within: float) -> float:
    """Poll until `request` answers `status`; returns the time (monotonic) it first did."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        outcome = await send(session, request)
        if outcome.status == status:
            return outcome.started
        await asyncio.sleep(0.05)
    raise AssertionError(f"{request.name} did not answer {status} within {within}s")
