"""One gRPC service as a real process, for the tests of each service's `__main__`: start it,
wait until it logs "serving" and reports SERVING, and stop it with SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from petstore_common.grpc_client import create_channel, is_serving

STARTUP_TIMEOUT_SECONDS = 20.0


@dataclass
class ServiceProcess:
    process: asyncio.subprocess.Process
    port: int = 0
    log: list[bytes] = field(default_factory=list)
    """Every line the process wrote to stderr so far (JSON log lines)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self) -> tuple[int, str]:
        """SIGTERM; its exit code and the message of its last log line."""
        assert self.process.stderr is not None
        self.process.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(self.process.stderr.read(), timeout=STARTUP_TIMEOUT_SECONDS)
        self.log.extend(rest.splitlines(keepends=True))
        code = await self.process.wait()
        return code, str(json.loads(self.log[-1])["msg"])


@asynccontextmanager
async def service_process(
    module: str, service_name: str, env: Mapping[str, str]
) -> AsyncIterator[ServiceProcess]:
    """`python -m module` on a free loopback port with `env` added; yields once it serves
    `service_name`. Killed on exit if the test did not stop it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        env={**os.environ, "GRPC_LISTEN_ADDR": "127.0.0.1:0", **env},
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    running = ServiceProcess(process)
    try:
        while not running.port:
            line = await asyncio.wait_for(process.stderr.readline(), timeout=STARTUP_TIMEOUT_SECONDS)
            assert line, f"{module} exited before serving"
            running.log.append(line)
            entry = json.loads(line)
            if entry["msg"] == "serving":
                running.port = int(entry["port"])
        async with create_channel(running.address) as channel:
            for _ in range(100):
                if await is_serving(channel, service_name):
                    break
                await asyncio.sleep(0.05)
            assert await is_serving(channel, service_name), f"{module} never reported SERVING"
        yield running
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
