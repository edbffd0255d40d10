"""`python -m petstore_order` serves until SIGTERM, then stops cleanly; it asks the pet
service named by PET_SERVICE_ADDR."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common.grpc_client import create_channel, is_serving
from petstore_order.service import SERVICE_NAME

from .pet_backend import pet_backend


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    async with pet_backend() as pets:
        pet_id = await pets.add_pet()
        env = {
            **os.environ,
            "GRPC_LISTEN_ADDR": "127.0.0.1:0",
            "MONGODB_URI": "",
            "GRACE_SECONDS": "1",
            "PET_SERVICE_ADDR": pets.address,
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "petstore_order", env=env, stderr=asyncio.subprocess.PIPE
        )
        assert process.stderr is not None
        try:
            port = None
            while port is None:
                line = await asyncio.wait_for(process.stderr.readline(), timeout=20)
                assert line, "the service exited before serving"
                entry = json.loads(line)
                if entry["msg"] == "serving":
                    port = entry["port"]
            async with create_channel(f"127.0.0.1:{port}") as channel:
                for _ in range(100):
                    if await is_serving(channel, SERVICE_NAME):
                        break
                    await asyncio.sleep(0.05)
                assert await is_serving(channel, SERVICE_NAME)
                stub = order_service_pb2_grpc.OrderServiceStub(channel)
                reply = await stub.CreateOrder(
                    order_service_pb2.CreateOrderRequest(order=order_pb2.Order(pet_id=pet_id, quantity=1)),
                    timeout=5,
                )
                assert (reply.order.id, reply.order.pet_id) == (1, pet_id)

            process.send_signal(signal.SIGTERM)
            rest = await asyncio.wait_for(process.stderr.read(), timeout=20)
            assert await process.wait() == 0
            assert [json.loads(line)["msg"] for line in rest.splitlines()][-1] == "stopped"
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
