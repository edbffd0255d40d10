"""/v2/user: accounts and sessions, forwarded to the user service."""

from __future__ import annotations

import grpc
from aiohttp import web

from petstore.user.v1 import user_service_pb2
from petstore_gateway.bodies import read_body, respond_entity, respond_message, response_type
from petstore_gateway.credentials import request_credential
from petstore_gateway.errors import ApiError
from petstore_gateway.etags import IF_MATCH, if_match_precondition, unversioned_etag, versioned_etag
from petstore_gateway.idempotency import KEY_REUSED_IS_422, idempotency_key, replay_headers
from petstore_gateway.keys import AUTHENTICATOR, CLIENTS, METRICS, PRINCIPAL, RATE_LIMITS
from petstore_gateway.middlewares import request_address
from petstore_gateway.ratelimit import too_many
from petstore_gateway.representations.order import format_utc
from petstore_gateway.representations.shapes import encode
from petstore_gateway.representations.user import (
    USER,
    USERS,
    public_user_to_wire,
    user_from_wire,
    user_to_wire,
    users_from_wire,
)
from petstore_gateway.rpc import call

SERVICE = "user"

# With If-Match, a version that moved on, or no user at all, fails the precondition (RFC 9110 13.1.1).
CONDITIONAL_WRITE = {grpc.StatusCode.FAILED_PRECONDITION: 412, grpc.StatusCode.NOT_FOUND: 412}

routes = web.RouteTableDef()


@routes.post("/v2/user")
async def create_user(request: web.Request) -> web.Response:
    signups = request.app[RATE_LIMITS].signups
    if signups is not None and not request[PRINCIPAL].is_staff:  # counted before the body is read
        retry_after = signups.acquire(request_address(request))
        if retry_after is not None:
            request.app[METRICS].limited("signup")
            raise too_many(retry_after, "sign-ups from this address")
    key = idempotency_key(request)
    user, password = await read_body(request, USER, lambda value: user_from_wire(value, for_create=True))
    reply = await call(
        request,
        request.app[CLIENTS].user.CreateUser,
        user_service_pb2.CreateUserRequest(
            user=user, password=password or "", caller=request[PRINCIPAL].caller(), idempotency_key=key
        ),
        service=SERVICE,
        overrides=KEY_REUSED_IS_422,
    )
    return respond_message(request, str(reply.user.id), headers=replay_headers(reply.idempotent_replay))


async def _create_users(request: web.Request) -> web.Response:
    key = idempotency_key(request)
    users = await read_body(request, USERS, users_from_wire)
    reply = await call(
        request,
        request.app[CLIENTS].user.CreateUsers,
        user_service_pb2.CreateUsersRequest(
            users=[
                user_service_pb2.CreateUserRequest(user=user, password=password) for user, password in users
            ],
            caller=request[PRINCIPAL].caller(),
            idempotency_key=key,
        ),
        service=SERVICE,
        overrides=KEY_REUSED_IS_422,
    )
    return respond_message(request, "ok", headers=replay_headers(reply.idempotent_replay))


@routes.post("/v2/user/createWithArray")
async def create_users_with_array(request: web.Request) -> web.Response:
    return await _create_users(request)


@routes.post("/v2/user/createWithList")
async def create_users_with_list(request: web.Request) -> web.Response:
    return await _create_users(request)


@routes.get("/v2/user/login")
async def login(request: web.Request) -> web.Response:
    username = request.query.get("username", "")
    password = request.query.get("password", "")
    if not username:
        raise ApiError(400, "username is required")
    if not password:  # no guess: it spends no login budget and counts against no account
        raise ApiError(400, "password is required")
    limits = request.app[RATE_LIMITS]
    if limits.logins is not None:  # guesses spread over many usernames; each account has its own wait
        retry_after = limits.logins.acquire(request_address(request))
        if retry_after is not None:
            request.app[METRICS].limited("login")
            raise too_many(retry_after, "login attempts from this address")
    reply = await call(
        request,
        request.app[CLIENTS].user.Login,
        user_service_pb2.LoginRequest(username=username, password=password),
        service=SERVICE,
    )
    headers = {"X-Expires-After": format_utc(reply.expire_time)}
    allowance = limits.login_allowance_per_hour()
    if allowance is not None:  # calls per hour this user may make, as classic clients expect
        headers["X-Rate-Limit"] = str(allowance)
    return respond_message(request, f"logged in user session:{reply.session_token}", headers=headers)


@routes.get("/v2/user/logout")
async def logout(request: web.Request) -> web.Response:
    """Ends the session sent as api_key or Bearer, if it is one; "ok" in every case."""
    token = request_credential(request)
    authenticator = request.app[AUTHENTICATOR]
    if token.count(".") == 2:
        try:
            claims = authenticator.decode_session(token)
        except ApiError:
            claims = None  # not a live session of ours: nothing to end
        if claims is not None:
            await call(
                request,
                request.app[CLIENTS].user.Logout,
                user_service_pb2.LogoutRequest(session_token=token),
                service=SERVICE,
            )
            authenticator.session_ended(claims.session_id)
    return respond_message(request, "ok")


@routes.get("/v2/user/{username}")
async def get_user(request: web.Request) -> web.Response:
    reply = await call(
        request,
        request.app[CLIENTS].user.GetUser,
        user_service_pb2.GetUserRequest(
            username=request.match_info["username"], caller=request[PRINCIPAL].caller()
        ),
        service=SERVICE,
    )
    body_format = response_type(request).format
    if reply.view == user_service_pb2.USER_VIEW_FULL:
        body = encode(user_to_wire(reply.user), body_format, USER)
        return respond_entity(request, body, versioned_etag(reply.user.version, body))
    # The public view's tag must not reveal the version: a digest of what is shown.
    body = encode(public_user_to_wire(reply.user), body_format, USER)
    return respond_entity(request, body, unversioned_etag(body))


@routes.put("/v2/user/{username}")
async def update_user(request: web.Request) -> web.Response:
    username = request.match_info["username"]
    user, password = await read_body(request, USER, lambda value: user_from_wire(value, for_create=False))
    if not user.username:
        user.username = username  # no username in the body: keep the current one
    update = user_service_pb2.UpdateUserRequest(
        username=username, user=user, caller=request[PRINCIPAL].caller()
    )
    if password is not None:
        update.password = password
    precondition = if_match_precondition(request.headers.get(IF_MATCH))
    if precondition is not None:
        update.precondition.CopyFrom(precondition)
    overrides = CONDITIONAL_WRITE if request.headers.get(IF_MATCH) is not None else {}
    reply = await call(
        request, request.app[CLIENTS].user.UpdateUser, update, service=SERVICE, overrides=overrides
    )
    return respond_message(request, str(reply.user.id))


@routes.delete("/v2/user/{username}")
async def delete_user(request: web.Request) -> web.Response:
    username = request.match_info["username"]
    await call(
        request,
        request.app[CLIENTS].user.DeleteUser,
        user_service_pb2.DeleteUserRequest(username=username, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    # The service ended every session of the user; the one used here stops working at once.
    session_id = request[PRINCIPAL].session_id
    if session_id is not None:
        request.app[AUTHENTICATOR].session_ended(session_id)
    return respond_message(request, username)
