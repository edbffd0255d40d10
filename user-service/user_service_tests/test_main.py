"""`python -m petstore_user` refuses a bad secret, serves real logins, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import sys

import jwt

from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.caller_gate import GATEWAY
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_devstack.service_process import service_process
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
        "user-service: PETSTORE_SESSION_SECRET must be set to at least 32 characters"
    )


async def test_refuses_to_start_without_trusted_caller_keys() -> None:
    # Requiring caller tokens while trusting no key would refuse every call: not a way to run.
    env = {**os.environ, "PETSTORE_SESSION_SECRET": SECRET, "TRUSTED_CALLER_KEYS": "", "CALLER_TOKENS": ""}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "petstore_user", env=env, stderr=asyncio.subprocess.PIPE
    )
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=20)

    assert process.returncode == 2
    assert stderr.decode().strip().startswith("user-service: TRUSTED_CALLER_KEYS must list the public keys")


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    env = {
        "MONGODB_URI": "",
        "GRACE_SECONDS": "1",
        "PETSTORE_SESSION_SECRET": SECRET,
        "SESSION_TTL_SECONDS": "120",
        **trusting_env(GATEWAY),
    }
    async with service_process("petstore_user", SERVICE_NAME, env) as service:
        async with signed_channel(service.address) as channel:
            # The real argon2 parameters and the configured secret and TTL, end to end.
            stub = user_service_pb2_grpc.UserServiceStub(channel)
            user = user_pb2.User(username="ann", email="ann@example.com")
            await stub.CreateUser(user_service_pb2.CreateUserRequest(user=user, password=PASSWORD), timeout=5)
            login = await stub.Login(
                user_service_pb2.LoginRequest(username="ann", password=PASSWORD), timeout=5
            )
        claims = jwt.decode(login.session_token, SECRET, algorithms=["HS256"])
        assert claims["exp"] - claims["iat"] == 120
        assert await service.stop() == (0, "stopped")
        log = b"".join(service.log)
        for secret in (SECRET, PASSWORD, login.session_token):
            assert secret.encode() not in log
