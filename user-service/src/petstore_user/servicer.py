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

A password change ends every session of the account but the one that made it (staff's change
ends them all); the current password sent again (a classic client's whole-record profile edit)
changes nothing and ends no session. Every cheap check (permission, the If-Match version, a
taken username, the password-change budget) runs before any hash: a request refused by one of
them costs no argon2 work. A wrong password counts against the account and its source
(login_throttle). Usernames are found and kept unique without regard to case.
"""

from __future__ import annotations

import time
from typing import Any

import grpc

from petstore.auth.v1 import caller_pb2
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.callers import BULK_CREATE_STAFF_ONLY, customer_id, is_staff, require_staff
from petstore_common.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from petstore_common.idempotency import DEFAULT_TTL_SECONDS, Idempotency, Reservation
from petstore_common.mongo import KeyedLocks
from petstore_common.versions import check_version, required_versions
from petstore_user import login_throttle, password_changes, validation
from petstore_user.client_sources import UNKNOWN, ClientSources
from petstore_user.passwords import MAX_PASSWORD_CHARS, Passwords
from petstore_user.sessions import MAX_SESSION_ID_CHARS, SessionTokens
from petstore_user.storage.base import (
    Account,
    LoginSource,
    UserStore,
    not_found,
    username_key,
    username_taken,
)

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
        self._sources = ClientSources(tokens.source_key())
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
            hashes = await self._passwords.hash_many([item.password for item in request.users])
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
        caller = request.caller
        account = await self._changeable(caller, request.username)
        current = account.user
        user = request.user
        if not is_staff(caller):
            user = _with_status(user, current.user_status)
        # The cheap checks, before any hash (the store checks version and name again, atomically).
        accepted = required_versions(request.precondition, request.HasField("precondition"))
        check_version(current.version, accepted, f"user {current.username}")
        await self._check_name_free(user.username, current.id)
        password_hash = None
        if request.HasField("password"):
            await self._spend_password_change(caller, current.id)
            if not await self._passwords.is_current(account.password_hash, request.password):
                password_hash = await self._passwords.hash(request.password)
        updated = await self._store.update(
            current.id, current.username, user, password_hash, accepted_versions=accepted
        )
        if password_hash is not None:
            # Whoever knew the old password, or held another session, is out. The customer's
            # own session stays (it just proved the account is its); staff's change ends all.
            keep = "" if is_staff(caller) else request.session_id
            await self._store.end_sessions_of(current.id, keep=keep)
        return user_service_pb2.UpdateUserResponse(user=updated)

    async def DeleteUser(
        self, request: user_service_pb2.DeleteUserRequest, context: Context
    ) -> user_service_pb2.DeleteUserResponse:
        current = (await self._changeable(request.caller, request.username)).user
        await self._store.delete(current.id, current.username)
        return user_service_pb2.DeleteUserResponse()

    async def Login(
        self, request: user_service_pb2.LoginRequest, context: Context
    ) -> user_service_pb2.LoginResponse:
        # The field rules refused a login without a password: no guess at all, it counts
        # against nobody.
        username, password = request.username, request.password
        source = self._sources.source_of(request.client_address)
        # Attempts at one account take turns in this process: each reads the counts the one
        # before it left, so a burst of parallel guesses cannot all pass one check of them.
        async with self._attempts.hold(username_key(username)):
            account = await self._check_password(username, password, source)
        user_id = account.user.id
        password_hash = account.password_hash
        if self._passwords.needs_rehash(password_hash):
            new_hash = await self._passwords.rehash(password)
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

    async def _check_password(self, username: str, password: str, source: str) -> Account:
        """The account when `password` is its password; counts a wrong one against the account
        and against `source` (login_throttle).

        An unknown username is NOT_FOUND without hashing anything: the contract tells the
        client so anyway (and GetUser is public), so equal timing would hide nothing."""
        account = await self._store.get_account(username)
        user_id = account.user.id
        now = self._tokens.now().timestamp()
        origin = await self._store.login_source(user_id, source)
        if source == UNKNOWN:  # nobody's usual source: never exempt from the account-wide wait
            origin = LoginSource(origin.failures)
        wait = login_throttle.login_wait(account.failures, origin, now)
        if wait:  # refused unheard, right password or not: a guess now would tell nothing
            raise ResourceExhausted(login_throttle.too_many_failures(wait), retry_after_seconds=wait)
        # A password no stored one can be (too long) is wrong without costing a hash.
        in_bounds = len(password) <= MAX_PASSWORD_CHARS
        if not (in_bounds and await self._passwords.verify(account.password_hash, password)):
            forget_before = now - login_throttle.FORGET_AFTER_SECONDS
            await self._store.record_login_failure(user_id, now, forget_before=forget_before)
            await self._store.record_source_failure(user_id, source, now, forget_before=forget_before)
            raise InvalidArgument(BAD_LOGIN)
        await self._store.record_source_success(user_id, source, now)
        return account

    async def _check_name_free(self, username: str, user_id: int) -> None:
        """AlreadyExists when another user has this username, whatever its case."""
        try:
            holder = await self._store.get(username)
        except NotFound:
            return
        if holder.id != user_id and username_key(holder.username) == username_key(username):
            raise AlreadyExists(username_taken(username))

    async def _spend_password_change(self, caller: caller_pb2.Caller, user_id: int) -> None:
        if is_staff(caller):
            return
        wait = await self._store.spend_password_change(
            user_id,
            self._tokens.now().timestamp(),
            password_changes.WINDOW_SECONDS,
            password_changes.PER_WINDOW,
        )
        if wait:
            raise ResourceExhausted(password_changes.too_many_changes(wait), retry_after_seconds=wait)

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

    async def _changeable(self, caller: caller_pb2.Caller, username: str) -> Account:
        """The account when this caller may change it. Anybody but staff is refused for any
        user but its own, absent ones included: a refusal tells nothing about who exists."""
        if is_staff(caller):
            return await self._store.get_account(username)
        customer = customer_id(caller)
        if customer is None:
            raise PermissionDenied(NOT_THE_USER)
        try:
            current = await self._store.get_account(username)
        except NotFound:
            raise PermissionDenied(NOT_THE_USER) from None
        if current.user.id != customer:
            raise PermissionDenied(NOT_THE_USER)
        return current

    async def _delete_expired_sessions(self) -> None:
        if time.monotonic() < self._next_cleanup:
            return
        self._next_cleanup = time.monotonic() + SESSION_CLEANUP_INTERVAL_SECONDS
        now = self._tokens.now()
        await self._store.delete_expired_sessions(now)
        await self._store.delete_stale_login_sources(
            failed_before=now.timestamp() - login_throttle.FORGET_AFTER_SECONDS,
            succeeded_before=now.timestamp() - login_throttle.KNOWN_SOURCE_SECONDS,
        )


def _with_status(user: user_pb2.User, user_status: int) -> user_pb2.User:
    copy = user_pb2.User()
    copy.CopyFrom(user)
    copy.user_status = user_status
    return copy
