"""FerretDB as the tests get it: built once, started on a free port on a PostgreSQL cluster of
its own, answering MongoDB wire."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pymongo import MongoClient

from petstore_devstack.ferretdb import binary_path, running_ferretdb
from petstore_devstack.postgres import running_postgres, server_bin_dir

pytestmark = pytest.mark.mongo


def test_running_ferretdb_serves_the_mongodb_wire_protocol(mongodb_uri: str) -> None:
    # mongodb_uri guarantees `make test` built the binary; this starts a second instance.
    assert binary_path().exists() or os.environ.get("MONGODB_URI")
    if not binary_path().exists():
        pytest.skip("MONGODB_URI points at an external server; FerretDB was not built")
    with running_ferretdb() as uri:
        client: MongoClient[dict[str, object]] = MongoClient(uri, serverSelectionTimeoutMS=3000)
        try:
            client.probe.things.insert_one({"_id": 1, "n": "one"})
            assert client.probe.things.find_one({"_id": 1}) == {"_id": 1, "n": "one"}
        finally:
            client.close()


def test_running_postgres_serves_on_loopback_and_is_gone_after() -> None:
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server installed (`make test` installs Debian's as root)")

    def ready(url: str) -> bool:
        host_port = url.split("@", 1)[1].split("/", 1)[0]
        host, port = host_port.split(":")
        command = [str(bin_dir / "pg_isready"), "-q", "-h", host, "-p", port]
        return subprocess.run(command, check=False).returncode == 0

    with running_postgres() as url:
        assert url.startswith("postgres://postgres@127.0.0.1:")
        assert ready(url)
    assert not ready(url)


def test_install_prints_the_binarys_path_alone() -> None:
    # deploy/compose/images.sh copies what it prints into an image: one path, nothing else.
    shown = subprocess.run(
        [sys.executable, "-m", "petstore_devstack.ferretdb", "install"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown == f"{binary_path()}\n"
