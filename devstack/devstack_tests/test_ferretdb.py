"""FerretDB as the tests get it: built once, started on a free port, answering MongoDB wire."""

from __future__ import annotations

import os

import pytest
from pymongo import MongoClient

from petstore_devstack.ferretdb import binary_path, running_ferretdb

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
