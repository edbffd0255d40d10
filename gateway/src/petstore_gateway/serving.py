"""Serving the app until SIGINT or SIGTERM, then stopping without cutting requests off.

aiohttp's run_app stops reading from every connection as soon as shutdown starts, so a
request whose body is still arriving at that moment is lost. Here the stop comes in steps:
close the listening socket (new connections are refused, so clients and load balancers go
elsewhere); from then on every answer says `Connection: close` and closes its connection, so
each keep-alive client learns, on its next answer, to go elsewhere; after a short notice
(DRAIN_NOTICE_SECONDS, or as soon as every connection has closed) close the connections that
are still idle; wait until the requests already started have been answered (at most the grace
period); and only then let aiohttp run the clean-up.

Why a notice rather than closing idle connections at the signal: a keep-alive client may be
sending its next request on an idle connection at that very moment, and a request written to a
connection the server closes is lost (aiohttp and most clients resend only idempotent ones).
Under keep-alive load closing at once cut 1 to 3 POSTs per stop; with the notice every busy
client gets one more answer, carrying `Connection: close`, and only connections idle for the
whole notice are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable

from aiohttp import hdrs, web
from aiohttp.http import HttpProcessingError
from aiohttp.typedefs import Handler

from petstore_common.diagnostics import STOP_MARGIN_SECONDS, dump_stacks_on_signal, exit_after
from petstore_gateway.connections import ConnectionTimeouts, GuardedAppRunner

log = logging.getLogger(__name__)

DRAIN_NOTICE_SECONDS = 0.5
"""After SIGTERM, how long idle keep-alive connections stay open for a last request (answered
with `Connection: close`) before they are closed."""
DRAIN_POLL_SECONDS = 0.02


class InFlight:
    """Counts the requests being handled; `idle()` resolves when there are none."""

    def __init__(self) -> None:
        self.count = 0
        self.draining = False
        self.busy: set[web.RequestHandler] = set()
        """The connections whose request is being handled."""
        self._idle = asyncio.Event()
        self._idle.set()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.count += 1
        self._idle.clear()
        protocol = request.protocol
        self.busy.add(protocol)
        try:
            return await handler(request)
        finally:
            self.busy.discard(protocol)
            self.count -= 1
            if self.count == 0:
                self._idle.set()

    async def idle(self) -> None:
        await self._idle.wait()

    async def on_response_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """While draining, every answer closes its connection and says so. (A signal rather
        than the middleware: it sees every response of the app, streamed ones and raised ones
        too, just before its headers are written.)"""
        if self.draining:
            response.force_close()
            response.headers[hdrs.CONNECTION] = "close"


class MalformedRequestLogFilter(logging.Filter):
    """aiohttp logs a request it cannot parse at ERROR with a traceback: anyone could flood the
    log that way. The gateway's handle_error (connections.py) logs such requests itself, as one
    WARNING line, and does not pass them to aiohttp's logger; this filter stays for whatever
    aiohttp logs on another path: such a record becomes one WARNING line naming the error;
    every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError) and record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = "malformed request refused: %s", (type(error).__name__,)
            record.exc_info = record.exc_text = None
        return True


async def serve(
    app: web.Application,
    *,
    host: str,
    port: int,
    grace_seconds: float,
    timeouts: ConnectionTimeouts,
    reuse_port: bool = False,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve `app` on host:port until SIGINT or SIGTERM, then drain and stop. `reuse_port`:
    share the port with other processes (SO_REUSEPORT; the kernel spreads connections);
    `on_stop` runs as the stop begins (the first worker passes the signal on to the others);
    `timeouts` close connections that stall (connections.py)."""
    logging.getLogger("aiohttp.server").addFilter(MalformedRequestLogFilter())
    in_flight = InFlight()
    app.middlewares.insert(0, in_flight.middleware)  # outermost: counts every request
    app.on_response_prepare.append(in_flight.on_response_prepare)
    # Signals are caught before the port is bound: a stop asked for while starting (a worker
    # told to stop as soon as it listens) is a graceful one, never the default kill.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    dump_stacks_on_signal(loop)
    runner = GuardedAppRunner(
        app, timeouts=timeouts, handle_signals=False, access_log=None, shutdown_timeout=grace_seconds
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
        await site.start()
        log.info("serving", extra={"host": host, "port": port})
        await stop.wait()
        log.info("stopping", extra={"in_flight": in_flight.count, "grace_seconds": grace_seconds})
        stop_deadline = exit_after(grace_seconds + STOP_MARGIN_SECONDS)  # whatever the drain does
        in_flight.draining = True
        if on_stop is not None:
            on_stop()
        await site.stop()
        if runner.server is not None:
            await _close_idle_connections(runner.server, in_flight, min(DRAIN_NOTICE_SECONDS, grace_seconds))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(in_flight.idle(), timeout=grace_seconds)
    finally:
        await runner.cleanup()
    stop_deadline.done()


async def _close_idle_connections(server: web.Server, in_flight: InFlight, notice_seconds: float) -> None:
    """Give keep-alive clients `notice_seconds` to send a last request (answered with
    `Connection: close`), then close the connections that are idle. Not the busy ones: aiohttp
    drops whatever arrives on a closed connection, the rest of a body too; each closes after
    its answer."""
    deadline = asyncio.get_running_loop().time() + notice_seconds
    # Polled: aiohttp tells nobody when a connection closes.
    while server.connections and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(DRAIN_POLL_SECONDS)
    for connection in server.connections:
        if connection not in in_flight.busy:
            # force_close: aiohttp's close() on an idle connection only stops its request loop;
            # the socket would stay open, deaf, until the clean-up.
            connection.force_close()
