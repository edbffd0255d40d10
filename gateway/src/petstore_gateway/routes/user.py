"""Accounts and sessions, forwarded to the user service; their declarations at the end."""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from petstore.user.v1 import user_service_pb2
from petstore_common.callers import BULK_CREATE_STAFF_ONLY
from petstore_common.rules import field_rules
from petstore_gateway.apidoc.schemas import (
    LOGIN_PASSWORD,
    NEW_PASSWORD,
    NOT_THE_USER,
    USER_NOT_FOUND,
    USERNAME,
    body_parameter,
    int32,
    min_length,
    ok,
    ok_message,
    ref,
    string_rules,
    users_body,
)
from petstore_gateway.bodies import read_body, respond_entity, respond_message, response_type
from petstore_gateway.credentials import request_credential
from petstore_gateway.errors import ApiError
from petstore_gateway.etags import IF_MATCH, if_match_precondition, unversioned_etag, versioned_etag
from petstore_gateway.idempotency import idempotency_key, replay_headers
from petstore_gateway.keys import AUTHENTICATOR, CLIENTS, METRICS, PRINCIPAL, RATE_LIMITS
from petstore_gateway.middlewares import request_address
from petstore_gateway.operations import BODY_MEDIA_TYPES, Access, Operation
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


async def create_user(request: web.Request) -> web.Response:
    signups = request.config_dict[RATE_LIMITS].signups
    if signups is not None and not request[PRINCIPAL].is_staff:  # counted before the body is read
        retry_after = signups.acquire(request_address(request))
        if retry_after is not None:
            request.config_dict[METRICS].limited("signup")
            raise too_many(retry_after, "sign-ups from this address", limit=signups.name)
    key = idempotency_key(request)
    user, password = await read_body(request, USER, lambda value: user_from_wire(value, for_create=True))
    reply = await call(
        request,
        request.config_dict[CLIENTS].user.CreateUser,
        user_service_pb2.CreateUserRequest(
            user=user, password=password or "", caller=request[PRINCIPAL].caller(), idempotency_key=key
        ),
        service=SERVICE,
    )
    return respond_message(request, str(reply.user.id), headers=replay_headers(reply.idempotent_replay))


async def create_users(request: web.Request) -> web.Response:
    """createWithArray and createWithList: the same users, all or none."""
    key = idempotency_key(request)
    users = await read_body(request, USERS, users_from_wire)
    reply = await call(
        request,
        request.config_dict[CLIENTS].user.CreateUsers,
        user_service_pb2.CreateUsersRequest(
            users=[
                user_service_pb2.CreateUserRequest(user=user, password=password) for user, password in users
            ],
            caller=request[PRINCIPAL].caller(),
            idempotency_key=key,
        ),
        service=SERVICE,
    )
    return respond_message(request, "ok", headers=replay_headers(reply.idempotent_replay))


async def login(request: web.Request) -> web.Response:
    username = request.query.get("username", "")
    password = request.query.get("password", "")
    if not username:
        raise ApiError(400, "username is required")
    if not password:  # no guess: it spends no login budget and counts against no account
        raise ApiError(400, "password is required")
    limits = request.config_dict[RATE_LIMITS]
    if limits.logins is not None:  # guesses spread over many usernames; each account has its own wait
        retry_after = limits.logins.acquire(request_address(request))
        if retry_after is not None:
            request.config_dict[METRICS].limited("login")
            raise too_many(retry_after, "login attempts from this address", limit=limits.logins.name)
    reply = await call(
        request,
        request.config_dict[CLIENTS].user.Login,
        # The service throttles wrong passwords per account and source: whose is this one.
        user_service_pb2.LoginRequest(
            username=username, password=password, client_address=request_address(request)
        ),
        service=SERVICE,
    )
    headers = {"X-Expires-After": format_utc(reply.expire_time)}
    allowance = limits.login_allowance_per_hour()
    if allowance is not None:  # calls per hour this user may make, as classic clients expect
        headers["X-Rate-Limit"] = str(allowance)
    return respond_message(request, f"logged in user session:{reply.session_token}", headers=headers)


async def logout(request: web.Request) -> web.Response:
    """Ends the session sent as api_key or Bearer, if it is one; "ok" in every case."""
    token = request_credential(request)
    authenticator = request.config_dict[AUTHENTICATOR]
    if token.count(".") == 2:
        try:
            claims = authenticator.decode_session(token)
        except ApiError:
            claims = None  # not a live session of ours: nothing to end
        if claims is not None:
            await call(
                request,
                request.config_dict[CLIENTS].user.Logout,
                user_service_pb2.LogoutRequest(session_token=token),
                service=SERVICE,
            )
            authenticator.session_ended(claims.session_id)
    return respond_message(request, "ok")


async def get_user(request: web.Request) -> web.Response:
    reply = await call(
        request,
        request.config_dict[CLIENTS].user.GetUser,
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


async def update_user(request: web.Request) -> web.Response:
    username = request.match_info["username"]
    user, password = await read_body(request, USER, lambda value: user_from_wire(value, for_create=False))
    if not user.username:
        user.username = username  # no username in the body: keep the current one
    principal = request[PRINCIPAL]
    # The session making the change survives a new password; the service ends every other one.
    update = user_service_pb2.UpdateUserRequest(
        username=username, user=user, caller=principal.caller(), session_id=principal.session_id or ""
    )
    if password is not None:
        update.password = password
    precondition = if_match_precondition(request.headers.get(IF_MATCH))
    if precondition is not None:
        update.precondition.CopyFrom(precondition)
    reply = await call(request, request.config_dict[CLIENTS].user.UpdateUser, update, service=SERVICE)
    return respond_message(request, str(reply.user.id))


async def delete_user(request: web.Request) -> web.Response:
    username = request.match_info["username"]
    await call(
        request,
        request.config_dict[CLIENTS].user.DeleteUser,
        user_service_pb2.DeleteUserRequest(username=username, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    # The service ended every session of the user; the one used here stops working at once.
    session_id = request[PRINCIPAL].session_id
    if session_id is not None:
        request.config_dict[AUTHENTICATOR].session_ended(session_id)
    return respond_message(request, username)


_CREATE_WITH_ARRAY = Operation(
    method="POST",
    path="/user/createWithArray",
    operation_id="createUsersWithArrayInput",
    tag="user",
    summary="Creates list of users with given input array",
    handler=create_users,
    access=Access.STAFF,
    staff_refusal=BULK_CREATE_STAFF_ONLY,
    consumes=BODY_MEDIA_TYPES,
    idempotent=True,
    success=ok_message('"ok" as message'),
    errors={
        400: "Invalid users (the message names the first)",
        409: "A username or id is taken",
    },
    parameters=(users_body(),),
    description="Staff only.",
)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        method="POST",
        path="/user",
        operation_id="createUser",
        tag="user",
        summary="Create user",
        handler=create_user,
        access=Access.OPTIONAL,
        consumes=BODY_MEDIA_TYPES,
        idempotent=True,
        success=ok_message("the new user's id as message"),
        errors={400: "Invalid user", 409: "The username or id is taken"},
        parameters=(body_parameter(ref("NewUser"), "The user to create"),),
        description="Open to everyone: this is how one signs up. userStatus is staff-managed: "
        "it is kept only when a static key is sent, else the new user has 0.",
    ),
    _CREATE_WITH_ARRAY,
    # The classic API's twin of createWithArray, the same in all but its name.
    replace(_CREATE_WITH_ARRAY, path="/user/createWithList", operation_id="createUsersWithListInput"),
    Operation(
        method="GET",
        path="/user/login",
        operation_id="loginUser",
        tag="user",
        summary="Logs user into the system",
        handler=login,
        access=Access.OPEN,
        private=True,
        success=ok(
            "successful operation: message is `logged in user session:<token>`; send the token "
            "as api_key until it expires or you log out",
            ref("ApiResponse"),
            {
                "X-Rate-Limit": int32(
                    description="logins per hour allowed from this address: the tightest of "
                    "LOGIN_RATE_LIMIT_PER_MINUTE x 60 and RATE_LIMIT_PER_SECOND x 3600; "
                    "absent when both limits are off"
                ),
                "X-Expires-After": {
                    "type": "string",
                    "format": "date-time",
                    "description": "date in UTC when the session expires",
                },
            },
        ),
        errors={400: "Invalid username/password supplied", 404: USER_NOT_FOUND},
        parameters=(
            {
                "name": "username",
                "in": "query",
                "description": "The user name for login",
                "required": True,
                "type": "string",
                "minLength": min_length(field_rules(user_service_pb2.LoginRequest, "username")),
                "maxLength": string_rules(user_service_pb2.LoginRequest, "username").max_len,
            },
            {
                "name": "password",
                "in": "query",
                "description": "The password for login in clear text",
                "required": True,
                "type": "string",
                "minLength": min_length(LOGIN_PASSWORD),
                "maxLength": NEW_PASSWORD.max_len,  # no stored password is longer
            },
        ),
    ),
    Operation(
        method="GET",
        path="/user/logout",
        operation_id="logoutUser",
        tag="user",
        summary="Logs out current logged in user session",
        handler=logout,
        access=Access.OPEN,
        private=True,
        success=ok_message('"ok" as message'),
        parameters=(
            {
                "name": "api_key",
                "in": "header",
                "description": "The session token to end (or send it as Authorization: Bearer); "
                "anything else is ignored",
                "required": False,
                "type": "string",
            },
        ),
        description="Ends the session sent as api_key or Bearer, if it is one; ok in every case.",
    ),
    Operation(
        method="GET",
        path="/user/{username}",
        operation_id="getUserByName",
        tag="user",
        summary="Get user by user name",
        handler=get_user,
        access=Access.OPTIONAL,
        conditional_read=True,
        success=ok("successful operation", ref("User")),
        errors={400: "Invalid username supplied", 404: USER_NOT_FOUND},
        parameters=(USERNAME,),
        description="Anyone sees a user's id and username; the user itself (its session) and "
        "staff see the whole record.",
    ),
    Operation(
        method="PUT",
        path="/user/{username}",
        operation_id="updateUser",
        tag="user",
        summary="Updated user",
        handler=update_user,
        access=Access.REQUIRED,
        consumes=BODY_MEDIA_TYPES,
        conditional_write=True,
        success=ok_message("the user's id as message"),
        errors={
            400: "Invalid user supplied",
            403: NOT_THE_USER,
            404: USER_NOT_FOUND,
            409: "The new username is taken",
        },
        parameters=(USERNAME, body_parameter(ref("UserUpdate"), "The user's new fields")),
        description="Staff may change any user; a session only its own, and never its id or "
        "userStatus (the stored values are kept).",
    ),
    Operation(
        method="DELETE",
        path="/user/{username}",
        operation_id="deleteUser",
        tag="user",
        summary="Delete user",
        handler=delete_user,
        access=Access.REQUIRED,
        success=ok_message("the username as message"),
        errors={
            400: "Invalid username supplied",
            403: NOT_THE_USER,
            404: USER_NOT_FOUND,
        },
        parameters=(USERNAME,),
        description="Staff may delete any user; a session only its own.",
    ),
)
