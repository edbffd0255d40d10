"""PostgreSQL for FerretDB's postgresql handler: Debian's server, a throwaway cluster in a
temporary folder on a loopback port, stopped by its PID.

Why PostgreSQL under FerretDB rather than SQLite: on SQLite, FerretDB v1 finds a document by an
integer `_id` by scanning its collection, so every figure taken on it grew with the data
(bench/README.md). On PostgreSQL the same look-up is an index scan.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from petstore_devstack.ports import free_port

SERVER_DIRS = "/usr/lib/postgresql"
"""Where Debian's postgresql-NN packages put their binaries (bin/initdb, bin/postgres)."""

DEBIAN_PACKAGE = "postgresql"
SERVICE_USER = "postgres"
"""PostgreSQL refuses to run as root; as root we run it as the user Debian's package creates."""

READY_TIMEOUT_SECONDS = 30.0

# A cluster thrown away at the end of each run: durability costs nothing we measure, so it is
# turned off; enough connections for FerretDB's pools of every test process at once.
SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "listen_addresses": "127.0.0.1",
}


INITDB_OPTIONS = ("-E", "UTF8", "--locale=C", "--no-sync")


def server_bin_dir() -> Path | None:
    """The newest installed server's bin folder, or None."""
    candidates = sorted(Path(SERVER_DIRS).glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return candidates[-1].parent if candidates else None


def ensure_postgres() -> Path:
    """The server's bin folder, installing Debian's package first when it is missing (root)."""
    bin_dir = server_bin_dir()
    if bin_dir is not None:
        return bin_dir
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RuntimeError(
            f"the tests need a PostgreSQL server under {SERVER_DIRS}: install Debian's"
            f" `{DEBIAN_PACKAGE}` package (apt-get install {DEBIAN_PACKAGE}), or set MONGODB_URI"
        )
    print(f"installing Debian's {DEBIAN_PACKAGE} (once)", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", DEBIAN_PACKAGE],
        check=True,
        env=env,
    )
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise RuntimeError(f"{DEBIAN_PACKAGE} installed, yet no server under {SERVER_DIRS}")
    return bin_dir


def _run_as() -> str | None:
    return SERVICE_USER if os.geteuid() == 0 else None


def _wait_ready(bin_dir: Path, port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {server.returncode}:\n{log.read_text()}")
        ready = subprocess.run(
            [str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)], check=False
        )
        if ready.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"PostgreSQL not ready in {READY_TIMEOUT_SECONDS:g} s:\n{log.read_text()}")
        time.sleep(0.1)


@contextmanager
def running_postgres() -> Iterator[str]:
    """A new cluster on a free loopback port; yields its URL for FerretDB (trust auth, database
    `postgres`, loopback only); stopped (fast shutdown, then SIGKILL) and deleted on exit."""
    bin_dir = ensure_postgres()
    user = _run_as()
    with tempfile.TemporaryDirectory(prefix="petstore-postgres-") as tmp:
        root = Path(tmp)
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        data, log = root / "data", root / "postgres.log"
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", *INITDB_OPTIONS],
            check=True,
            capture_output=True,
            user=user,
        )
        port = free_port()
        settings = [arg for key, value in SERVER_SETTINGS.items() for arg in ("-c", f"{key}={value}")]
        with log.open("wb") as log_file:
            server = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root), *settings],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                user=user,
            )
        try:
            _wait_ready(bin_dir, port, server, log)
            yield f"postgres://postgres@127.0.0.1:{port}/postgres"
        finally:
            server.send_signal(signal.SIGINT)  # fast shutdown: clients disconnected
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
