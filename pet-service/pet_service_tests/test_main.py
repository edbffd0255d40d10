"""`python -m petstore_pet` serves until SIGTERM, then stops cleanly."""

from __future__ import annotations

from petstore_common.caller_testing import trusting_env
from petstore_devstack.service_process import service_process
from petstore_pet.service import SERVICE_NAME


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    async with service_process(
        "petstore_pet", SERVICE_NAME, {"MONGODB_URI": "", "GRACE_SECONDS": "1", **trusting_env()}
    ) as service:
        assert await service.stop() == (0, "stopped")
