"""FerretDB v1 on PostgreSQL, the MongoDB-wire server for tests, built from the Go module proxy.

`go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` is refused by the module
proxy's deprecation look-up on this kind of machine, and a plain build of the module panics
without its generated build/version/version.txt. So we download the module, copy it,
write that file and build it ourselves, once, into .cache/ (about 90 s on two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import IO

from petstore_devstack.ports import free_port, wait_for_port
from petstore_devstack.postgres import ensure_postgres, running_postgres

VERSION = "v1.24.2"
MODULE = "github.com/FerretDB/FerretDB"
REPO_ROOT = Path(__file__).resolve().parents[3]
POSTGRESQL_URL_VARIABLE = "PETSTORE_POSTGRESQL_URL"
"""Set by `with` for the command it runs: tests that start FerretDBs of their own (the fault
tests) put them on the run's PostgreSQL instead of starting another."""
CACHE_DIR = Path(os.environ.get("PETSTORE_CACHE_DIR", REPO_ROOT / ".cache"))


def binary_path() -> Path:
    return CACHE_DIR / "ferretdb" / VERSION / "ferretdb"


def ensure_ferretdb() -> Path:
    """Return the FerretDB binary, building it first when it is missing."""
    binary = binary_path()
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("FerretDB needs the Go toolchain ('go' is not on PATH)")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
    with tempfile.TemporaryDirectory() as tmp:
        # `go mod download` needs a module to run in; an empty one will do.
        subprocess.run(
            [go, "mod", "init", "ferretdb-build"], cwd=tmp, env=env, check=True, capture_output=True
        )
        info = json.loads(
            subprocess.run(
                [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                cwd=tmp,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        source = Path(tmp) / "src"
        shutil.copytree(info["Dir"], source)
        for path in source.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)  # the module cache is read-only
        (source / "build" / "version" / "version.txt").write_text(VERSION + "\n")
        binary.parent.mkdir(parents=True, exist_ok=True)
        print(f"building FerretDB {VERSION} (once; cached in {binary.parent})", file=sys.stderr)
        subprocess.run(
            [go, "build", "-trimpath", "-o", str(binary), "./cmd/ferretdb"],
            cwd=source,
            env=env,
            check=True,
        )
    return binary


def launch_ferretdb(postgresql_url: str, port: int, log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start FerretDB on loopback `port`, storing its data in the PostgreSQL database at
    `postgresql_url`; returns at once (wait_for_port tells when it accepts connections). The
    fault tests kill and relaunch it on the same port and database."""
    return _launch(["--handler=postgresql", f"--postgresql-url={postgresql_url}"], port, log_file)


def launch_ferretdb_on_sqlite(data_dir: Path, port: int, log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    """FerretDB on SQLite files in `data_dir`, for two runs. The full-disk fault test: SQLite on
    a full disk refuses writes and still serves reads, while PostgreSQL stops (a WAL write that
    fails is a PANIC), which would test PostgreSQL rather than our services. And `make
    e2e-skew` (`with --sqlite`): the Makefile says why."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return _launch(["--handler=sqlite", f"--sqlite-url=file:{data_dir}/"], port, log_file)


def _launch(backend: list[str], port: int, log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            str(ensure_ferretdb()),
            *backend,
            f"--listen-addr=127.0.0.1:{port}",
            "--debug-addr=-",
            "--telemetry=disable",
            "--log-level=warn",
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )


@contextmanager
def postgresql_for_ferretdb() -> Iterator[str]:
    """The run's PostgreSQL (POSTGRESQL_URL, set by `with`), or a cluster of its own."""
    given = os.environ.get(POSTGRESQL_URL_VARIABLE)
    if given:
        yield given
        return
    with running_postgres() as url:
        yield url


@contextmanager
def running_ferretdb(
    postgresql_url: str | None = None, port: int | None = None, *, sqlite: bool = False
) -> Iterator[str]:
    """Start FerretDB on a loopback port, on `postgresql_url` or a PostgreSQL of its own (or, with
    `sqlite`, on SQLite files of its own); yields its MongoDB URI; stops it all on exit."""
    port = port or free_port()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ferretdb-")))
        if sqlite:
            launch = partial(launch_ferretdb_on_sqlite, tmp / "data")
        else:
            launch = partial(
                launch_ferretdb, postgresql_url or stack.enter_context(postgresql_for_ferretdb())
            )
        log_path = tmp / "ferretdb.log"
        with log_path.open("wb") as log_file:
            process = launch(port, log_file)
        try:
            try:
                wait_for_port(port, timeout=30)
            except TimeoutError:
                sys.stderr.write(log_path.read_text(errors="replace"))
                raise
            yield f"mongodb://127.0.0.1:{port}/"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "install",
        help="build the binary into .cache/ if it is missing (printing its path), and install"
        " Debian's PostgreSQL if it is missing",
    )
    run = sub.add_parser(
        "with", help="run a command with MONGODB_URI set, starting FerretDB unless it is set already"
    )
    run.add_argument(
        "--sqlite",
        action="store_true",
        help="FerretDB on SQLite instead of PostgreSQL (make e2e-skew: the Makefile says why)",
    )
    run.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.command == "install":
        # stdout is the binary's path alone: deploy/compose/images.sh copies it into an image.
        print(ensure_ferretdb())
        print(f"PostgreSQL server: {ensure_postgres()}", file=sys.stderr)
        return 0
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        parser.error("with: give the command to run")
    if os.environ.get("MONGODB_URI"):
        return subprocess.call(argv)
    if args.sqlite:
        with running_ferretdb(sqlite=True) as uri:
            print(f"FerretDB {VERSION} on SQLite serving at {uri}", file=sys.stderr)
            return subprocess.call(argv, env={**os.environ, "MONGODB_URI": uri})
    with running_postgres() as postgresql_url, running_ferretdb(postgresql_url) as uri:
        print(f"FerretDB {VERSION} on PostgreSQL serving at {uri}", file=sys.stderr)
        env = {**os.environ, "MONGODB_URI": uri, POSTGRESQL_URL_VARIABLE: postgresql_url}
        return subprocess.call(argv, env=env)


if __name__ == "__main__":
    sys.exit(main())
