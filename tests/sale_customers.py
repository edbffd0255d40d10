"""Customers of a running stack, over HTTP through its gateway, for the tests of "a pet is sold
once": staff stock pets, customers sign up and log in, then order them, each order under an
Idempotency-Key of its own so that a retry is the same order."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientError, ClientSession

PASSWORD = "a-long-enough-password"
RACE_ENV = {
    "RATE_LIMIT_PER_SECOND": "0",
    "LOGIN_RATE_LIMIT_PER_MINUTE": "100000",
    "SIGNUP_RATE_LIMIT_PER_HOUR": "100000",
}
"""Every customer comes from one address: the limits for one client must not get in the way."""


@dataclass(frozen=True)
class Answer:
    status: int | None
    """None when no HTTP answer came (the connection refused or cut, a client timeout)."""
    body: Any = None


@dataclass
class Shop:
    session: ClientSession
    base_url: str
    staff_key: str

    async def call(self, method: str, path: str, *, key: str | None = None, **kwargs: Any) -> Answer:
        headers = {"Accept": "application/json", **kwargs.pop("headers", {})}
        if key is not None:
            headers["api_key"] = key
        try:
            async with self.session.request(
                method, f"{self.base_url}/v2{path}", headers=headers, **kwargs
            ) as reply:
                body = await reply.json(content_type=None) if reply.content_length != 0 else None
                return Answer(reply.status, body)
        except (ClientError, TimeoutError) as exc:
            return Answer(None, type(exc).__name__)

    async def stock(self, count: int) -> list[int]:
        """`count` available pets, created by staff; their ids."""
        ids = []
        for number in range(count):
            pet = {"name": f"Rex {number}", "photoUrls": [], "status": "available"}
            answer = await self.call("POST", "/pet", key=self.staff_key, json=pet)
            assert answer.status == 200, answer
            ids.append(int(answer.body["id"]))
        return ids

    async def customer(self) -> str:
        """A new customer, signed up and logged in: its session."""
        username = f"c{uuid.uuid4().hex[:12]}"
        user = {"username": username, "email": f"{username}@example.test", "password": PASSWORD}
        signed_up = await self.call("POST", "/user", json=user)
        assert signed_up.status == 200, signed_up
        login = await self.call("GET", "/user/login", params={"username": username, "password": PASSWORD})
        assert login.status == 200, login
        return str(login.body["message"]).removeprefix("logged in user session:")

    async def order(self, session: str, pet_id: int, idempotency_key: str) -> Answer:
        return await self.call(
            "POST",
            "/store/order",
            key=session,
            headers={"Idempotency-Key": idempotency_key},
            json={"petId": pet_id, "quantity": 1},
        )

    async def pet_status(self, pet_id: int) -> str:
        answer = await self.call("GET", f"/pet/{pet_id}")
        assert answer.status == 200, answer
        return str(answer.body.get("status", ""))
