"""Timeouts for clients that connect and then stall: slow headers, stalled bodies, idle
keep-alive.

aiohttp closes a connection that has no complete request `keepalive_timeout` after it opened
or after its last answer, and nothing else: a body that stops arriving waits for ever. Here a
RequestHandler subclass adds the two missing clocks:

- headers: from the first byte of a request to the end of its headers, at most
  `header_seconds`; past it the client gets a bare 408 and the connection is closed;
- body: while a request's body is unfinished and the gateway is ready for more (the transport
  is reading), a byte must arrive every `body_seconds`; past it the body's stream fails with
  BodyTimedOut, which the body readers answer with 408, and the connection closes after the
  answer (aiohttp closes a connection whose body was not read to the end).

Checks are timer handles armed on arrival of data and re-armed at their deadline, as aiohttp's
own keep-alive check is: no per-chunk rescheduling.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from petstore_gateway.settings import GatewaySettings

REQUEST_TIMEOUT_ANSWER = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
"""Written raw: the headers never ended, so no request exists for aiohttp to answer."""


class BodyTimedOut(asyncio.TimeoutError):
    """Set on a request's body stream when it made no progress for the body timeout. A
    TimeoutError so that aiohttp's lingering read of an unread body takes it in its stride."""


@dataclass(frozen=True, slots=True)
class ConnectionTimeouts:
    header_seconds: float
    body_seconds: float
    keepalive_seconds: float

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> ConnectionTimeouts:
        return cls(
            header_seconds=settings.header_timeout_seconds,
            body_seconds=settings.body_timeout_seconds,
            keepalive_seconds=settings.keepalive_timeout_seconds,
        )


class GuardedRequestHandler(RequestHandler):
    __slots__ = ("_body_handle", "_head_handle", "_last_data", "_timeouts")

    def __init__(self, manager: web.Server, *, timeouts: ConnectionTimeouts, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._timeouts = timeouts
        self._head_handle: asyncio.TimerHandle | None = None
        self._body_handle: asyncio.TimerHandle | None = None
        self._last_data = self._loop.time()

    def _awaiting_request(self) -> bool:
        """True while aiohttp waits for the next request's headers to complete."""
        waiter = self._waiter
        return waiter is not None and not waiter.done() and not self._messages

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not data:  # aiohttp re-parses its buffer with b"" on resuming: no news from the client
            return
        now = self._loop.time()
        self._last_data = now
        if self._awaiting_request():
            if self._head_handle is None:
                self._head_handle = self._loop.call_at(now + self._timeouts.header_seconds, self._check_head)
        else:
            self._cancel_head_check()
            if self._body_handle is None:
                self._body_handle = self._loop.call_at(now + self._timeouts.body_seconds, self._check_body)

    def _cancel_head_check(self) -> None:
        if self._head_handle is not None:
            self._head_handle.cancel()
            self._head_handle = None

    def _check_head(self) -> None:
        self._head_handle = None
        if self.transport is None or self._force_close or not self._awaiting_request():
            return
        self.transport.write(REQUEST_TIMEOUT_ANSWER)
        self.force_close()

    def _check_body(self) -> None:
        self._body_handle = None
        if self.transport is None or self._force_close:
            return
        request = self._current_request
        if request is None:
            if self._messages:  # a pipelined request not yet started: look again later
                self._body_handle = self._loop.call_later(self._timeouts.body_seconds, self._check_body)
            return
        body = request.content
        if body.is_eof() or body.exception() is not None:
            return
        now = self._loop.time()
        if not self.transport.is_reading():  # paused by the gateway: the client is not late
            self._last_data = now
        deadline = self._last_data + self._timeouts.body_seconds
        if now >= deadline:
            body.set_exception(BodyTimedOut(f"no body bytes for {self._timeouts.body_seconds:g} s"))
            return
        self._body_handle = self._loop.call_at(deadline, self._check_body)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_head_check()
        if self._body_handle is not None:
            self._body_handle.cancel()
            self._body_handle = None
        super().connection_lost(exc)


class GuardedServer(web.Server):
    """aiohttp's Server, making GuardedRequestHandlers."""

    def __init__(self, made: web.Server, timeouts: ConnectionTimeouts) -> None:
        super().__init__(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            **made._kwargs,  # what AppRunner and the app passed on to each handler
        )
        self.timeouts = timeouts

    def __call__(self) -> RequestHandler:
        return GuardedRequestHandler(self, loop=self._loop, timeouts=self.timeouts, **self._kwargs)


class GuardedAppRunner(web.AppRunner):
    """An AppRunner whose connections keep the timeouts. aiohttp's own keep-alive clock is the
    idle timeout; an unread body is drained for at most the body timeout before its connection
    is closed (aiohttp's lingering time)."""

    __slots__ = ("_timeouts",)

    def __init__(self, app: web.Application, *, timeouts: ConnectionTimeouts, **kwargs: Any) -> None:
        super().__init__(
            app, keepalive_timeout=timeouts.keepalive_seconds, lingering_time=timeouts.body_seconds, **kwargs
        )
        self._timeouts = timeouts

    async def _make_server(self) -> web.Server:
        return GuardedServer(await super()._make_server(), self._timeouts)
