"""SIGKILL the database server under steady load and start it again on the same data: the
services answer 503 quickly while it is gone, recover by themselves, and every write that
was answered 200 is still there afterwards."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from aiohttp import ClientSession

from petstore_devstack.ferretdb import launch_ferretdb
from petstore_devstack.ports import free_port, wait_for_port
from petstore_devstack.stack import Stack
from tests.faults.conftest import FAULT_ENV, STATIC_KEY, running_stack
from tests.faults.load import Request, SteadyLoad, send, wait_for

# The database is this test's own FerretDB (built by `make test` before pytest runs), which
# it kills: a server given by MONGODB_URI is not ours to kill.
pytestmark = pytest.mark.mongo

SERVER_SELECTION_SECONDS = int(FAULT_ENV["MONGODB_TIMEOUT_MS"]) / 1000
"""How long a service waits for the database before answering UNAVAILABLE."""
RECOVERY_SECONDS = 15.0
"""Services notice the database is back at their next server selection (well under this)."""


@dataclass
class Database:
    """This test's own FerretDB, on a fixed port and data folder so it can come back as it was."""

    data_dir: Path
    port: int
    log: IO[bytes]
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = launch_ferretdb(self.data_dir, self.port, self.log)
        wait_for_port(self.port, timeout=30)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    with (tmp_path / "ferretdb.log").open("wb") as log:
        database = Database(tmp_path / "data", free_port(), log)
        database.start()
        try:
            yield database
        finally:
            database.kill()


@pytest.fixture
def stack(database: Database, log_dir: Path) -> Iterator[Stack]:
    with running_stack(log_dir, mongodb_uri=database.uri) as stack:
        yield stack


async def test_database_killed_and_restarted(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    first = await send(
        session, Request("create", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, STATIC_KEY)
    )
    assert first.status == 200, first
    get_pet = Request("get pet", "GET", f"{base}/pet/{first.body['id']}")
    writes = [
        Request(f"write {n}", "POST", f"{base}/pet", {"name": f"pet {n}", "photoUrls": []}, STATIC_KEY)
        for n in range(1000)
    ]
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")

    async with SteadyLoad(session, [get_pet, *writes], workers=4) as load:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(database.kill)
        killed = time.monotonic()
        await wait_for(session, readyz, 503, within=6)
        await asyncio.sleep(3.0)
        down_until = time.monotonic()
        await asyncio.to_thread(database.start)
        await wait_for(session, get_pet, 200, within=RECOVERY_SECONDS)
        await asyncio.sleep(1.0)
    await wait_for(session, readyz, 200, within=RECOVERY_SECONDS)

    outcomes = load.outcomes
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status not in (200, 503)]
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    # With the database gone, answers are quick 503s, not hangs. (A request sent less than a
    # server-selection timeout before the restart may rightly succeed: the window ends earlier.)
    down = load.between(killed + 1.0, down_until - SERVER_SELECTION_SECONDS - 0.1)
    assert down
    assert {o.status for o in down} == {503}, [(round(o.started - killed, 2), o.status) for o in down]
    assert max(o.elapsed for o in down) < 2.0
    # Nothing acknowledged was lost.
    acknowledged = [o.body["id"] for o in outcomes if o.request.startswith("write") and o.status == 200]
    assert len(acknowledged) > 10
    for pet_id in acknowledged:
        reply = await send(session, Request("read back", "GET", f"{base}/pet/{pet_id}"))
        assert reply.status == 200, (pet_id, reply)
