"""The service factory: store choice, indexes, readiness, and the whole service on MongoDB."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import jwt
import pytest
from pymongo import AsyncMongoClient

from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.caller_gate import GATEWAY
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_server import start_service
from petstore_common.session_tokens import SessionKeys
from petstore_common.settings import ServiceSettings
from petstore_user.service import SERVICE_NAME, user_service
from petstore_user.sessions import SessionTokens
from petstore_user.settings import UserSettings
from petstore_user.storage.documents import Document

PASSWORD = "a secret of some length"
SECRET = "test-session-secret-" + "s" * 32
TOKENS = SessionTokens(SECRET, 60)


def settings(**env: str) -> UserSettings:
    return UserSettings(
        ServiceSettings.from_env(
            default_port=0, default_database="petstore_user", env={**trusting_env(GATEWAY), **env}
        ),
        SessionKeys(SECRET),
    )


async def test_without_a_uri_the_service_runs_in_memory() -> None:
    async with user_service(settings(), tokens=TOKENS) as definition:
        assert definition.name == SERVICE_NAME
        await definition.check_ready()


@pytest.mark.mongo
async def test_with_a_uri_the_service_indexes_its_database(mongodb_uri: str, mongo_database: str) -> None:
    async with user_service(
        settings(MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database), tokens=TOKENS
    ) as definition:
        await definition.check_ready()

    client: AsyncMongoClient[Document] = AsyncMongoClient(mongodb_uri)
    try:
        users = await client[mongo_database]["users"].index_information()
        sessions = await client[mongo_database]["sessions"].index_information()
    finally:
        await client.close()
    assert [key for index in users.values() for key, _ in index["key"]] == ["_id", "username", "username_key"]
    for unique_key in ("username", "username_key"):  # the second: unique without regard to case
        assert [
            index.get("unique", False) for index in users.values() if index["key"] == [(unique_key, 1)]
        ] == [True]
    assert sorted(key for index in sessions.values() for key, _ in index["key"]) == [
        "_id",
        "expires_at",
        "user_id",
    ]


@pytest.mark.mongo
async def test_on_mongodb_users_sign_up_log_in_and_out(mongodb_uri: str, mongo_database: str) -> None:
    service_settings = settings(
        MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database, GRPC_LISTEN_ADDR="127.0.0.1:0"
    )
    async with user_service(service_settings, tokens=TOKENS) as definition:
        running = await start_service(definition, service_settings.service)
        try:
            async with signed_channel(f"127.0.0.1:{running.port}") as channel:
                stub = user_service_pb2_grpc.UserServiceStub(channel)
                user = user_pb2.User(username="ann", email="ann@example.com")
                created = await stub.CreateUser(
                    user_service_pb2.CreateUserRequest(user=user, password=PASSWORD), timeout=5
                )
                login = await stub.Login(
                    user_service_pb2.LoginRequest(username="ann", password=PASSWORD), timeout=5
                )
                session_id = jwt.decode(login.session_token, SECRET, algorithms=["HS256"])["jti"]
                check = user_service_pb2.CheckSessionRequest(session_id=session_id)
                active_before = (await stub.CheckSession(check, timeout=5)).active
                await stub.Logout(
                    user_service_pb2.LogoutRequest(session_token=login.session_token), timeout=5
                )
                active_after = (await stub.CheckSession(check, timeout=5)).active
        finally:
            await running.stop(None)

    assert created.user.id == 1
    assert (active_before, active_after) == (True, False)


async def test_an_unreachable_database_starts_not_ready(tmp_path: Path) -> None:
    # A Unix socket that does not exist: refused at once. (A TCP connect to a closed port
    # can be cancelled mid-flight by close(), and PyMongo 4.20 then leaks its socket.)
    missing = quote(str(tmp_path / "no-such-mongod.sock"), safe="")
    unreachable = settings(MONGODB_URI=f"mongodb://{missing}/", MONGODB_TIMEOUT_MS="100")

    async with user_service(unreachable, tokens=TOKENS) as definition:
        with pytest.raises(Exception, match=r"no-such-mongod\.sock"):
            await definition.check_ready()
