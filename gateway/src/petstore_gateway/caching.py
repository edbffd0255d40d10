"""What caches may keep, and the headers every answer of the app carries.

An answer depends on who asks when its operation reads the credential (its access is not
OPEN) or it is an error (a 401, a 400 for conflicting credentials and a 429 spent from the
caller's budget all turn on the credential; no error is worth keeping). Those answers say
`Cache-Control: no-store` and `Vary` names the credential headers. An operation declared
private (login, logout) is OPEN but never stored either. Everything else (the catalogue with
its ETags, the images, the docs) keeps the caching its handler gave it.
"""

from __future__ import annotations

from aiohttp import hdrs, web, web_response

from petstore_gateway.credentials import API_KEY_HEADER, AUTHORIZATION_HEADER
from petstore_gateway.operations import Access, operation_of

SERVER_NAME = "petstore"
"""The Server header: no product version for anybody to look up."""
NO_STORE = "no-store"
CREDENTIAL_HEADERS = (API_KEY_HEADER, AUTHORIZATION_HEADER)


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
    """The answer turns on the credential sent: its operation reads one, or it is an error."""
    if status >= 400:
        return True
    op = operation_of(request)
    return op is not None and op.access is not Access.OPEN


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """A signal rather than a middleware: it sees every answer of the app (raised redirects,
    file responses, the 304s) just before its headers are written."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    private = depends_on_caller(request, response.status)
    if private:
        add_vary(response, *CREDENTIAL_HEADERS)
    op = operation_of(request)
    if private or (op is not None and op.private):
        response.headers[hdrs.CACHE_CONTROL] = NO_STORE
