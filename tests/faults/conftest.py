"""Fault tests: each module starts a stack of its own, because these tests kill parts of it.
containers/ holds the same faults against the compose stack's containers: only
`make e2e-compose` (PETSTORE_E2E_MODE=compose) collects it."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

import pytest
from aiohttp import ClientSession, ClientTimeout

from petstore_devstack.ferretdb import launch_ferretdb, postgresql_for_ferretdb
from petstore_devstack.ports import free_port, wait_for_port
from petstore_devstack.stack import Stack
from tests.e2e import tls

collect_ignore = [] if os.environ.get("PETSTORE_E2E_MODE") == "compose" else ["containers"]

Launcher = Callable[[int, IO[bytes]], "subprocess.Popen[bytes]"]
"""Starts a FerretDB on a port, logging to a file (launch_ferretdb with its storage bound)."""

STATIC_KEY = "fault-static-key-0123456789"
GRPC_TIMEOUT_SECONDS = 2.0
"""The gateway's deadline on every gRPC call in these stacks: no answer may take longer."""

FAULT_ENV = {
    "GRPC_TIMEOUT_SECONDS": str(GRPC_TIMEOUT_SECONDS),
    "MONGODB_TIMEOUT_MS": "500",
    "GRACE_SECONDS": "5",
    "RATE_LIMIT_PER_SECOND": "0",
}


def database_prefix() -> str:
    return f"faults_{uuid.uuid4().hex[:8]}"


@contextmanager
def running_stack(log_dir: Path, *, mongodb_uri: str = "", **env: str) -> Iterator[Stack]:
    """A stack of its own for one test, on the embedded store unless `mongodb_uri`, with the
    fault settings and `env` on top; stopped afterwards, whatever the test did to it."""
    stack = Stack(
        mongodb_uri=mongodb_uri,
        api_keys=STATIC_KEY,
        database_prefix=database_prefix(),
        extra_env={**FAULT_ENV, **env},
        log_dir=log_dir,
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.fixture
async def session() -> AsyncIterator[ClientSession]:
    # A new connection per request: a keep-alive connection closing between requests would
    # be a client-side race, not a fault of the server under test.
    connector = tls.connector(force_close=True)  # the run's TLS proxy, if any
    async with ClientSession(connector=connector, timeout=ClientTimeout(total=10)) as session:
        yield session


@dataclass
class Database:
    """This test's own FerretDB, on a fixed port and the run's PostgreSQL, so it can come back
    as it was (each test's stack has databases of its own: `database_prefix`)."""

    launch: Launcher
    """How it starts, on its storage: launch_ferretdb on a PostgreSQL, or (the full-disk test)
    launch_ferretdb_on_sqlite on a folder."""
    port: int
    log: IO[bytes]
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = self.launch(self.port, self.log)
        wait_for_port(self.port, timeout=30)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing is answered, as a hung server."""
        assert self.process is not None
        assert self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"


@contextmanager
def running_database(launch: Launcher, log_path: Path) -> Iterator[Database]:
    """A FerretDB of the test's own, started by `launch`, killed at the end."""
    with log_path.open("wb") as log:
        database = Database(launch, free_port(), log)
        database.start()
        try:
            yield database
        finally:
            database.kill()


@pytest.fixture(scope="session")
def postgresql_url() -> Iterator[str]:
    """The run's PostgreSQL under the fault tests' FerretDBs (one of its own when run alone)."""
    with postgresql_for_ferretdb() as url:
        yield url


@pytest.fixture
def database(postgresql_url: str, tmp_path: Path) -> Iterator[Database]:
    with running_database(partial(launch_ferretdb, postgresql_url), tmp_path / "ferretdb.log") as database:
        yield database
