"""The one place in the gateway that reaches into aiohttp's internals: the connection guards
(connections.py) need to see a request's head and body as aiohttp parses them, and aiohttp has
no public API for that. Everything else uses aiohttp's public API only.

aiohttp's documented `web.Server` is a protocol factory making `web.RequestHandler`s
(exported, but documented only as what the Server makes); the guards subclass it through
`AdaptedHandler` and keep to its asyncio.Protocol methods (connection_made, data_received,
connection_lost) and its public methods (close, force_close, keep_alive, transport, peername).
What they need beyond that, and the internal each piece rests on (aiohttp 3.14):

- `parsed_count`: how many requests the parser has produced on this connection
  (`RequestHandler._request_count`, incremented in data_received for each parsed message):
  how the guards see that a head they fed was complete.
- `newest_parsed()`: the message parsed last and its body stream (`RequestHandler._messages`,
  the deque of parsed, not yet handled `(RawRequestMessage | _ErrInfo, StreamReader)`): its
  Content-Length and chunked flag, and the stream the body clocks watch, known as soon as the
  head is parsed (a request object exists only once the handler loop takes it).
- `queued`: requests parsed and waiting behind the one being handled (`_messages` again).
- `handling`: the request being handled, if any (`RequestHandler._current_request`).
- `closing`: aiohttp will take no more requests on this connection (`_force_close` or
  `_close`, set by force_close()/close() and by aiohttp itself on errors and shutdown).
- `stop_taking_requests()`: end aiohttp's request loop without closing the transport, so that a
  refusal can be written and the connection linger (`_force_close = True` and cancelling
  `_waiter`, the future the idle loop awaits); force_close() would close the transport too.
- `unparsable_answer()`: the answer to a request aiohttp could not parse, through
  `RequestHandler.handle_error(request, status, exc, message)`, which aiohttp calls for parser
  errors (no public hook: aio-libs/aiohttp#3287; middlewares never see them) and for a
  handler that failed outside the middlewares; `request.writer.output_size` tells whether an
  answer has begun (then none may follow).
- `AdaptedAppRunner.make_handler()`: the runner's handlers are made by the gateway, with the
  keywords given to AppRunner (keepalive_timeout, the parser limits, ...): through
  `AppRunner._make_server` (the runner's Server factory) and `Server._kwargs` (the keywords
  the Server passes on to each handler).
- The parser's exception types (`aiohttp.http_exceptions`, exported only in part): which
  error a request that cannot be parsed raises, re-exported here for refusals.py.

Behaviour relied on without reaching in, checked by the same test or the guards' tests: close()
on an idle connection stops its request loop but leaves the socket open (serving.py's drain
uses force_close()); aiohttp's lingering read of a body left unread takes a TimeoutError
(BodyTimedOut) in its stride.

gateway_tests/test_aiohttp_adapter.py checks each of these against the installed aiohttp;
`make aiohttp-next` runs it (and the connection guards' tests) against the newest release.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import StreamReader, web
from aiohttp.http import RawRequestMessage

# The parser's errors, by type (aiohttp.http exports only HttpProcessingError).
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
)

__all__ = (
    "TOO_MANY_HEADERS",
    "AdaptedAppRunner",
    "AdaptedHandler",
    "BadHttpMessage",
    "BadHttpMethod",
    "BadStatusLine",
    "HttpProcessingError",
    "InvalidHeader",
    "InvalidURLError",
    "LineTooLong",
    "RawRequestMessage",
)

TOO_MANY_HEADERS = "Too many headers received"
"""The message of the BadHttpMessage aiohttp raises past `max_headers` (no type of its own)."""


class AdaptedHandler(web.RequestHandler):
    """aiohttp's RequestHandler with what the guards need to know of it, under names of ours."""

    __slots__ = ()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The handler's loop (aiohttp keeps it as `_loop`; the running one is the same)."""
        return asyncio.get_running_loop()

    @property
    def parsed_count(self) -> int:
        """Requests (and unparsable ones) the parser produced on this connection so far."""
        return self._request_count

    def newest_parsed(self) -> tuple[RawRequestMessage, StreamReader] | None:
        """The request parsed last and its body stream, while it waits to be handled (None once
        the handler loop took it, or when aiohttp could not parse it)."""
        if not self._messages:
            return None
        message, payload = self._messages[-1]
        if not isinstance(message, RawRequestMessage):
            return None
        return message, payload

    @property
    def queued(self) -> bool:
        """Requests parsed and waiting to be handled."""
        return bool(self._messages)

    @property
    def handling(self) -> web.BaseRequest | None:
        """The request being handled."""
        return self._current_request

    @property
    def closing(self) -> bool:
        """aiohttp takes no more requests on this connection."""
        return self._force_close or self._close

    def stop_taking_requests(self) -> None:
        """End aiohttp's request loop and its parsing, leaving the transport open (to write a
        refusal and linger before closing it)."""
        self._force_close = True
        if self._waiter is not None:
            self._waiter.cancel()

    def unparsable_answer(self, status: int, exc: BaseException | None) -> web.StreamResponse | None:
        """The answer to a request aiohttp could not parse (`exc` its parser's error) or whose
        handler failed outside the middlewares (status 500 or 504, `exc` what it raised); None
        for aiohttp's own."""
        return None

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        answer = self.unparsable_answer(status, exc)
        if answer is None:
            return super().handle_error(request, status, exc, message)
        if not isinstance(exc, HttpProcessingError):
            # A handler's failure: aiohttp's log line, with the traceback (its answer dropped).
            super().handle_error(request, status, exc, message)
        if request.writer.output_size > 0:  # as aiohttp: an answer has begun, none can follow
            raise ConnectionError("an answer has begun: no error answer can follow")
        return answer


class _AdaptedServer(web.Server):
    """The Server AppRunner made, but making handlers with `make`."""

    def __init__(self, made: web.Server, make: Any) -> None:
        super().__init__(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            **made._kwargs,  # what AppRunner and the app passed on to each handler
        )
        self._make = make

    def __call__(self) -> web.RequestHandler:
        handler: web.RequestHandler = self._make(self, loop=self._loop, **self._kwargs)
        return handler


class AdaptedAppRunner(web.AppRunner):
    """An AppRunner whose connections are handled by `make_handler`'s handlers."""

    __slots__ = ()

    def make_handler(self, server: web.Server, **kwargs: Any) -> AdaptedHandler:
        """A handler for a new connection; `kwargs` are RequestHandler's keywords (loop, and
        those given to the runner), to be passed on."""
        raise NotImplementedError

    async def _make_server(self) -> web.Server:
        return _AdaptedServer(await super()._make_server(), self.make_handler)
