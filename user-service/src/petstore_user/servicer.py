"""UserService RPCs: check the request, ask the store, shape the response.

Errors are raised as petstore_common.errors exceptions; the shared server interceptor turns
them into gRPC statuses with their messages. No response or error message ever carries a
password or a password hash: `User` messages cannot hold one, and messages name fields only.

Who may do what is decided here, from the `Caller` the gateway sends: staff manage every
account; a customer reads and changes only its own, and never its staff-managed user_status (an
id never changes); everybody else sees the public view of an account, its id and username.
Only staff choose a new user's id: anybody else's is ignored and the store draws one, and no
id is ever given twice (the store retires a deleted user's id), so nobody can step into a
deleted account's orders or idempotency records.

A password change ends every session of the account, the one that made it included; a wrong
password counts against the account (login_throttle).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc

from petstore.auth.v1 import caller_pb2
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.callers import BULK_CREATE_STAFF_ONLY, customer_id, is_staff, require_staff
from petstore_common.errors import InvalidArgument, NotFound, PermissionDenied, ResourceExhausted
from petstore_common.idempotency import DEFAULT_TTL_SECONDS, Idempotency, Reservation
from petstore_common.mongo import KeyedLocks
from petstore_common.versions import required_versions
from petstore_user import login_throttle, validation
from petstore_user.passwords import MAX_PASSWORD_CHARS, Passwords
from petstore_user.sessions import MAX_SESSION_ID_CHARS, SessionTokens
from petstore_user.storage.base import Account, UserStore, not_found

Context = grpc.aio.ServicerContext[Any, Any]

BAD_LOGIN = "invalid username/password supplied"
NOT_THE_USER = "only staff or the user itself may change this user"
STAFF_CREATE_MANY = BULK_CREATE_STAFF_ONLY
SESSION_CLEANUP_INTERVAL_SECONDS = 60.0
"""Expired sessions are deleted at a login at most this often (no TTL index on FerretDB)."""


class UserServicer(user_service_pb2_grpc.UserServiceServicer):
    def __init__(
        self,
        store: UserStore,
        passwords: Passwords,
        tokens: SessionTokens,
        *,
        idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
    ) -> None:
        self._store = store
        self._passwords = passwords
        self._tokens = tokens
        # No ids to reserve: a username is unique, so a retry can never create a second user.
        self._idempotency = Idempotency(store.idempotency, ttl_seconds=idempotency_ttl_seconds)
        self._fingerprint_key = tokens.digest_key()  # requests hold passwords: HMAC, not a bare hash
        self._next_cleanup = 0.0
        self._attempts = KeyedLocks()

    async def CreateUser(
        self, request: user_service_pb2.CreateUserRequest, context: Context
    ) -> user_service_pb2.CreateUserResponse:
        validation.check_new_user(request)
        user = request.user
        if not is_staff(request.caller):
            user = _with_status(user, 0)  # staff-managed: a sign-up starts at 0
            user.ClearField("id")  # staff-managed too: a chosen id could step into a used one

        async def create(reservation: Reservation) -> user_service_pb2.CreateUserResponse:
            account = Account(user, await self._passwords.hash(request.password))
            return user_service_pb2.CreateUserResponse(user=await self._store.create(account))

        return await self._idempotency.serve(
            request, user_service_pb2.CreateUserResponse, create, secret=self._fingerprint_key
        )

    async def CreateUsers(
        self, request: user_service_pb2.CreateUsersRequest, context: Context
    ) -> user_service_pb2.CreateUsersResponse:
        require_staff(request.caller, STAFF_CREATE_MANY)
        validation.check_new_users(request.users)  # before any (costly) hashing

        async def create(reservation: Reservation) -> user_service_pb2.CreateUsersResponse:
            hashes = await asyncio.gather(*(self._passwords.hash(item.password) for item in request.users))
            accounts = [
                Account(item.user, password_hash)
                for item, password_hash in zip(request.users, hashes, strict=True)
            ]
            return user_service_pb2.CreateUsersResponse(users=await self._store.create_many(accounts))

        return await self._idempotency.serve(
            request, user_service_pb2.CreateUsersResponse, create, secret=self._fingerprint_key
        )

    async def GetUser(
        self, request: user_service_pb2.GetUserRequest, context: Context
    ) -> user_service_pb2.GetUserResponse:
        user = await self._store.get(request.username)
        if is_staff(request.caller) or customer_id(request.caller) == user.id:
            return user_service_pb2.GetUserResponse(user=user, view=user_service_pb2.USER_VIEW_FULL)
        public = user_pb2.User(id=user.id, username=user.username)
        return user_service_pb2.GetUserResponse(user=public, view=user_service_pb2.USER_VIEW_PUBLIC)

    async def UpdateUser(
        self, request: user_service_pb2.UpdateUserRequest, context: Context
    ) -> user_service_pb2.UpdateUserResponse:
        validation.check_update(request)
        username = request.username
        current = await self._changeable(request.caller, username)
        user = request.user
        if not is_staff(request.caller):
            user = _with_status(user, current.user_status)
        password_hash = await self._passwords.hash(request.password) if request.HasField("password") else None
        accepted = required_versions(request.precondition, request.HasField("precondition"))
        updated = await self._store.update(
            current.id, username, user, password_hash, accepted_versions=accepted
        )
        if password_hash is not None:
            # Whoever knew the old password, or held a session, is out; the caller logs in anew.
            await self._store.end_sessions_of(current.id)
        return user_service_pb2.UpdateUserResponse(user=updated)

    async def DeleteUser(
        self, request: user_service_pb2.DeleteUserRequest, context: Context
    ) -> user_service_pb2.DeleteUserResponse:
        username = request.username
        current = await self._changeable(request.caller, username)
        await self._store.delete(current.id, username)
        return user_service_pb2.DeleteUserResponse()

    async def Login(
        self, request: user_service_pb2.LoginRequest, context: Context
    ) -> user_service_pb2.LoginResponse:
        # The field rules refused a login without a password: no guess at all, it counts
        # against nobody.
        username, password = request.username, request.password
        # Attempts at one account take turns in this process: each reads the count the one
        # before it left, so a burst of parallel guesses cannot all pass one check of it.
        async with self._attempts.hold(username):
            account = await self._check_password(username, password)
        user_id = account.user.id
        password_hash = account.password_hash
        if self._passwords.needs_rehash(password_hash):
            new_hash = await self._passwords.hash(password)
            await self._store.replace_password_hash(user_id, password_hash, new_hash)
            password_hash = new_hash
        await self._delete_expired_sessions()
        issued = self._tokens.issue(user_id, account.user.username)
        try:
            await self._store.add_session(issued.session, password_hash)
        except NotFound:
            raise NotFound(not_found(username)) from None  # deleted while the password was checked
        response = user_service_pb2.LoginResponse(session_token=issued.token)
        response.expire_time.FromDatetime(issued.session.expires_at)
        return response

    async def _check_password(self, username: str, password: str) -> Account:
        """The account when `password` is its password; counts a wrong one against it.

        An unknown username is NOT_FOUND without hashing anything: the contract tells the
        client so anyway (and GetUser is public), so equal timing would hide nothing."""
        account = await self._store.get_account(username)
        now = self._tokens.now().timestamp()
        wait = login_throttle.seconds_to_wait(account.failures, now)
        if wait:  # refused unheard, right password or not: a guess now would tell nothing
            raise ResourceExhausted(login_throttle.too_many_failures(wait), retry_after_seconds=wait)
        # A password no stored one can be (too long) is wrong without costing a hash.
        in_bounds = len(password) <= MAX_PASSWORD_CHARS
        if not (in_bounds and await self._passwords.verify(account.password_hash, password)):
            await self._store.record_login_failure(
                account.user.id, now, forget_before=now - login_throttle.FORGET_AFTER_SECONDS
            )
            raise InvalidArgument(BAD_LOGIN)
        if account.failures.count:
            await self._store.clear_login_failures(account.user.id)
        return account

    async def Logout(
        self, request: user_service_pb2.LogoutRequest, context: Context
    ) -> user_service_pb2.LogoutResponse:
        # Idempotent: a token that is forged, expired or already ended has nothing left to end.
        session_id = self._tokens.session_id_of(request.session_token)
        if session_id is not None:
            await self._store.end_session(session_id)
        return user_service_pb2.LogoutResponse()

    async def CheckSession(
        self, request: user_service_pb2.CheckSessionRequest, context: Context
    ) -> user_service_pb2.CheckSessionResponse:
        session_id = request.session_id
        if not session_id or len(session_id) > MAX_SESSION_ID_CHARS:
            return user_service_pb2.CheckSessionResponse(active=False)
        active = await self._store.is_session_active(session_id, self._tokens.now())
        return user_service_pb2.CheckSessionResponse(active=active)

    async def _changeable(self, caller: caller_pb2.Caller, username: str) -> user_pb2.User:
        """The user when this caller may change it. Anybody but staff is refused for any user
        but its own, absent ones included: a refusal tells nothing about who exists."""
        if is_staff(caller):
            return await self._store.get(username)
        customer = customer_id(caller)
        if customer is None:
            raise PermissionDenied(NOT_THE_USER)
        try:
            current = await self._store.get(username)
        except NotFound:
            raise PermissionDenied(NOT_THE_USER) from None
        if current.id != customer:
            raise PermissionDenied(NOT_THE_USER)
        return current

    async def _delete_expired_sessions(self) -> None:
        if time.monotonic() < self._next_cleanup:
            return
        self._next_cleanup = time.monotonic() + SESSION_CLEANUP_INTERVAL_SECONDS
        await self._store.delete_expired_sessions(self._tokens.now())


def _with_status(user: user_pb2.User, user_status: int) -> user_pb2.User:
    copy = user_pb2.User()
    copy.CopyFrom(user)
    copy.user_status = user_status
    return copy
