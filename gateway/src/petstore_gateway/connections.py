"""Guards on connections against clients that stall, drip or send too much: slow or oversized
heads, bodies that drip, idle keep-alive, and aiohttp's own answer to what it cannot parse.

aiohttp closes a connection that has no complete request `keepalive_timeout` after it opened
or after its last answer, and nothing else: a body that stops arriving waits for ever, a head
may hold about 1 MiB. Here a RequestHandler subclass adds:

- head size: a head (request line and headers) has at most MAX_HEAD_BYTES bytes and
  MAX_HEAD_LINES lines, counted before aiohttp parses them; past either, 431. One client
  address has at most MAX_UNFINISHED_HEADS_PER_ADDRESS unfinished heads, and all unfinished
  heads together at most MAX_UNFINISHED_HEAD_BYTES (head_limits.py); past those the newest
  connection is answered and closed;
- head time: from the first byte of a head to its end, at most `header_seconds`; past it 408
  and the connection is closed;
- body silence: while a request's body is unfinished and the gateway is ready for more (the
  transport is reading), a byte must arrive every `body_seconds`;
- body deadline: a body must be complete `body_seconds` + its length / MIN_BODY_BYTES_PER_SECOND
  after its head (its length: the Content-Length, or the largest body for a chunked one).
  With the defaults a 1 MiB body has 10 + 16 = 26 s: a client dripping a byte now and then is
  cut off by then, however steadily it drips. Past either body clock the body's stream fails
  with BodyTimedOut, which the body readers answer with 408 (ApiResponse), and the connection
  closes after the answer (aiohttp closes a connection whose body was not read to the end);
- aiohttp's answer to a request it cannot parse (handle_error, its public hook) is the
  product's JSON error body with nosniff, by the error's type, never quoting the bytes sent.

What the guards need to know of aiohttp's parsing (is a head complete, which body stream is
its, is aiohttp still taking requests) has no public API: aiohttp_adapter.py is the one module
that reads it from aiohttp's internals; this one uses that module and aiohttp's public API.

Each cut is one WARNING line naming the reason and the peer address, without a traceback.
Checks are timer handles armed on arrival of data and re-armed at their deadline, as aiohttp's
own keep-alive check is: no per-chunk rescheduling.

To count a head's bytes exactly, each read is fed to aiohttp's parser in pieces that end where
a head or a Content-Length body ends: a read that holds the end of a body and the start of the
next (pipelined) head has its head part counted too. A chunked body's end is not known before
the parser has seen it: what follows the last blank line of the read it ends in is counted.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import StreamReader, web

from petstore_gateway.aiohttp_adapter import (
    AdaptedAppRunner,
    AdaptedHandler,
    HttpProcessingError,
    RawRequestMessage,
)
from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER
from petstore_gateway.head_limits import AIOHTTP_PARSER_LIMITS, MAX_HEAD_BYTES, MAX_HEAD_LINES, HeadLedger
from petstore_gateway.keys import SETTINGS
from petstore_gateway.refusals import (
    HEAD_TIMED_OUT,
    HEAD_TOO_LARGE,
    HEAD_TOO_LONG,
    TOO_MANY_HEADS,
    TOO_MANY_HEADS_FROM_ADDRESS,
    failure_response,
    parse_failure,
    raw_error,
)
from petstore_gateway.settings import MAX_BODY_BYTES, GatewaySettings

log = logging.getLogger(__name__)

MIN_BODY_BYTES_PER_SECOND = 64 * 1024
"""The slowest upload a body may average after its first `body_seconds` (512 kbit/s, a poor
mobile uplink): a 1 MiB body gets 16 s on top of the body timeout."""
REFUSAL_LINGER_SECONDS = 1.0
"""How long what a refused client still sends is read and dropped after the answer."""
HEAD_END = b"\r\n\r\n"
"""Where a head ends (aiohttp's request parser wants CRLF line ends)."""


class BodyTimedOut(asyncio.TimeoutError):
    """Set on a request's body stream when it made no progress for the body timeout, or was not
    complete by its deadline. A TimeoutError so that aiohttp's lingering read of an unread body
    takes it in its stride."""


@dataclass(frozen=True, slots=True)
class ConnectionTimeouts:
    header_seconds: float
    body_seconds: float
    keepalive_seconds: float
    max_body_bytes: int = MAX_BODY_BYTES
    """The length a chunked body's deadline is reckoned for."""

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> ConnectionTimeouts:
        return cls(
            header_seconds=settings.header_timeout_seconds,
            body_seconds=settings.body_timeout_seconds,
            keepalive_seconds=settings.keepalive_timeout_seconds,
            max_body_bytes=settings.max_body_bytes,
        )

    def body_deadline_seconds(self, length: int | None) -> float:
        """How long after its head a body of this Content-Length must be complete."""
        size = self.max_body_bytes if length is None else min(length, self.max_body_bytes)
        return self.body_seconds + size / MIN_BODY_BYTES_PER_SECOND


def cut(reason: str, address: str, status: int | None = None) -> None:
    """The one log line of a connection cut off (or a request refused) by a guard: why, the
    peer's address (no request was read, so no proxy's word about the client is known), and
    the status answered when one was."""
    fields: dict[str, object] = {"reason": reason, "client": address}
    if status is not None:
        fields["status"] = status
    log.warning("connection cut: %s", reason, extra=fields)


def _content_length(message: RawRequestMessage) -> int | None:
    """The raw body length of a message that is not chunked (0 without Content-Length)."""
    if message.chunked:
        return None
    value = message.headers.get("Content-Length", "0")
    return int(value) if value.isdigit() else 0


class GuardedRequestHandler(AdaptedHandler):
    __slots__ = (
        "_body_deadlines",
        "_body_handle",
        "_body_left",
        "_body_payload",
        "_head_bytes",
        "_head_handle",
        "_head_lines",
        "_head_open",
        "_head_tail",
        "_last_data",
        "_ledger",
        "_linger_handle",
        "_peer",
        "_timeouts",
    )

    def __init__(
        self, manager: web.Server, *, timeouts: ConnectionTimeouts, ledger: HeadLedger, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._timeouts = timeouts
        self._ledger = ledger
        self._peer = ""
        self._head_handle: asyncio.TimerHandle | None = None
        self._body_handle: asyncio.TimerHandle | None = None
        self._linger_handle: asyncio.TimerHandle | None = None
        self._last_data = self.loop.time()
        # The head being received: open in the ledger, its bytes and lines so far, and its last
        # 3 bytes (a head end split across reads).
        self._head_open = False
        self._head_bytes = 0
        self._head_lines = 0
        self._head_tail = b""
        # The body being received: its stream, and its raw bytes still to come (None: chunked).
        self._body_payload: StreamReader | None = None
        self._body_left: int | None = 0
        self._body_deadlines: dict[int, float] = {}
        """id(body stream) -> when it must be complete, for the bodies received and unfinished."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self._peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""

    # --- receiving: a read is fed to the parser a head or a Content-Length body at a time ---

    def data_received(self, data: bytes) -> None:
        if not data:  # aiohttp re-parses its buffer with b"" on resuming: no news from the client
            super().data_received(data)
            return
        now = self.loop.time()
        self._last_data = now
        while data and not self.closing:
            data = self._feed_body(data, now) if self._in_body() else self._feed_head(data, now)

    def _in_body(self) -> bool:
        payload = self._body_payload
        if payload is None:
            return False
        if payload.is_eof():  # (one that failed, 408 or 413, is still being received: a body)
            self._body_done(payload)
            return False
        return True

    def _feed_head(self, data: bytes, now: float) -> bytes:
        """Feed the head part of `data`; what follows the head's end."""
        end = (self._head_tail + data).find(HEAD_END)
        size = len(data) if end < 0 else end + len(HEAD_END) - len(self._head_tail)
        piece, rest = data[:size], data[size:]
        refusal = self._head_grows(piece)
        if refusal is not None:
            self._refuse_head(*refusal)
            return b""
        if self._head_handle is None:
            self._head_handle = self.loop.call_at(now + self._timeouts.header_seconds, self._check_head)
        count = self.parsed_count
        super().data_received(piece)
        if self.parsed_count == count:  # still unfinished (or blank lines before a head)
            self._head_tail = (self._head_tail + piece)[-(len(HEAD_END) - 1) :]
            return rest
        self._head_done()
        if not self._adopt_newest_message(now, fed_whole=False, body_started=bool(rest)):
            return b""
        return rest

    def _adopt_newest_message(self, now: float, *, fed_whole: bool, body_started: bool) -> bool:
        """The message aiohttp parsed last becomes the one whose body is being received, if it
        has one; False when aiohttp could not parse it (it answers and closes). `fed_whole`: it
        came in a read fed to the parser whole, so how much of its body came is not known."""
        parsed = self.newest_parsed()
        if parsed is None:
            return False
        message, payload = parsed
        if not payload.is_eof():
            self._body_payload = payload
            length = _content_length(message)
            # A body that began in a read fed whole: its end is found as a chunked one's is.
            self._body_left = None if fed_whole else length
            self._body_deadlines[id(payload)] = now + self._timeouts.body_deadline_seconds(length)
            if self._body_handle is None and body_started:
                self._body_handle = self.loop.call_at(now + self._timeouts.body_seconds, self._check_body)
        return True

    def _feed_body(self, data: bytes, now: float) -> bytes:
        """Feed the body part of `data`; what follows the body's end."""
        if self._body_handle is None:
            self._body_handle = self.loop.call_at(now + self._timeouts.body_seconds, self._check_body)
        left = self._body_left
        if left is not None:
            piece, rest = data[:left], data[left:]
            self._body_left = left - len(piece)
            super().data_received(piece)
            return rest
        payload = self._body_payload
        count = self.parsed_count
        super().data_received(data)
        if payload is None or not payload.is_eof():
            return b""
        # The body ended in this read, and the parser has taken what followed: requests
        # pipelined behind it, and the start of the next head after the read's last blank line.
        self._body_done(payload)
        if self.parsed_count != count and not self._adopt_newest_message(
            now, fed_whole=True, body_started=True
        ):
            return b""
        if not self._in_body():
            end = data.rfind(HEAD_END)
            self._head_grows_fed(data[end + len(HEAD_END) :] if end >= 0 else b"", now)
        return b""

    def _body_done(self, payload: StreamReader) -> None:
        self._body_deadlines.pop(id(payload), None)
        self._body_payload = None
        self._body_left = 0

    # --- head accounting ---------------------------------------------------------------------

    def _head_grows(self, piece: bytes) -> tuple[int, str, str | None] | None:
        """Count `piece` into the head; the refusal (status, message, Retry-After) if it does
        not fit."""
        size = self._head_bytes + len(piece)
        lines = self._head_lines + piece.count(b"\n")
        if size > MAX_HEAD_BYTES:
            return 431, HEAD_TOO_LARGE, None
        if lines > MAX_HEAD_LINES + 1:  # line ends: each line's and the blank line's that ends the head
            return 431, HEAD_TOO_LONG, None
        if not self._head_open:
            if not self._ledger.open(self._peer):
                return 429, TOO_MANY_HEADS_FROM_ADDRESS, UNAVAILABLE_RETRY_AFTER
            self._head_open = True
        if not self._ledger.grow(len(piece)):
            return 503, TOO_MANY_HEADS, UNAVAILABLE_RETRY_AFTER
        self._head_bytes, self._head_lines = size, lines
        return None

    def _head_grows_fed(self, piece: bytes, now: float) -> None:
        """Count what the parser already holds of the next head (after a chunked body)."""
        if not piece:
            return
        refusal = self._head_grows(piece)
        if refusal is not None:
            self._refuse_head(*refusal)
            return
        self._head_tail = piece[-(len(HEAD_END) - 1) :]
        if self._head_handle is None:
            self._head_handle = self.loop.call_at(now + self._timeouts.header_seconds, self._check_head)

    def _head_done(self) -> None:
        if self._head_open:
            self._ledger.close(self._peer, self._head_bytes)
        self._head_open = False
        self._head_bytes = self._head_lines = 0
        self._head_tail = b""
        self._cancel_head_check()

    def _refuse_head(self, status: int, message: str, retry_after: str | None) -> None:
        """Answer and close, unless an answer to an earlier request may be under way: then
        only close. The answer is followed by the end of our side; what the client still
        sends is read and dropped for REFUSAL_LINGER_SECONDS before the connection closes, so
        that the client reads the answer instead of a reset."""
        cut(message, self._peer, status)
        self._head_done()
        transport = self.transport
        if transport is None or self.handling is not None or self.queued:
            self.force_close()
            return
        self.stop_taking_requests()  # aiohttp parses no more, and its request loop ends
        transport.write(raw_error(status, message, retry_after=retry_after))
        if transport.can_write_eof():
            transport.write_eof()
        self._linger_handle = self.loop.call_later(REFUSAL_LINGER_SECONDS, transport.close)

    def _cancel_head_check(self) -> None:
        if self._head_handle is not None:
            self._head_handle.cancel()
            self._head_handle = None

    def _check_head(self) -> None:
        self._head_handle = None
        if self.closing or not self._head_open:
            return
        self._refuse_head(408, HEAD_TIMED_OUT, None)

    # --- body clocks -------------------------------------------------------------------------

    def _check_body(self) -> None:
        self._body_handle = None
        if self.transport is None or self.closing:
            return
        request = self.handling
        if request is None:
            if self.queued:  # a pipelined request not yet started: look again later
                self._body_handle = self.loop.call_later(self._timeouts.body_seconds, self._check_body)
            return
        body = request.content
        if body.is_eof() or body.exception() is not None:
            return
        now = self.loop.time()
        complete_by = self._body_deadlines.get(id(body))
        if not self.transport.is_reading():  # paused by the gateway: the client is not late
            self._last_data = now
            complete_by = None
        silent_until = self._last_data + self._timeouts.body_seconds
        if now >= silent_until:
            self._body_timed_out(body, f"no body bytes for {self._timeouts.body_seconds:g} s")
            return
        if complete_by is not None and now >= complete_by:
            self._body_timed_out(body, "the body was not complete in time")
            return
        next_check = silent_until if complete_by is None else min(silent_until, complete_by)
        self._body_handle = self.loop.call_at(next_check, self._check_body)

    def _body_timed_out(self, body: StreamReader, reason: str) -> None:
        cut(f"request body timed out: {reason}", self._peer)
        body.set_exception(BodyTimedOut(reason))

    # --- aiohttp's answer to what it cannot parse ----------------------------------------------

    def unparsable_answer(self, status: int, exc: BaseException | None) -> web.StreamResponse:
        """The answer to a request aiohttp could not parse (and to a handler that failed
        outside the middlewares): the product's error body, by the error's type."""
        status, text = parse_failure(exc, status)
        if isinstance(exc, HttpProcessingError):
            cut(f"{text} ({type(exc).__name__})", self._peer, status)  # what the client was told
        return failure_response(status, text)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._head_done()
        if self._body_handle is not None:
            self._body_handle.cancel()
            self._body_handle = None
        self._body_deadlines.clear()
        if self._linger_handle is not None:
            self._linger_handle.cancel()
            self._linger_handle = None
        super().connection_lost(exc)


class GuardedAppRunner(AdaptedAppRunner):
    """An AppRunner whose connections keep the guards, sharing one HeadLedger. aiohttp's own
    keep-alive clock is the idle timeout; an unread body is drained for at most the body
    timeout before its connection is closed (aiohttp's lingering time); aiohttp's parser limits
    come from head_limits."""

    __slots__ = ("_ledger", "_timeouts")

    def __init__(self, app: web.Application, *, timeouts: ConnectionTimeouts, **kwargs: Any) -> None:
        super().__init__(
            app,
            keepalive_timeout=timeouts.keepalive_seconds,
            lingering_time=timeouts.body_seconds,
            max_line_size=AIOHTTP_PARSER_LIMITS.max_line_size,
            max_field_size=AIOHTTP_PARSER_LIMITS.max_field_size,
            max_headers=AIOHTTP_PARSER_LIMITS.max_headers,
            **kwargs,
        )
        self._timeouts = timeouts
        self._ledger = HeadLedger(app[SETTINGS].trusted_proxies)

    def make_handler(self, server: web.Server, **kwargs: Any) -> GuardedRequestHandler:
        return GuardedRequestHandler(server, timeouts=self._timeouts, ledger=self._ledger, **kwargs)
