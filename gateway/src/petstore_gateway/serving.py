"""Serving the app until SIGINT or SIGTERM, then stopping without cutting requests off.

aiohttp's run_app stops reading from every connection as soon as shutdown starts, so a
request whose body is still arriving at that moment is lost. Here the stop comes in two steps:
close the listening socket (new connections are refused, so clients and load balancers go
elsewhere), wait until the requests already started have been answered (at most the grace
period), and only then let aiohttp close the connections and run the clean-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler

log = logging.getLogger(__name__)


class InFlight:
    """Counts the requests being handled; `idle()` resolves when there are none."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.count += 1
        self._idle.clear()
        try:
            return await handler(request)
        finally:
            self.count -= 1
            if self.count == 0:
                self._idle.set()

    async def idle(self) -> None:
        await self._idle.wait()


class MalformedRequestLogFilter(logging.Filter):
    """aiohttp answers a request it cannot parse (a header line over 8190 bytes, a bare CR, an
    unknown method...) with a plain 400 before any middleware runs, and logs it at ERROR with a
    traceback: anyone could flood the log that way. Such a record becomes one WARNING line
    naming the error; every other record passes unchanged."""

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
    reuse_port: bool = False,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve `app` on host:port until SIGINT or SIGTERM, then drain and stop. `reuse_port`:
    share the port with other processes (SO_REUSEPORT; the kernel spreads connections);
    `on_stop` runs as the stop begins (the first worker passes the signal on to the others)."""
    logging.getLogger("aiohttp.server").addFilter(MalformedRequestLogFilter())
    in_flight = InFlight()
    app.middlewares.insert(0, in_flight.middleware)  # outermost: counts every request
    # Signals are caught before the port is bound: a stop asked for while starting (a worker
    # told to stop as soon as it listens) is a graceful one, never the default kill.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=grace_seconds)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
        await site.start()
        log.info("serving", extra={"host": host, "port": port})
        await stop.wait()
        log.info("stopping", extra={"in_flight": in_flight.count, "grace_seconds": grace_seconds})
        if on_stop is not None:
            on_stop()
        await site.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(in_flight.idle(), timeout=grace_seconds)
    finally:
        await runner.cleanup()
