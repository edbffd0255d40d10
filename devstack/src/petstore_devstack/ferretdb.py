"""FerretDB v1, a MongoDB-wire server on SQLite, built from the Go module proxy for tests.

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
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from petstore_devstack.ports import free_port, wait_for_port

VERSION = "v1.24.2"
MODULE = "github.com/FerretDB/FerretDB"
REPO_ROOT = Path(__file__).resolve().parents[3]
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


def launch_ferretdb(data_dir: Path, port: int, log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start FerretDB on loopback `port`, storing its SQLite files in `data_dir`; returns at
    once (wait_for_port tells when it accepts connections). The fault tests kill and relaunch
    it on the same port and data."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [
            str(ensure_ferretdb()),
            "--handler=sqlite",
            f"--sqlite-url=file:{data_dir}/",
            f"--listen-addr=127.0.0.1:{port}",
            "--debug-addr=-",
            "--telemetry=disable",
            "--log-level=warn",
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )


@contextmanager
def running_ferretdb(data_dir: Path | None = None, port: int | None = None) -> Iterator[str]:
    """Start FerretDB on a loopback port; yields its MongoDB URI; stops it on exit."""
    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="ferretdb-") as tmp:
        log_path = Path(tmp) / "ferretdb.log"
        with log_path.open("wb") as log_file:
            process = launch_ferretdb(data_dir or Path(tmp), port, log_file)
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
    sub.add_parser("install", help="build the binary into .cache/ if it is missing")
    run = sub.add_parser(
        "with", help="run a command with MONGODB_URI set, starting FerretDB unless it is set already"
    )
    run.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.command == "install":
        print(ensure_ferretdb())
        return 0
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        parser.error("with: give the command to run")
    if os.environ.get("MONGODB_URI"):
        return subprocess.call(argv)
    with running_ferretdb() as uri:
        print(f"FerretDB {VERSION} serving at {uri}", file=sys.stderr)
        return subprocess.call(argv, env={**os.environ, "MONGODB_URI": uri})


if __name__ == "__main__":
    sys.exit(main())
