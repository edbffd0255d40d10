"""The absolute URLs the gateway hands out (an uploaded image's, in the pet's photoUrls).

They are stored, and every client that reads the pet follows them, so the host they name must
not be whatever a request says. PUBLIC_BASE_URL names it once for every request. Without it
(development, a single host) the request's own scheme and Host header are used, only when the
Host is a plain host name or address with an optional port: the uploader is staff, and no
X-Forwarded-* header is believed.
"""

from __future__ import annotations

import re

from aiohttp import web

from petstore_gateway.errors import ApiError
from petstore_gateway.keys import SETTINGS

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9.])?"
"""Letters, digits, dots and hyphens (no nested repetition: linear to match)."""
_HOST = re.compile(rf"(?:{_NAME}|\[[0-9A-Fa-f:.]{{2,45}}\])(?::[0-9]{{1,5}})?")
MAX_HOST_CHARS = 255


def public_base_url(request: web.Request) -> str:
    """scheme://host[:port][/prefix], without a trailing slash: where this gateway is reached."""
    configured = request.config_dict[SETTINGS].public_base_url
    if configured:
        return configured
    host = request.headers.get("Host", "")
    if len(host) > MAX_HOST_CHARS or not _HOST.fullmatch(host):
        raise ApiError(400, "the Host header must be a host name or address with an optional port")
    return f"{request.scheme}://{host}"
