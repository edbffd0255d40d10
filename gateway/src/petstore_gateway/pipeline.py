"""What the gateway does around every request, outermost first, written once:

1. request id: take a safe X-Request-ID or make one (logs and gRPC metadata carry it);
2. observe: the request metrics and one access log line (middlewares.py says what it holds);
3. CORS: the headers for an allowed Origin, on every answer, errors included;
4. errors: every failure becomes the ApiResponse error body;
5. rate limit: 429 once a client has spent its burst (skipped for the probes);
6. negotiation: the representation chosen from Accept before any work; 406 when none fits;
7. auth: who is calling (PRINCIPAL); 401 and 403 by the operation's access rule;
8. the handler; then Vary: Accept on every API answer and X-Request-ID on every answer.

`build_pipeline(op, app)` turns that into one coroutine per operation at start, straight-line
code with the steps its declaration rules out left out (no limiter step when limits are off,
no negotiation for an operation that is not negotiated, no authentication for an OPEN one) and
the headers fixed for it precomputed. The same builder with no operation gives the lean path
(`middlewares.unrouted_middleware`) for whatever no operation serves: 404s, 405s and OPTIONS
preflights, the docs, the probes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler

from petstore_common.request_context import current_request_id, sanitize_request_id
from petstore_gateway.auth import ANONYMOUS, Principal, authenticate_request
from petstore_gateway.caching import add_vary
from petstore_gateway.client_address import Network
from petstore_gateway.cors import response_headers
from petstore_gateway.credentials import request_credential
from petstore_gateway.errors import ApiError
from petstore_gateway.keys import AUTHENTICATOR, METRICS, PRINCIPAL, RATE_LIMITS, RESPONSE_TYPE, SETTINGS
from petstore_gateway.metrics import GatewayMetrics, route_template
from petstore_gateway.middlewares import (
    PROBES,
    REQUEST_ID_HEADER,
    access_log,
    client_gone,
    client_identity,
    failure_response,
    genuine_caller,
    log_refusal,
    preflight,
    probe_log,
)
from petstore_gateway.negotiation import JSON_RESPONSE, ResponseType, choose_response_type, not_acceptable
from petstore_gateway.operations import Access, Operation, in_api, routed_marker
from petstore_gateway.ratelimit import KeyedLimiter, too_many
from petstore_gateway.refusal_log import CLIENT_CLOSED_REQUEST


class Run(Protocol):
    """A request's steps around `handler` (the route's, for the lean path; the operation's own,
    bound once with `Pipeline.serving`, for an operation)."""

    def __call__(self, request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]: ...


@dataclass(frozen=True, slots=True)
class Pipeline:
    """What was built for one operation (or, with `operation` None, for the lean path)."""

    operation: Operation | None
    steps: tuple[str, ...]
    """The steps a request runs, outermost first (tests and docs read them)."""
    run: Run

    def serving(self, handler: Handler) -> Handler:
        """The route handler: these steps around `handler`, bound without another frame."""
        return partial(self.run, handler=handler)


def build_pipeline(op: Operation | None, app: web.Application) -> Pipeline:
    """The steps for requests served by `op` (None: by no operation) in `app`, whose settings,
    metrics, limits and authenticator are in place (create_app sets them first)."""
    allowed = app[SETTINGS].cors_allow_origins
    trusted = app[SETTINGS].trusted_proxies
    metrics = app[METRICS]
    limiter = app[RATE_LIMITS].clients
    authenticator = app[AUTHENTICATOR]

    lean = op is None
    mark_routed = routed_marker(op) if op is not None else _unmarked
    limited = limiter is not None
    # Which steps this pipeline has, decided here once (the lean path decides some per request).
    negotiates = op is None or op.negotiated
    refuses_unacceptable = op is not None and op.negotiated
    access = op.access if op is not None else None
    always_authenticates = access in (Access.REQUIRED, Access.STAFF)
    may_authenticate = always_authenticates or access is Access.OPTIONAL
    staff_refusal = op.staff_refusal if op is not None and op.access is Access.STAFF else ""
    # Headers fixed for the operation: without an Origin, CORS adds the same every time; every
    # API answer varies by Accept, after Origin (the order the answers always had).
    no_origin_cors = response_headers(None, allowed)
    no_origin_vary = ", ".join(filter(None, (no_origin_cors.get("Vary"), "Accept")))
    no_origin_extra = {name: value for name, value in no_origin_cors.items() if name != "Vary"}

    # Known once the API is mounted under its prefix: an operation's is taken from its first request.
    route_label: list[str] = [""]

    steps = (
        "request_id",
        "observe",
        "cors" if lean else "cors_headers",  # the lean path also answers OPTIONS preflights
        "errors",
        *(("rate_limit",) if limited else ()),
        *(("negotiation",) if negotiates else ()),
        "auth" if lean or may_authenticate else "credential_check",
        "handler",
    )

    async def run(request: web.Request, handler: Handler) -> web.StreamResponse:
        # 1. request id
        request_id = sanitize_request_id(request.headers.get(REQUEST_ID_HEADER))
        token = current_request_id.set(request_id)
        # 2. observe
        started = time.perf_counter()
        status = 500
        mark_routed(request)  # (the lean path's marks nothing: it looks routing up when asked)
        api = in_api(request) if lean else True
        try:
            try:
                # 3. CORS (the lean path answers an OPTIONS preflight here, CORS grant and all)
                origin = request.headers.get("Origin")
                response: web.StreamResponse | None = preflight(request, origin, allowed) if lean else None
                if response is None:
                    cors = no_origin_cors if origin is None else response_headers(origin, allowed)
                    # 4. errors
                    try:
                        # 5. rate limit (never the probes: an orchestrator must always be able to ask)
                        credential: str | None = None  # not read yet
                        if limited and (not lean or request.path not in PROBES):
                            credential = request_credential(request)  # 400 when the headers disagree
                            # most requests send none: no coroutine to spend on it
                            caller = await genuine_caller(request) if credential else ANONYMOUS
                            _admit(request, caller, limiter, trusted, metrics)  # type: ignore[arg-type]
                        # 6. negotiation
                        if negotiates:
                            request[RESPONSE_TYPE] = _negotiate(request, refuses_unacceptable)
                        # 7. auth (conflicting credentials are 400 on every API request)
                        credential = _credential(request, api, credential)
                        principal = ANONYMOUS
                        if always_authenticates or (may_authenticate and credential):
                            principal = await authenticate_request(request, authenticator, credential)
                        request[PRINCIPAL] = principal  # before a 403 too: the log names whom it refused
                        if staff_refusal and not principal.is_staff:
                            raise ApiError(403, staff_refusal)
                        # 8. the handler
                        response = await handler(request)
                    except Exception as exc:  # a redirect is raised again, CORS headers added
                        response = _answer_failure(request, exc, cors)
                    _finish_headers(response, origin, api, cors, no_origin_extra, no_origin_vary)
                elif api:
                    add_vary(response, "Accept")
                status = CLIENT_CLOSED_REQUEST if client_gone(request) else response.status
            except web.HTTPException as exc:  # only redirects get past the error step
                status = exc.status
                exc.headers[REQUEST_ID_HEADER] = request_id
                raise
            except asyncio.CancelledError:  # a handler is cancelled when its client leaves (if so configured)
                if client_gone(request):
                    status = CLIENT_CLOSED_REQUEST
                raise
            response.headers[REQUEST_ID_HEADER] = request_id
            return response
        finally:
            try:
                _record(request, metrics, route_label, lean, status, started)
            finally:
                current_request_id.reset(token)

    return Pipeline(op, steps, run)


# The steps' synchronous parts, in the order `run` calls them: plain functions, so that `run`
# stays the request's one coroutine frame (an awaited helper adds one: bench/README.md, "Pipeline").


def _admit(
    request: web.Request,
    caller: Principal,
    limiter: KeyedLimiter,
    trusted: tuple[Network, ...],
    metrics: GatewayMetrics,
) -> None:
    """Step 5: spend one of the caller's tokens, or refuse with 429 (counted)."""
    retry_after = limiter.acquire(client_identity(request, caller, trusted))
    if retry_after is not None:
        metrics.limited("client")
        request[PRINCIPAL] = caller  # whom the access log names as refused
        raise too_many(retry_after, "requests", limit=limiter.name)


def _negotiate(request: web.Request, refuses_unacceptable: bool) -> ResponseType:
    """Step 6: the representation the Accept header chooses; when it allows none we offer, 406
    if `refuses_unacceptable` (a negotiated operation), else JSON (the lean path)."""
    chosen = choose_response_type(request.headers.get("Accept"))
    if chosen is None:
        if refuses_unacceptable:
            raise not_acceptable()
        chosen = JSON_RESPONSE
    return chosen


def _credential(request: web.Request, api: bool, credential: str | None) -> str:
    """Step 7: the credential to authenticate: none off the API; else the one step 5 read, or
    read now (400 when the headers disagree)."""
    if not api:
        return ""
    return request_credential(request) if credential is None else credential


def _answer_failure(request: web.Request, exc: Exception, cors: dict[str, str]) -> web.StreamResponse:
    """Step 4: the ApiResponse error body for `exc`; a redirect, which the error step raises
    again, leaves with the CORS headers."""
    try:
        return failure_response(request, exc)
    except web.HTTPException as redirect:
        _add_cors(redirect, cors)
        raise


def _finish_headers(
    response: web.StreamResponse,
    origin: str | None,
    api: bool,
    cors: dict[str, str],
    no_origin_extra: dict[str, str],
    no_origin_vary: str,
) -> None:
    """After step 8: the CORS headers, and Vary: Accept on an API answer. The usual case (no
    Origin, an API answer not varying yet) takes the headers precomputed for it, same order."""
    if origin is None and api and response.headers.get("Vary") is None:
        if no_origin_extra:
            response.headers.update(no_origin_extra)
        response.headers["Vary"] = no_origin_vary
    else:
        _add_cors(response, cors)
        if api:
            add_vary(response, "Accept")


def _record(
    request: web.Request,
    metrics: GatewayMetrics,
    route_label: list[str],
    lean: bool,
    status: int,
    started: float,
) -> None:
    """Step 2's end: the request's metrics and its access line (a refusal's names more; a probe's
    2xx is at DEBUG). `route_label` keeps an operation's route template after its first request."""
    elapsed = time.perf_counter() - started
    route = route_label[0] or route_template(request)
    if not lean:  # an operation's route template is the same for all its requests
        route_label[0] = route
    metrics.observe(request.method, route, status, elapsed)
    ms = round(elapsed * 1000, 2)
    if status >= 400:
        log_refusal(request, route, status, ms)
    elif route in PROBES:
        probe_log.write(method=request.method, route=route, status=status, ms=ms)
    else:
        access_log.write(method=request.method, route=route, status=status, ms=ms)


def _unmarked(request: web.Request) -> None:
    """The lean path serves no operation: routing is looked up when asked (operation_of)."""


def _add_cors(response: web.StreamResponse, headers: dict[str, str]) -> None:
    """The CORS headers; their Vary (Origin) beside whatever the answer varies on already."""
    for name, value in headers.items():
        if name == "Vary":
            add_vary(response, value)
        else:
            response.headers[name] = value
