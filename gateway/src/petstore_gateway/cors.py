"""CORS for browser clients, as pure functions (the CORS step is in pipeline.py).

No credentials are involved (api_key and Authorization are headers, not cookies), so "*" is safe as the
default. With a list of origins the matching one is echoed and `Vary: Origin` keeps caches
from serving one origin's answer to another.
"""

from __future__ import annotations

from collections.abc import Iterable

from petstore_gateway.credentials import API_KEY_HEADER, AUTHORIZATION_HEADER
from petstore_gateway.etags import ETAG, IF_MATCH, IF_NONE_MATCH
from petstore_gateway.idempotency import IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER
from petstore_gateway.params import NEXT_PAGE_HEADER
from petstore_gateway.settings import ANY_ORIGIN

ALLOW_HEADERS = (
    API_KEY_HEADER,
    AUTHORIZATION_HEADER,
    "Content-Type",
    "Accept",
    "X-Request-ID",
    IDEMPOTENCY_KEY_HEADER,
    IF_MATCH,
    IF_NONE_MATCH,
)
"""Request headers a browser may send cross-origin (Content-Type: JSON and XML are not "simple";
the credentials and the conditional and idempotent requests' headers never are). A test checks
that every header parameter the API description declares is here."""
EXPOSE_HEADERS = (
    "X-Request-ID",
    ETAG,
    NEXT_PAGE_HEADER,
    "X-Rate-Limit",
    "X-Expires-After",
    "Retry-After",
    REPLAYED_HEADER,
)
"""Response headers a cross-origin script may read (beyond the CORS-safelisted ones); a test
checks that every response header the API description declares is here."""
MAX_AGE_SECONDS = 600
"""How long a browser may reuse a preflight answer (browsers cap it at 2 hours or less)."""


def allowed_origin(origin: str | None, allowed: tuple[str, ...]) -> str | None:
    """The Access-Control-Allow-Origin value for a request from `origin`, or None (no CORS)."""
    if not origin or not allowed:
        return None
    if ANY_ORIGIN in allowed:
        return ANY_ORIGIN
    return origin if origin in allowed else None


def _base(origin: str | None, allowed: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    if allowed and ANY_ORIGIN not in allowed:
        headers["Vary"] = "Origin"
    value = allowed_origin(origin, allowed)
    if value is not None:
        headers["Access-Control-Allow-Origin"] = value
    return headers


def response_headers(origin: str | None, allowed: tuple[str, ...]) -> dict[str, str]:
    """What every answer (success or error) carries."""
    headers = _base(origin, allowed)
    if "Access-Control-Allow-Origin" in headers:
        headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSE_HEADERS)
    return headers


def preflight_headers(origin: str | None, allowed: tuple[str, ...], methods: Iterable[str]) -> dict[str, str]:
    """The answer to OPTIONS on a route: Allow always, the CORS grant when the origin may call."""
    listed = ", ".join(sorted({*methods, "OPTIONS"}))
    headers = {"Allow": listed, **_base(origin, allowed)}
    if "Access-Control-Allow-Origin" in headers:
        headers.update(
            {
                "Access-Control-Allow-Methods": listed,
                "Access-Control-Allow-Headers": ", ".join(ALLOW_HEADERS),
                "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
            }
        )
    return headers
