"""The database's disk fills up: it still answers, reads still work, and every write is refused.
The services stay ready for reads, answer writes 503 quickly, say why once in their log, and
`/readyz` names the service whose writes fail; once space is freed the next write goes through
and the outage is over. The disk is a small tmpfs of this test's own under its FerretDB, which
runs on SQLite here (launch_ferretdb_on_sqlite says why)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from aiohttp import ClientSession

from petstore_devstack.ferretdb import launch_ferretdb_on_sqlite
from petstore_devstack.stack import Stack
from tests.faults.conftest import STATIC_KEY, Database, running_database, running_stack
from tests.faults.load import Request, create_pet, send, wait_for

pytestmark = pytest.mark.mongo

DISK_BYTES = 32 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting the small tmpfs this test fills needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "petstore-full-disk", str(disk)], check=True
    )
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def database(small_disk: Path, tmp_path: Path) -> Iterator[Database]:
    launch = partial(launch_ferretdb_on_sqlite, small_disk / "data")
    with running_database(launch, tmp_path / "ferretdb.log") as database:
        yield database


@pytest.fixture
def stack(database: Database, tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path / "logs", mongodb_uri=database.uri) as stack:
        yield stack


def fill(disk: Path) -> Path:
    """A file that takes every byte left on `disk`."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        while True:
            try:
                out.write(b"\0" * 65536)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    assert shutil.disk_usage(disk).free < 65536
    return filler


def log_lines(stack: Stack, name: str, message: str) -> list[dict[str, object]]:
    assert stack.log_dir is not None
    lines = []
    for raw in (stack.log_dir / f"{name}.log").read_text().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if record.get("msg") == message:
            lines.append(record)
    return lines


async def test_a_full_disk_refuses_writes_keeps_reads_and_says_so(
    stack: Stack, small_disk: Path, session: ClientSession
) -> None:
    base = stack.base_url
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")
    pet = await create_pet(session, base, STATIC_KEY)
    read = Request("read", "GET", f"{base}/pet/{pet.body['id']}")
    write = Request("write", "POST", f"{base}/pet", {"name": "Full", "photoUrls": []}, STATIC_KEY)

    filler = fill(small_disk)
    refused = [await send(session, write) for _ in range(5)]
    assert [o.status for o in refused] == [503] * 5, refused
    assert max(o.elapsed for o in refused) < 2.0
    assert (await send(session, read)).status == 200
    ready = await send(session, readyz)
    assert ready.status == 200
    assert ready.body["message"] == "ready; writes refused by the pet service's database, reads work"
    refusals = log_lines(stack, "pet", "database refuses writes")
    assert len(refusals) == 1, refusals  # once per outage, with its cause
    assert refusals[0]["cause"] == "disk full"

    filler.unlink()
    await wait_for(session, write, 200, within=5)
    assert (await send(session, readyz)).body["message"] == "ready"
    assert len(log_lines(stack, "pet", "database takes writes again")) == 1
