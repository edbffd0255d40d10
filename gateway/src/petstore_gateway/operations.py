"""The API's operations, each declared once, beside its handler (routes/): method and path, who
may call it, what body it reads, whether it is idempotent or conditional, how the services'
statuses map for it, and what the API description says of it.

Everything else is made from these declarations: the routes of the /v2 sub-application
(`api_app`), the access check and the status mapping (looked up for each request with
`operation_of`), what caches may keep (caching.py) and both API descriptions (apidoc/).
Which object a caller may read or change (its own orders, its own account) is decided by the
service that owns it, from the Caller it receives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

import grpc
from aiohttp import web
from aiohttp.typedefs import Handler

from petstore_gateway.errors import NO_OVERRIDES, Overrides, http_status_for
from petstore_gateway.idempotency import KEY_REUSED_IS_422
from petstore_gateway.negotiation import JSON_RESPONSE, XML_RESPONSE

API_PREFIX = "/v2"
"""Where the API is mounted: every operation's path is under it."""

JSON = JSON_RESPONSE.content_type
XML = XML_RESPONSE.content_type
BODY_MEDIA_TYPES = (JSON, XML)
"""What bodies are read as and answers are written in (negotiated)."""
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"

PRECONDITION_FAILED_IS_412: Overrides = MappingProxyType(
    {grpc.StatusCode.FAILED_PRECONDITION: 412, grpc.StatusCode.NOT_FOUND: 412}
)
"""With If-Match, a version that moved on, or nothing stored at all, fails the precondition
(RFC 9110, 13.1.1)."""

Json = dict[str, Any]


class Access(Enum):
    """Who may call an operation, by kind of caller: applied by the auth step (pipeline.py) before a
    body is read, and the source of each operation's `security`, 401 and 403 in the description."""

    OPEN = "open"
    """The credential is not read: everybody is served alike (the catalogue, login, logout)."""
    OPTIONAL = "optional"
    """Anonymous without a credential; a credential that is sent must be valid (401 if not)."""
    REQUIRED = "required"
    """401 without a valid credential."""
    STAFF = "staff"
    """401 without a valid credential, 403 unless it is a static key."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Operation:
    method: str
    """Upper case; a GET also answers HEAD."""
    path: str
    """Under API_PREFIX, e.g. /pet/{petId}."""
    operation_id: str
    tag: str
    summary: str
    handler: Handler
    access: Access
    staff_refusal: str = ""
    """What anybody but staff is told (403): required of, and only of, a STAFF operation."""
    consumes: tuple[str, ...] = ()
    """The media types of the body or form it reads (none: it reads none)."""
    idempotent: bool = False
    """Takes an Idempotency-Key (a create): a key reused for another request is a 422."""
    conditional_read: bool = False
    """Answers with an ETag and honours If-None-Match (304)."""
    conditional_write: bool = False
    """Honours If-Match: with it, a precondition that fails is a 412."""
    private: bool = False
    """Never stored by a cache although OPEN (login hands out a session; a cached logout ends none)."""
    overrides: Overrides = field(default_factory=lambda: NO_OVERRIDES)
    """Where this operation answers a service's status other than errors.GRPC_TO_HTTP does."""
    produces: tuple[str, ...] = BODY_MEDIA_TYPES
    """What its answers may be: negotiated (JSON or XML by Accept), or an image's own type."""
    # What the API description says beyond the above (apidoc/swagger.py renders it, adding
    # every status and header the fields above imply).
    success: Json
    errors: Mapping[int, str] = field(default_factory=dict)
    """The statuses particular to the operation, with what they mean."""
    parameters: tuple[Json, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if (self.access is Access.STAFF) != bool(self.staff_refusal):
            raise ValueError(f"{self.operation_id}: a staff_refusal goes with, and only with, Access.STAFF")

    @property
    def negotiated(self) -> bool:
        """Answers in JSON or XML as Accept asks: 406 when it allows neither."""
        return self.produces == BODY_MEDIA_TYPES

    @property
    def invalid_input_status(self) -> int:
        """The status of input that fails validation (the classic pet operations say 405)."""
        return http_status_for(grpc.StatusCode.INVALID_ARGUMENT, self.overrides)

    def status_overrides(self, *, if_match: bool) -> Overrides:
        """Its overrides, with those its kind implies (idempotent; conditional with If-Match sent)."""
        overrides = dict(self.overrides)
        if self.idempotent:
            overrides.update(KEY_REUSED_IS_422)
        if self.conditional_write and if_match:
            overrides.update(PRECONDITION_FAILED_IS_412)
        return overrides


OPERATION_OF_ROUTE = web.AppKey("operation_of_route", dict[web.AbstractRoute, Operation])
"""Set on the API's sub-application (and only there): which operation each of its routes serves."""


def api_app(
    operations: Iterable[Operation], wrap: Callable[[Operation], Handler] = lambda op: op.handler
) -> web.Application:
    """The sub-application serving `operations`, to be mounted at API_PREFIX; it knows the
    operation of each of its routes (a GET's HEAD route too). Each route's handler is
    `wrap(op)`: create_app wraps each handler in the operation's request pipeline (pipeline.py)."""
    api = web.Application()
    routes: dict[web.AbstractRoute, Operation] = {}
    for op in operations:
        resource = api.router.add_resource(op.path)
        handler = wrap(op)
        if op.method == "GET":
            routes[resource.add_route("HEAD", handler)] = op
        routes[resource.add_route(op.method, handler)] = op
    api[OPERATION_OF_ROUTE] = routes
    return api


@dataclass(frozen=True, slots=True)
class _Routed:
    operation: Operation | None
    in_api: bool


_ROUTED = web.RequestKey("routed", _Routed)
"""What routing made of the request, looked up once (several middlewares, a signal and the
handler ask)."""


def _routed(request: web.Request) -> _Routed:
    routed = request.get(_ROUTED)
    if routed is None:
        innermost = request.match_info.apps[-1]  # the API's, when the path is under API_PREFIX
        operations = innermost.get(OPERATION_OF_ROUTE)
        if operations is None:
            routed = _Routed(None, in_api=False)
        else:
            routed = _Routed(operations.get(request.match_info.route), in_api=True)
        request[_ROUTED] = routed
    return routed


def routed_marker(op: Operation) -> Callable[[web.Request], None]:
    """What records that `op` serves a request, for its pipeline, which knows without a look-up."""
    routed = _Routed(op, in_api=True)

    def mark(request: web.Request) -> None:
        request[_ROUTED] = routed

    return mark


def operation_of(request: web.Request) -> Operation | None:
    """The operation the request was routed to (None: a 404 or 405, the docs, a probe)."""
    return _routed(request).operation


def current_operation(request: web.Request) -> Operation:
    """The operation whose handler is running."""
    op = operation_of(request)
    if op is None:
        raise LookupError(f"no operation is routed to {request.method} {request.path}")
    return op


def in_api(request: web.Request) -> bool:
    """The request is for the API (under API_PREFIX), whether or not a route matched it."""
    return _routed(request).in_api
