"""What caches may keep, and the headers every answer of the app carries.

An answer depends on who asks when its route reads the credential (access.py: not OPEN) or it
is an error (a 401, a 400 for conflicting credentials and a 429 spent from the caller's budget
all turn on the credential; no error is worth keeping). Those answers say `Cache-Control:
no-store` and `Vary` names the credential headers. The login and logout answers are OPEN but
private too. Everything else (the catalogue with its ETags, the images, the docs) keeps the
caching its handler gave it.
"""

from __future__ import annotations

from aiohttp import hdrs, web, web_response

from petstore_gateway.access import Access, access_of
from petstore_gateway.credentials import API_KEY_HEADER, AUTHORIZATION_HEADER
from petstore_gateway.metrics import route_template

SERVER_NAME = "petstore"
"""The Server header: no product version for anybody to look up."""
NO_STORE = "no-store"
CREDENTIAL_HEADERS = (API_KEY_HEADER, AUTHORIZATION_HEADER)
PRIVATE_OPEN_ROUTES = frozenset({"/v2/user/login", "/v2/user/logout"})
"""OPEN (no credential is read) yet never stored: login answers with a session token, and a
logout served from a cache would leave the session open."""


def install(app: web.Application) -> None:
    """The headers of this module on every answer of `app`."""
    # aiohttp sets `Server: Python/3.x aiohttp/3.x` unless the answer has one (read at each
    # answer), also on its own 400 to a request it cannot parse, which no signal of the app
    # sees: its default is the one place that covers every answer.
    web_response.SERVER_SOFTWARE = SERVER_NAME  # type: ignore[attr-defined]  # imported there, not exported
    app.on_response_prepare.append(on_response_prepare)


def add_vary(response: web.StreamResponse, *fields: str) -> None:
    """Name `fields` in Vary, keeping what is there already (RFC 9110, 12.5.5)."""
    current = response.headers.get(hdrs.VARY, "")
    named = {field.strip().lower() for field in current.split(",") if field.strip()}
    missing = [field for field in fields if field.lower() not in named]
    if missing:
        response.headers[hdrs.VARY] = ", ".join(filter(None, (current, *missing)))


def depends_on_caller(request: web.Request, status: int) -> bool:
    """The answer turns on the credential sent: its route reads one, or it is an error."""
    return status >= 400 or access_of(request.method, route_template(request)) is not Access.OPEN


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """A signal rather than a middleware: it sees every answer of the app (raised redirects,
    file responses, the 304s) just before its headers are written."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    private = depends_on_caller(request, response.status)
    if private:
        add_vary(response, *CREDENTIAL_HEADERS)
    if private or route_template(request) in PRIVATE_OPEN_ROUTES:
        response.headers[hdrs.CACHE_CONTROL] = NO_STORE
