"""Request id, metrics and access log, CORS, errors, rate limits, negotiation and auth, outermost first."""

from __future__ import annotations

import asyncio
import logging
import time
from http import HTTPStatus

from aiohttp import web
from aiohttp.typedefs import Handler

from petstore_common.logging import RequestLog
from petstore_common.request_context import current_request_id, sanitize_request_id
from petstore_gateway.auth import ANONYMOUS, Principal, authenticate_request
from petstore_gateway.bodies import error_response
from petstore_gateway.caching import add_vary
from petstore_gateway.client_address import FORWARDED_FOR_HEADER, client_address, forwarded_for
from petstore_gateway.cors import preflight_headers, response_headers
from petstore_gateway.credentials import request_credential
from petstore_gateway.errors import ApiError
from petstore_gateway.keys import AUTHENTICATOR, METRICS, PRINCIPAL, RATE_LIMITS, RESPONSE_TYPE, SETTINGS
from petstore_gateway.metrics import route_template
from petstore_gateway.negotiation import JSON_RESPONSE, choose_response_type, not_acceptable
from petstore_gateway.operations import Access, in_api, operation_of
from petstore_gateway.ratelimit import RateLimited, too_many
from petstore_gateway.refusal_log import CLIENT_CLOSED_REQUEST, REFUSAL, Refusal, refusal_fields

REQUEST_ID_HEADER = "X-Request-ID"

access_log = RequestLog("petstore_gateway.access", "request")
probe_log = RequestLog("petstore_gateway.access", "request", level=logging.DEBUG)
"""A probe answered 2xx: asked every few seconds by an orchestrator, news to nobody."""
log = logging.getLogger(__name__)


PROBES = frozenset({"/livez", "/readyz"})
# Probes are never rate limited: an orchestrator must always be able to ask.
RATE_LIMIT_EXEMPT = PROBES


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Take a safe X-Request-ID or make one; logs and outgoing gRPC metadata carry it."""
    request_id = sanitize_request_id(request.headers.get(REQUEST_ID_HEADER))
    token = current_request_id.set(request_id)
    try:
        response = await handler(request)
    except web.HTTPException as exc:  # only redirects get past the error middleware
        exc.headers[REQUEST_ID_HEADER] = request_id
        raise
    finally:
        current_request_id.reset(token)
    response.headers[REQUEST_ID_HEADER] = request_id
    if in_api(request):
        _vary_on_accept(response)
    return response


def _vary_on_accept(response: web.StreamResponse) -> None:
    """Every API answer, errors included, is JSON or XML by the Accept header: a shared cache
    must not hand one client's representation to another (RFC 9110, 12.5.5)."""
    add_vary(response, "Accept")


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One access log line and the request metrics per request; never the query or body. A
    refused request's line (4xx, 5xx) also names what the client was told, the client address
    and the kind of caller (refusal_log.py); a probe that succeeded is logged at DEBUG."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = CLIENT_CLOSED_REQUEST if client_gone(request) else response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except asyncio.CancelledError:  # a handler is cancelled when its client leaves (if so configured)
        if client_gone(request):
            status = CLIENT_CLOSED_REQUEST
        raise
    finally:
        elapsed = time.perf_counter() - started
        route = route_template(request)
        request.app[METRICS].observe(request.method, route, status, elapsed)
        ms = round(elapsed * 1000, 2)
        if status >= 400:
            fields = refusal_fields(request, status, request_address(request))
            access_log.write(method=request.method, route=route, status=status, ms=ms, **fields)
        elif route in PROBES:
            probe_log.write(method=request.method, route=route, status=status, ms=ms)
        else:
            access_log.write(method=request.method, route=route, status=status, ms=ms)


def client_gone(request: web.Request) -> bool:
    """The client closed its connection: whatever is answered now reaches nobody."""
    transport = request.transport
    return transport is None or transport.is_closing()


_HTTP_MESSAGES = {
    404: "no such resource",
    405: "method not allowed on this resource",
}


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes the ApiResponse error body; nothing internal reaches the client."""
    try:
        return await handler(request)
    except ApiError as exc:
        limit = exc.limit if isinstance(exc, RateLimited) else None
        return _error(request, exc.status, exc.message, exc.headers, limit=limit)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {name: value for name, value in exc.headers.items() if name in ("Allow", "Retry-After")}
        return _error(request, exc.status, _http_message(request, exc.status), headers)
    except Exception as exc:
        if isinstance(exc, ConnectionResetError) and client_gone(request):
            # What reading a body raises once its client has closed: nobody to answer, no fault.
            return web.Response(status=CLIENT_CLOSED_REQUEST)
        log.exception("unhandled error", extra={"method": request.method, "route": route_template(request)})
        return _error(request, 500, "internal error", {})


def _http_message(request: web.Request, status: int) -> str:
    if status == 413:
        return f"request body is larger than {request.app[SETTINGS].max_body_bytes} bytes"
    return _HTTP_MESSAGES.get(status) or HTTPStatus(status).phrase.lower()


BEARER_CHALLENGE = 'Bearer realm="petstore"'
"""What a 401 names as the way in (RFC 9110, 11.6.1: a 401 carries a challenge). The api_key
header takes the same credentials, but is no HTTP authentication scheme to name."""


def _error(
    request: web.Request, status: int, message: str, headers: dict[str, str], *, limit: str | None = None
) -> web.Response:
    request[REFUSAL] = Refusal(message, limit)  # for the access log line
    if status == 401:
        headers = {**headers, "WWW-Authenticate": BEARER_CHALLENGE}
    # An error is answered in a format the client accepts, or JSON when it accepts none.
    accepted = choose_response_type(request.headers.get("Accept")) or JSON_RESPONSE
    return error_response(status, message, accepted, headers=headers)


def request_address(request: web.Request) -> str:
    """The client address of `request` (its peer, or whom a trusted proxy says it served).
    Handlers call it too, where request.app is the API's sub-application: config_dict."""
    forwarded = forwarded_for(request.headers.getall(FORWARDED_FOR_HEADER, ()))
    return client_address(request.remote, forwarded, request.config_dict[SETTINGS].trusted_proxies)


async def genuine_caller(request: web.Request) -> Principal:
    """Who sent the request's credential, or anonymous when it sent none or one that is not
    genuine (made up, expired, logged out, of a deleted account, or not checkable right now)."""
    api_key = request_credential(request)
    if api_key:
        try:
            return await authenticate_request(request, request.app[AUTHENTICATOR], api_key)
        except ApiError:
            pass
    return ANONYMOUS


def client_identity(request: web.Request, caller: Principal) -> str:
    """Whose budget a request spends: a customer's user id (every session of it shares one), a
    static key's own, else its address: a credential that is not genuine spends its address's,
    so inventing or keeping keys buys no fresh budget. (The limiter hashes it.)"""
    return caller.budget() or f"addr:{request_address(request)}"


@web.middleware
async def rate_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """429 with Retry-After once a client has spent its burst faster than its rate refills it."""
    limiter = request.app[RATE_LIMITS].clients
    if limiter is not None and request.path not in RATE_LIMIT_EXEMPT:
        caller = await genuine_caller(request)
        retry_after = limiter.acquire(client_identity(request, caller))
        if retry_after is not None:
            request.app[METRICS].limited("client")
            request[PRINCIPAL] = caller  # whom the access log names as refused
            raise too_many(retry_after, "requests", limit=limiter.name)
    return await handler(request)


@web.middleware
async def cors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """OPTIONS on an API route is answered here (204: Allow, and the CORS grant for a preflight);
    every other answer, errors included, carries the CORS headers for an allowed Origin."""
    allowed = request.app[SETTINGS].cors_allow_origins
    origin = request.headers.get("Origin")
    unmatched = request.match_info.http_exception
    if request.method == "OPTIONS" and isinstance(unmatched, web.HTTPMethodNotAllowed) and in_api(request):
        return web.Response(status=204, headers=preflight_headers(origin, allowed, unmatched.allowed_methods))
    headers = response_headers(origin, allowed)
    try:
        response = await handler(request)
    except web.HTTPException as exc:  # only redirects get past the error middleware
        _add_cors(exc, headers)
        raise
    _add_cors(response, headers)
    return response


def _add_cors(response: web.StreamResponse, headers: dict[str, str]) -> None:
    """The CORS headers; their Vary (Origin) beside whatever the answer varies on already."""
    for name, value in headers.items():
        if name == "Vary":
            add_vary(response, value)
        else:
            response.headers[name] = value


@web.middleware
async def negotiation_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Decide the response representation before any work is done: 406 when none fits."""
    chosen = choose_response_type(request.headers.get("Accept"))
    if chosen is None:
        op = operation_of(request)
        if op is not None and op.negotiated:  # not an image, the docs or a probe: their own type
            raise not_acceptable()
        chosen = JSON_RESPONSE
    request[RESPONSE_TYPE] = chosen
    return await handler(request)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Who is calling goes on the request (staff, a customer or anonymous); 401 when an
    operation needs a credential and none valid was sent, or a sent one is not valid; 403 for
    anybody but staff on a staff-only operation. All before the handler reads a body. The
    credential is `api_key` or `Authorization: Bearer`; conflicting ones are 400 on every API
    request."""
    credential = request_credential(request) if in_api(request) else ""
    principal = ANONYMOUS
    op = operation_of(request)
    if op is not None and (
        op.access in (Access.REQUIRED, Access.STAFF) or (op.access is Access.OPTIONAL and credential)
    ):
        principal = await authenticate_request(request, request.app[AUTHENTICATOR], credential)
    request[PRINCIPAL] = principal  # before a 403 too: the access log names whom it refused
    if op is not None and op.access is Access.STAFF and not principal.is_staff:
        raise ApiError(403, op.staff_refusal)
    return await handler(request)


MIDDLEWARES = (
    request_id_middleware,
    observe_middleware,
    cors_middleware,
    error_middleware,
    rate_limit_middleware,
    negotiation_middleware,
    auth_middleware,
)
