"""`python -m petstore_user` refuses a bad secret, serves real logins, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import jwt

from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.grpc_client import create_channel, is_serving
from petstore_user.service import SERVICE_NAME

SECRET = "main-test-session-secret-" + "m" * 32
PASSWORD = "correct horse battery staple"


async def test_refuses_to_start_without_a_long_enough_secret() -> None:
    env = {**os.environ, "PETSTORE_SESSION_SECRET": "too-short"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "petstore_user", env=env, stderr=asyncio.subprocess.PIPE
    )
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=20)

    assert process.returncode == 2
    assert stderr.decode().strip() == (
        "petstore_user: PETSTORE_SESSION_SECRET must be set to at least 32 characters"
    )


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    env = {
        **os.environ,
        "GRPC_LISTEN_ADDR": "127.0.0.1:0",
        "MONGODB_URI": "",
        "GRACE_SECONDS": "1",
        "PETSTORE_SESSION_SECRET": SECRET,
        "SESSION_TTL_SECONDS": "120",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "petstore_user", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        port = None
        head: list[bytes] = []
        while port is None:
            line = await asyncio.wait_for(process.stderr.readline(), timeout=20)
            assert line, "the service exited before serving"
            head.append(line)
            entry = json.loads(line)
            if entry["msg"] == "serving":
                port = entry["port"]
        async with create_channel(f"127.0.0.1:{port}") as channel:
            for _ in range(100):
                if await is_serving(channel, SERVICE_NAME):
                    break
                await asyncio.sleep(0.05)
            assert await is_serving(channel, SERVICE_NAME)
            # The real argon2 parameters and the configured secret and TTL, end to end.
            stub = user_service_pb2_grpc.UserServiceStub(channel)
            user = user_pb2.User(username="ann", email="ann@example.com")
            await stub.CreateUser(user_service_pb2.CreateUserRequest(user=user, password=PASSWORD), timeout=5)
            login = await stub.Login(
                user_service_pb2.LoginRequest(username="ann", password=PASSWORD), timeout=5
            )

        claims = jwt.decode(login.session_token, SECRET, algorithms=["HS256"])
        assert claims["exp"] - claims["iat"] == 120
        process.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(process.stderr.read(), timeout=20)
        assert await process.wait() == 0
        assert [json.loads(line)["msg"] for line in rest.splitlines()][-1] == "stopped"
        log = b"".join(head) + rest
        for secret in (SECRET, PASSWORD, login.session_token):
            assert secret.encode() not in log
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
