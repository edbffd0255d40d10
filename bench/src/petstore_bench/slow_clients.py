"""`python -m petstore_bench.slow_clients`: what stalled clients cost a gateway process.

Starts `python -m petstore_gateway` on a free loopback port (services down: bodies are read
before any service is called), then, from this process on 127.0.0.1 only:

1. opens N connections that each send headers for a body of BODY bytes, SENT bytes of it, and
   then nothing (staff key, the per-client rate limit off: every body reaches the reader, the
   worst case for memory); samples the gateway's RSS until every one has been closed or
   `--wait` seconds have passed;
2. opens N connections that send half a request head, and N that send nothing; times how long
   until the gateway has closed each of them.

Prints one JSON object and stops the gateway it started. Bounded: at most 3 x N connections,
each phase at most `--wait` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any

from petstore_bench import procmem
from petstore_common.caller_keys import generate
from petstore_devstack.ports import free_port

KEY = "slow-clients-key"
BODY = 1_048_000
SENT = 1_000_000


def start_gateway(port: int, extra_env: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "GATEWAY_HOST": "127.0.0.1",
        "GATEWAY_PORT": str(port),
        "PETSTORE_API_KEYS": KEY,
        "PETSTORE_SESSION_SECRET": "s" * 32,
        "CALLER_SIGNING_KEY": generate().seed,  # nothing verifies it: no service runs
        "RATE_LIMIT_PER_SECOND": "0",
        "LOG_LEVEL": "ERROR",
        "PET_CACHE_MAX_ENTRIES": "0",
        **_down_services(),
        **extra_env,
    }
    process = subprocess.Popen([sys.executable, "-m", "petstore_gateway"], env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the gateway did not start")


def _down_services() -> dict[str, str]:
    names = ("PET_SERVICE_ADDR", "ORDER_SERVICE_ADDR", "USER_SERVICE_ADDR")
    return {name: f"127.0.0.1:{free_port()}" for name in names}


async def _closed_at(reader: asyncio.StreamReader, started: float, wait: float) -> tuple[float | None, bytes]:
    """When the gateway closed the connection (seconds after `started`), and what it said."""
    loop = asyncio.get_running_loop()
    try:
        said = await asyncio.wait_for(reader.read(), max(0.0, started + wait - loop.time()))
    except (TimeoutError, ConnectionError):
        return (None, b"") if not reader.at_eof() else (loop.time() - started, b"")
    return loop.time() - started, said


async def stalled_bodies(port: int, count: int, pid: int, wait: float) -> dict[str, Any]:
    before = procmem.read(pid)
    assert before is not None
    loop = asyncio.get_running_loop()
    started = loop.time()
    head = (
        f"POST /v2/user/createWithArray HTTP/1.1\r\nHost: t\r\napi_key: {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()
    connections = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head + b"[" + b" " * (SENT - 1))
        connections.append((reader, writer))
    await asyncio.gather(*(writer.drain() for _, writer in connections), return_exceptions=True)
    peak_rss = before.rss_kb
    closing = [asyncio.create_task(_closed_at(reader, started, wait)) for reader, _ in connections]
    while not all(task.done() for task in closing) and loop.time() < started + wait:
        reading = procmem.read(pid)
        if reading is not None:
            peak_rss = max(peak_rss, reading.rss_kb)
        await asyncio.sleep(procmem.SAMPLE_INTERVAL_S)
    results = await asyncio.gather(*closing)
    after = procmem.read(pid)
    for _, writer in connections:
        writer.close()
    statuses: dict[str, int] = {}
    for _, said in results:
        status = said.split(b" ", 2)[1].decode() if said.startswith(b"HTTP/1.1 ") else "none"
        statuses[status] = statuses.get(status, 0) + 1
    closed = [at for at, _ in results if at is not None]
    return {
        "connections": count,
        "rss_before_mib": round(before.rss_kb / 1024, 1),
        "rss_peak_mib": round(peak_rss / 1024, 1),
        "rss_peak_increase_mib": round((peak_rss - before.rss_kb) / 1024, 1),
        "rss_after_mib": round(after.rss_kb / 1024, 1) if after else None,
        "answers": statuses,
        "closed": len(closed),
        "last_closed_s": round(max(closed), 1) if closed else None,
    }


async def stalled_heads_and_idle(port: int, count: int, wait: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    connections = []
    for index in range(2 * count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if index % 2 == 0:
            writer.write(b"GET /v2/pet/1 HTTP/1.1\r\nHost: t\r\n")  # half a head
        connections.append((reader, writer))
    results = await asyncio.gather(*(_closed_at(reader, started, wait) for reader, _ in connections))
    for _, writer in connections:
        writer.close()
    heads = [at for at, _ in results[0::2]]
    idle = [at for at, _ in results[1::2]]
    return {
        "half_heads_closed": sum(at is not None for at in heads),
        "half_heads_last_closed_s": round(max((at for at in heads if at is not None), default=0), 1),
        "idle_closed": sum(at is not None for at in idle),
        "idle_last_closed_s": round(max((at for at in idle if at is not None), default=0), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=150)
    parser.add_argument("--wait", type=float, default=70.0, help="seconds each phase waits at most")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the gateway")
    args = parser.parse_args()
    count = min(args.connections, 500)
    port = free_port()
    gateway = start_gateway(port, dict(item.split("=", 1) for item in args.env))
    try:
        report = {
            "stalled_bodies": asyncio.run(stalled_bodies(port, count, gateway.pid, args.wait)),
            "stalled_heads_and_idle": asyncio.run(stalled_heads_and_idle(port, count, args.wait)),
        }
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=15)
        except subprocess.TimeoutExpired:
            gateway.kill()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
