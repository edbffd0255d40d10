"""The absolute URLs the gateway hands out (an uploaded image's, in the pet's photoUrls).

They are stored, and every client that reads the pet follows them, so the host they name must
not be whatever a request says. In order:

1. PUBLIC_BASE_URL, when set, names it for every request (what a deployment should set).
2. From a trusted proxy (TRUSTED_PROXIES, e.g. the TLS terminator), what it says it was
   reached as: X-Forwarded-Proto and X-Forwarded-Host, else the proto and host of Forwarded
   (RFC 7239). Of a list, the last value is taken: the one the proxy itself wrote, not one a
   client sent it. Each header left out falls back to the request's own.
3. Otherwise the request's own scheme and Host header; X-Forwarded-* and Forwarded from any
   other peer are ignored.

The host must be a plain host name or address with an optional port, the scheme http or https
(else 400); the scheme's default port (:443 for https, :80 for http) is dropped, so the same
place is one URL. The uploader is staff; the proxy must write (or strip) the headers it is
believed for.
"""

from __future__ import annotations

import re

from aiohttp import web

from petstore_gateway.client_address import is_trusted
from petstore_gateway.errors import ApiError
from petstore_gateway.keys import SETTINGS

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9.])?"
"""Letters, digits, dots and hyphens (no nested repetition: linear to match)."""
_HOST = re.compile(rf"(?P<name>{_NAME}|\[[0-9A-Fa-f:.]{{2,45}}\])(?::(?P<port>[0-9]{{1,5}}))?")
MAX_HOST_CHARS = 255
DEFAULT_PORTS = {"http": 80, "https": 443}
"""The schemes a public URL may have, each with the port it leaves unsaid."""

FORWARDED_PROTO_HEADER = "X-Forwarded-Proto"
FORWARDED_HOST_HEADER = "X-Forwarded-Host"


def public_base_url(request: web.Request) -> str:
    """scheme://host[:port][/prefix], without a trailing slash: where this gateway is reached."""
    settings = request.config_dict[SETTINGS]
    if settings.public_base_url:
        return settings.public_base_url
    scheme, host, named_by = request.scheme, request.headers.get("Host", ""), "the Host header"
    if is_trusted(request.remote or "", settings.trusted_proxies):
        scheme, host, named_by = _as_forwarded(request, scheme, host, named_by)
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ApiError(400, f"{FORWARDED_PROTO_HEADER} (or Forwarded proto) must be http or https")
    matched = _HOST.fullmatch(host) if len(host) <= MAX_HOST_CHARS else None
    if matched is None:
        raise ApiError(400, f"{named_by} must be a host name or address with an optional port")
    port = matched["port"]
    if port is not None and int(port) == DEFAULT_PORTS[scheme]:
        host = matched["name"]
    return f"{scheme}://{host}"


def _as_forwarded(request: web.Request, scheme: str, host: str, named_by: str) -> tuple[str, str, str]:
    """The scheme and host a trusted proxy says the client reached it at (each header missing:
    the request's own), and which header named the host."""
    forwarded = request.forwarded[-1] if request.forwarded else {}
    proto = _last(request, FORWARDED_PROTO_HEADER) or forwarded.get("proto") or scheme
    named = _last(request, FORWARDED_HOST_HEADER)
    if named:
        return proto, named, FORWARDED_HOST_HEADER
    if forwarded.get("host"):
        return proto, forwarded["host"], "Forwarded host"
    return proto, host, named_by


def _last(request: web.Request, header: str) -> str:
    """The last value of a header's comma-separated list, across all its lines ("" if none)."""
    values = request.headers.getall(header, ())
    return values[-1].rsplit(",", 1)[-1].strip() if values else ""
