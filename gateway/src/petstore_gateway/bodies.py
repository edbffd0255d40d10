"""Reading request bodies and writing responses in the negotiated representation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.http import HttpProcessingError
from multidict import MultiDict, MultiDictProxy

from petstore_gateway.auth import ANONYMOUS
from petstore_gateway.body_budget import Tier
from petstore_gateway.client_address import FORWARDED_FOR_HEADER, client_address, forwarded_for
from petstore_gateway.connections import BodyTimedOut
from petstore_gateway.errors import ApiError
from petstore_gateway.etags import ETAG, IF_NONE_MATCH, none_match
from petstore_gateway.keys import BODY_BUDGET, PRINCIPAL, RESPONSE_TYPE, SETTINGS
from petstore_gateway.negotiation import (
    JSON_RESPONSE,
    BodyFormat,
    ResponseType,
    body_format,
    media_type_of,
)
from petstore_gateway.operations import current_operation
from petstore_gateway.representations.api_response import API_RESPONSE, api_response, error_body
from petstore_gateway.representations.pet import MAX_PHOTO_URLS, MAX_TAGS
from petstore_gateway.representations.shapes import (
    Document,
    InvalidRepresentation,
    MalformedBody,
    OversizedStructure,
    StructureBounds,
    decode,
    encode,
)
from petstore_gateway.representations.user import MAX_USERS_PER_REQUEST
from petstore_gateway.representations.webhook import MAX_EVENT_TYPES

T = TypeVar("T")


MAX_BODY_ITEMS = max(MAX_PHOTO_URLS, MAX_TAGS, MAX_USERS_PER_REQUEST, MAX_EVENT_TYPES)
"""The longest list a valid body holds (createWithArray's users); objects have far fewer members."""
BODY_BOUNDS = StructureBounds(
    # Twice the deepest document (Pet > tags > tag > name is 4 levels), for the extras classic
    # clients send.
    max_depth=8,
    # Twice the longest valid list: one just too long still gets its own, more precise 400.
    max_items=2 * MAX_BODY_ITEMS,
    # The longest valid list, each item with up to 16 values or elements (a user has 9).
    max_values=16 * MAX_BODY_ITEMS,
)
MAX_FORM_FIELDS = 8
"""Fields in a form (aiohttp's client_max_fields): the classic forms have two each."""
UNDECLARED_IS_JSON = "a body without Content-Type is read as JSON (declare application/xml for XML)"
PARSE_OFF_LOOP_BYTES = 64 * 1024
"""Bodies longer than this are parsed in a worker thread; within the bounds, shorter ones parse
in well under a millisecond (measured: 1 MiB of the costliest shapes takes 2 to 20 ms)."""


def _timed_out(exc: BodyTimedOut) -> ApiError:
    return ApiError(408, f"request body timed out: {exc}")


def _share(request: web.Request) -> tuple[Tier, str]:
    """Whose share of the body budget (body_budget.py) a body takes: by who calls and from where."""
    principal = request.get(PRINCIPAL, ANONYMOUS)
    if principal.is_staff:
        tier = Tier.STAFF
    elif principal.user_id is not None:
        tier = Tier.CUSTOMER
    else:
        tier = Tier.ANONYMOUS
    trusted = request.config_dict[SETTINGS].trusted_proxies
    forwarded = forwarded_for(request.headers.getall(FORWARDED_FOR_HEADER, ()))
    return tier, client_address(request.remote, forwarded, trusted)


def _reserve(request: web.Request) -> contextlib.AbstractContextManager[None]:
    """A form's declared length, held from the budget while aiohttp reads it."""
    tier, address = _share(request)
    return request.config_dict[BODY_BUDGET].reserve(request.content_length, tier=tier, address=address)


async def _read_holding(request: web.Request, hold: Callable[[int], None]) -> bytes:
    """The body, each chunk held from the budget (`hold`) as it arrives, so a body that trickles
    in holds only what has come. 413 past the body limit, declared or sent."""
    limit = request.client_max_size
    declared = request.content_length
    if declared is not None and declared > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=declared)
    body = bytearray()
    while chunk := await request.content.readany():
        if len(body) + len(chunk) > limit:
            raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=len(body) + len(chunk))
        hold(len(chunk))
        body += chunk
    return bytes(body)


def _decode(raw: bytes, fmt: BodyFormat, document: Document) -> Any:
    return decode(raw, fmt, document, BODY_BOUNDS)


async def read_body(
    request: web.Request,
    document: Document,
    convert: Callable[[Any], T],
) -> T:
    """Parse the body as `document` and convert it.

    400 when absent or unparseable, 415 for an unsupported Content-Type, 413 when larger than
    the limit, and the operation's invalid_input_status when it parses but has the wrong
    shape. A body without a Content-Type is read as JSON: generated clients send one so
    wherever the classic description lists no media type.
    """
    invalid_status = current_operation(request).invalid_input_status
    if not request.body_exists:
        raise ApiError(400, "a request body is required")
    declared = request.headers.get("Content-Type")
    undeclared = not media_type_of(declared)
    fmt = BodyFormat.JSON if undeclared else body_format(declared)
    tier, address = _share(request)
    # The bytes stay held while they are parsed too (parsing holds several times them).
    with request.config_dict[BODY_BUDGET].holding(tier=tier, address=address) as hold:
        try:
            raw = await _read_holding(request, hold)
        except web.RequestPayloadError:  # e.g. a Content-Encoding the bytes do not follow
            raise ApiError(400, "request body could not be read") from None
        except BodyTimedOut as exc:
            raise _timed_out(exc) from None
        if not raw.strip():
            raise ApiError(400, "a request body is required")
        try:
            if len(raw) > PARSE_OFF_LOOP_BYTES:
                wire = await asyncio.to_thread(_decode, raw, fmt, document)
            else:
                wire = _decode(raw, fmt, document)
        except OversizedStructure as exc:
            raise ApiError(413, str(exc)) from None
        except MalformedBody as exc:
            if undeclared:
                raise ApiError(400, f"{exc}; {UNDECLARED_IS_JSON}") from None
            raise ApiError(400, str(exc)) from None
        except InvalidRepresentation as exc:  # an XML root element that is not the document's
            raise ApiError(invalid_status, str(exc)) from None
    try:
        return convert(wire)
    except InvalidRepresentation as exc:
        raise ApiError(invalid_status, str(exc)) from None


async def read_form(request: web.Request) -> MultiDictProxy[Any]:
    """Form fields, in a media type the operation consumes (urlencoded or multipart; multipart
    file parts stay in memory up to the limit)."""
    if not request.body_exists:
        return MultiDictProxy(MultiDict())
    media_type = media_type_of(request.headers.get("Content-Type"))
    allowed = current_operation(request).consumes
    if media_type not in allowed:
        raise ApiError(415, f"Content-Type must be {' or '.join(sorted(allowed))}")
    try:
        with _reserve(request):
            return await request.post()
    except BodyTimedOut as exc:
        raise _timed_out(exc) from None
    except web.HTTPRequestEntityTooLarge as exc:
        if "form fields" in (exc.text or ""):  # aiohttp also counts fields (client_max_fields)
            raise ApiError(413, f"a form may have at most {request.client_max_fields} fields") from None
        raise  # over client_max_size: the usual 413
    except web.HTTPException:
        raise
    except web.RequestPayloadError:
        raise ApiError(400, "request body could not be read") from None
    # LookupError: a charset Python does not know, on the form or on one of its parts;
    # HttpProcessingError: a part's headers aiohttp cannot parse (a NUL in a file name).
    except (ValueError, UnicodeDecodeError, AssertionError, LookupError, HttpProcessingError):
        raise ApiError(400, "request body is not a valid form") from None


def utf8_text(value: str, what: str) -> str:
    """`value` if it is text; header-borne values (a part's file name, its Content-Type) carry
    bytes that were not UTF-8 as surrogates, which no protobuf string can hold: 400."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, f"{what} must be UTF-8 text") from None
    return value


def response_type(request: web.Request) -> ResponseType:
    chosen: ResponseType = request.get(RESPONSE_TYPE, JSON_RESPONSE)
    return chosen


def render(
    value: Any,
    document: Document,
    response_type: ResponseType,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    response = web.Response(
        body=encode(value, response_type.format, document), status=status, headers=headers
    )
    response.content_type = response_type.content_type
    if response_type.content_type != JSON_RESPONSE.content_type:
        response.charset = "utf-8"
    return response


def respond(
    request: web.Request, value: Any, document: Document, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    """200 with `value` as `document` in the representation the client asked for."""
    return render(value, document, response_type(request), headers=headers)


def content_type_header(response_type: ResponseType) -> str:
    if response_type.format is BodyFormat.JSON:
        return response_type.content_type
    return f"{response_type.content_type}; charset=utf-8"


def respond_entity(
    request: web.Request,
    body: bytes,
    etag: str,
    *,
    conditional: bool = True,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """200 with an already encoded representation and its ETag; for a `conditional` read
    (GET), 304 without a body when If-None-Match names the tag the client already holds."""
    if conditional and none_match(request.headers.get(IF_NONE_MATCH), etag):
        return web.Response(status=304, headers={ETAG: etag})
    all_headers = {"Content-Type": content_type_header(response_type(request)), ETAG: etag}
    if headers:
        all_headers.update(headers)
    return web.Response(body=body, headers=all_headers)


def respond_message(
    request: web.Request, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    """200 with the classic success ApiResponse {code: 200, type: "unknown", message}."""
    return respond(request, api_response(200, message), API_RESPONSE, headers=headers)


def error_response(
    status: int, message: str, response_type: ResponseType, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    return render(error_body(status, message), API_RESPONSE, response_type, status=status, headers=headers)
