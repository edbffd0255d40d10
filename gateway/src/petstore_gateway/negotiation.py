"""Content negotiation as pure functions: which format to answer in, which format a body is in."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from petstore_gateway.errors import ApiError


class BodyFormat(enum.Enum):
    JSON = "json"
    XML = "xml"


@dataclass(frozen=True, slots=True)
class ResponseType:
    format: BodyFormat
    content_type: str


JSON_RESPONSE = ResponseType(BodyFormat.JSON, "application/json")
XML_RESPONSE = ResponseType(BodyFormat.XML, "application/xml")
TEXT_XML_RESPONSE = ResponseType(BodyFormat.XML, "text/xml")

# What we produce, in our order of preference when the client does not mind.
OFFERED: tuple[ResponseType, ...] = (JSON_RESPONSE, XML_RESPONSE, TEXT_XML_RESPONSE)

BODY_FORMATS = {
    "application/json": BodyFormat.JSON,
    "application/xml": BodyFormat.XML,
    "text/xml": BodyFormat.XML,
}


@dataclass(frozen=True, slots=True)
class _MediaRange:
    type: str
    subtype: str
    q: float
    position: int

    def specificity(self, content_type: str) -> int:
        """How precisely this range names `content_type`: 0 = not at all, 3 = exactly."""
        main, sub = content_type.split("/", 1)
        if self.type == "*":
            return 1 if self.subtype == "*" else 0
        if self.type != main:
            return 0
        if self.subtype == "*":
            return 2
        return 3 if self.subtype == sub else 0


def _parse_accept(accept: str) -> list[_MediaRange]:
    ranges: list[_MediaRange] = []
    for position, item in enumerate(accept.split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        if media.count("/") != 1:
            continue  # not a media range: ignore it rather than fail the request
        main, sub = (piece.strip().lower() for piece in media.split("/"))
        if not main or not sub or (main == "*" and sub != "*"):
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = -1.0
        if not 0.0 <= q <= 1.0:
            continue
        ranges.append(_MediaRange(main, sub, q, position))
    return ranges


MEMO_MAX_ACCEPT_LENGTH = 256
"""Accept values up to this long have their answer remembered (clients send a handful of
distinct ones, and parsing one cost about 5 % of a cached read's gateway CPU); longer ones,
which only odd clients send, are parsed each time so the memo stays small."""


def choose_response_type(accept: str | None) -> ResponseType | None:
    """The representation to answer with, or None when the client accepts none we offer (406)."""
    if accept is None or len(accept) > MEMO_MAX_ACCEPT_LENGTH:
        return _choose_response_type(accept)
    return _remembered_choice(accept)


@functools.lru_cache(maxsize=512)
def _remembered_choice(accept: str) -> ResponseType | None:
    return _choose_response_type(accept)


def _choose_response_type(accept: str | None) -> ResponseType | None:
    """The representation to answer with, or None when the client accepts none we offer (406).

    A missing Accept, or one with no usable media range, means JSON. Per RFC 9110 the most
    specific range decides each type's quality; ties go to the more specific match, then to
    the range the client listed first, then to JSON.
    """
    ranges = _parse_accept(accept or "")
    if not ranges:
        return JSON_RESPONSE
    best: tuple[float, int, int, int] | None = None
    chosen: ResponseType | None = None
    for preference, offered in enumerate(OFFERED):
        matches = [(r.specificity(offered.content_type), r) for r in ranges]
        matches = [(s, r) for s, r in matches if s > 0]
        if not matches:
            continue
        specificity, decisive = max(matches, key=lambda m: (m[0], -m[1].position))
        if decisive.q <= 0:
            continue
        score = (decisive.q, specificity, -decisive.position, -preference)
        if best is None or score > best:
            best, chosen = score, offered
    return chosen


def not_acceptable() -> ApiError:
    offered = ", ".join(t.content_type for t in OFFERED)
    return ApiError(406, f"cannot answer in any media type the Accept header allows; offered: {offered}")


def media_type_of(content_type: str | None) -> str:
    """The bare, lower-case media type of a Content-Type header ("" when absent)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def body_format(content_type: str | None) -> BodyFormat:
    """The format of a request body by its Content-Type; 415 when missing or unsupported.

    Parameters such as charset are tolerated: JSON must be UTF-8 anyway, and XML declares
    its own encoding.
    """
    media_type = media_type_of(content_type)
    if not media_type:
        raise ApiError(415, "Content-Type is required: application/json or application/xml")
    found = BODY_FORMATS.get(media_type)
    if found is None:
        raise ApiError(415, "unsupported Content-Type: use application/json or application/xml")
    return found
