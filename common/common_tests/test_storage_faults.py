"""A write refused for lack of storage is told apart, counted each time and logged once per
outage; the first write that succeeds ends the outage."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY
from pymongo.errors import AutoReconnect, OperationFailure

from petstore_common.storage_faults import WriteHealth, storage_fault

FERRETDB_SQLITE_FULL = OperationFailure(
    "[msg_insert.go:168 handler.(*Handler).MsgInsert] [db.go:167 fsql.(*DB).InTransaction] "
    "database or disk is full (13)",
    code=1,
)
"""What FerretDB v1 on SQLite answers an insert once its disk is full (recorded on a full tmpfs)."""


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (FERRETDB_SQLITE_FULL, "disk full"),
        (OperationFailure("Out of disk space", code=14031), "disk full"),
        (
            OperationFailure('could not extend file "base/16384/2619": No space left on device', code=1),
            "disk full",
        ),
        (OperationFailure("attempt to write a readonly database (8)", code=1), "read-only storage"),
        (OperationFailure("E11000 duplicate key error", code=11000), None),
        (AutoReconnect("connection refused"), None),
        (ValueError("disk is full"), None),
    ],
)
def test_storage_faults_are_told_apart(error: BaseException, cause: str | None) -> None:
    assert storage_fault(error) == cause


def _failures() -> float:
    return REGISTRY.get_sample_value("petstore_storage_write_failures_total", {"cause": "disk full"}) or 0.0


async def test_an_outage_is_logged_once_counted_each_time_and_ended_by_a_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    changes: list[bool] = []

    async def on_change(failing: bool) -> None:
        changes.append(failing)

    health = WriteHealth(on_change)
    before = _failures()
    caplog.set_level(logging.INFO, logger="petstore_common.storage_faults")

    await health.written()  # nothing to end
    for _ in range(3):
        await health.refused(
            "disk full", FERRETDB_SQLITE_FULL, method="/petstore.order.v1.OrderService/PlaceOrder"
        )
    assert health.failing == "disk full"
    assert REGISTRY.get_sample_value("petstore_storage_writes_failing") == 1
    await health.written()
    await health.written()

    assert _failures() - before == 3
    assert REGISTRY.get_sample_value("petstore_storage_writes_failing") == 0
    assert changes == [True, False]
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["database refuses writes", "database takes writes again"]
    assert "database or disk is full" in caplog.records[0].__dict__["database_error"]
