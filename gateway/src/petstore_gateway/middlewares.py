"""The pieces of the request steps (pipeline.py puts them in order, once): the access log, the
error step's ApiResponse bodies, the OPTIONS preflight, the caller a rate limit charges; and
the one middleware, for requests that no operation serves."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from http import HTTPStatus

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from petstore_common.logging import RequestLog
from petstore_gateway.auth import ANONYMOUS, Principal, authenticate_request
from petstore_gateway.bodies import error_response
from petstore_gateway.client_address import FORWARDED_FOR_HEADER, Network, client_address, forwarded_for
from petstore_gateway.cors import preflight_headers
from petstore_gateway.credentials import request_credential
from petstore_gateway.errors import ApiError
from petstore_gateway.keys import AUTHENTICATOR, SETTINGS
from petstore_gateway.metrics import route_template
from petstore_gateway.negotiation import JSON_RESPONSE, choose_response_type
from petstore_gateway.operations import in_api
from petstore_gateway.ratelimit import RateLimited
from petstore_gateway.refusal_log import CLIENT_CLOSED_REQUEST, REFUSAL, Refusal, refusal_fields

REQUEST_ID_HEADER = "X-Request-ID"

access_log = RequestLog("petstore_gateway.access", "request")
probe_log = RequestLog("petstore_gateway.access", "request", level=logging.DEBUG)
"""A probe answered 2xx: asked every few seconds by an orchestrator, news to nobody."""
log = logging.getLogger(__name__)


PROBES = frozenset({"/livez", "/readyz"})
"""Never rate limited (an orchestrator must always be able to ask); a 2xx is logged at DEBUG."""


def client_gone(request: web.Request) -> bool:
    """The client closed its connection: whatever is answered now reaches nobody."""
    transport = request.transport
    return transport is None or transport.is_closing()


def log_refusal(request: web.Request, route: str, status: int, ms: float) -> None:
    """The access line of a refused request (4xx, 5xx): it also names what the client was told,
    the client address and the kind of caller (refusal_log.py)."""
    fields = refusal_fields(request, status, request_address(request))
    access_log.write(method=request.method, route=route, status=status, ms=ms, **fields)


_HTTP_MESSAGES = {
    404: "no such resource",
    405: "method not allowed on this resource",
}


def failure_response(request: web.Request, exc: Exception) -> web.Response:
    """The error step: every failure becomes the ApiResponse error body; nothing internal
    reaches the client. A redirect (an HTTPException under 400) is raised again."""
    if isinstance(exc, ApiError):
        limit = exc.limit if isinstance(exc, RateLimited) else None
        return _error(request, exc.status, exc.message, exc.headers, limit=limit)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        headers = {name: value for name, value in exc.headers.items() if name in ("Allow", "Retry-After")}
        return _error(request, exc.status, _http_message(request, exc.status), headers)
    if isinstance(exc, ConnectionResetError) and client_gone(request):
        # What reading a body raises once its client has closed: nobody to answer, no fault.
        return web.Response(status=CLIENT_CLOSED_REQUEST)
    log.error(
        "unhandled error",
        exc_info=exc,
        extra={"method": request.method, "route": route_template(request)},
    )
    return _error(request, 500, "internal error", {})


def _http_message(request: web.Request, status: int) -> str:
    if status == 413:
        return f"request body is larger than {request.config_dict[SETTINGS].max_body_bytes} bytes"
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


def request_address(request: web.Request, trusted_proxies: tuple[Network, ...] | None = None) -> str:
    """The client address of `request` (its peer, or whom a trusted proxy says it served);
    TRUSTED_PROXIES from the settings unless the caller has them at hand (a pipeline does).
    Handlers call it too, where request.app is the API's sub-application: config_dict."""
    if trusted_proxies is None:
        trusted_proxies = request.config_dict[SETTINGS].trusted_proxies
    forwarded = forwarded_for(request.headers.getall(FORWARDED_FOR_HEADER, ()))
    return client_address(request.remote, forwarded, trusted_proxies)


async def genuine_caller(request: web.Request) -> Principal:
    """Who sent the request's credential, or anonymous when it sent none or one that is not
    genuine (made up, expired, logged out, of a deleted account, or not checkable right now)."""
    api_key = request_credential(request)
    if api_key:
        try:
            return await authenticate_request(request, request.config_dict[AUTHENTICATOR], api_key)
        except ApiError:
            pass
    return ANONYMOUS


def client_identity(
    request: web.Request, caller: Principal, trusted_proxies: tuple[Network, ...] | None = None
) -> str:
    """Whose budget a request spends: a customer's user id (every session of it shares one), a
    static key's own, else its address: a credential that is not genuine spends its address's,
    so inventing or keeping keys buys no fresh budget. (The limiter hashes it.)"""
    return caller.budget() or f"addr:{request_address(request, trusted_proxies)}"


def preflight(request: web.Request, origin: str | None, allowed: tuple[str, ...]) -> web.Response | None:
    """The answer to OPTIONS on an API route (204: Allow, and the CORS grant for a preflight);
    None for any other request. No operation is declared for OPTIONS: only the lean path asks."""
    unmatched = request.match_info.http_exception
    if request.method == "OPTIONS" and isinstance(unmatched, web.HTTPMethodNotAllowed) and in_api(request):
        return web.Response(status=204, headers=preflight_headers(origin, allowed, unmatched.allowed_methods))
    return None


def unrouted_middleware(
    lean: Callable[[web.Request, Handler], Awaitable[web.StreamResponse]],
    pipelined: Collection[web.AbstractRoute],
) -> Middleware:
    """The app's one middleware: a route in `pipelined` runs its operation's own pipeline (its
    handler), anything else (404, 405, OPTIONS, the docs, the probes) the `lean` steps."""

    @web.middleware
    async def unrouted(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.match_info.route in pipelined:
            return await handler(request)
        return await lean(request, handler)

    return unrouted
