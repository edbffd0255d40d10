"""`python -m petstore_pet` serves until SIGTERM, then stops cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from petstore_common.grpc_client import create_channel, is_serving
from petstore_pet.service import SERVICE_NAME


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    env = {**os.environ, "GRPC_LISTEN_ADDR": "127.0.0.1:0", "MONGODB_URI": "", "GRACE_SECONDS": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "petstore_pet", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        port = None
        while port is None:
            line = await asyncio.wait_for(process.stderr.readline(), timeout=20)
            assert line, "the service exited before serving"
            entry = json.loads(line)
            if entry["msg"] == "serving":
                port = entry["port"]
        async with create_channel(f"127.0.0.1:{port}") as channel:
            for _ in range(100):
                if await is_serving(channel, SERVICE_NAME):
                    break
                await asyncio.sleep(0.05)
            assert await is_serving(channel, SERVICE_NAME)

        process.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(process.stderr.read(), timeout=20)
        assert await process.wait() == 0
        assert [json.loads(line)["msg"] for line in rest.splitlines()][-1] == "stopped"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
