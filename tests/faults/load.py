"""Steady background load for the fault tests: a few workers cycling through requests and
recording every outcome, including the ones that never got an HTTP answer."""

from __future__ import annotations

import asyncio
import json
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
    """`async with SteadyLoad(session, requests):` runs `workers` loops until the block ends."""

    session: ClientSession
    requests: Sequence[Request]
    workers: int = 4
    pause_seconds: float = 0.02
    outcomes: list[Outcome] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stopping: bool = False

    async def __aenter__(self) -> SteadyLoad:
        self._tasks = [asyncio.create_task(self._work(offset)) for offset in range(self.workers)]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping = True
        await asyncio.gather(*self._tasks)

    def between(self, start: float, end: float, name: str | None = None) -> list[Outcome]:
        return [o for o in self.outcomes if start <= o.started < end and (name is None or o.request == name)]

    async def _work(self, offset: int) -> None:
        turn = offset
        while not self._stopping:
            self.outcomes.append(await send(self.session, self.requests[turn % len(self.requests)]))
            turn += 1
            await asyncio.sleep(self.pause_seconds)


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


async def wait_for(session: ClientSession, request: Request, status: int, within: float) -> float:
    """Poll until `request` answers `status`; returns the time (monotonic) it first did."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        outcome = await send(session, request)
        if outcome.status == status:
            return outcome.started
        await asyncio.sleep(0.05)
    raise AssertionError(f"{request.name} did not answer {status} within {within}s")
