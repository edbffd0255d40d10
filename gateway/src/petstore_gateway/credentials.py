"""Where a request's credential comes from: the `api_key` header or `Authorization: Bearer`.

Both carry the same credentials (a static key or a session token from login) and are checked
the same way: clients generated from the classic description send the pet writes with an
OAuth2 bearer token and no api_key. A request that names two different credentials is 400:
guessing which one was meant could act for the wrong caller.
"""

from __future__ import annotations

from aiohttp import web

from petstore_gateway.errors import ApiError

API_KEY_HEADER = "api_key"
AUTHORIZATION_HEADER = "Authorization"
BEARER_SCHEME = "bearer"
"""Compared case-insensitively, as every HTTP authentication scheme (RFC 9110, 11.1)."""

_CREDENTIAL = web.RequestKey("credential", str)
"""The request's credential once read ("" when it has none): read once, whoever asks first."""


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` value; None for any other scheme
    (Basic from a proxy, say), which is no credential of ours and is left alone."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != BEARER_SCHEME:
        return None
    return token.strip()


def credentials_in(api_keys: list[str], authorizations: list[str]) -> str:
    """The one credential named by the api_key and Authorization header values ("" for none);
    400 when they name different ones. Empty values name nothing."""
    named = {value.strip() for value in api_keys}
    named.update(token for value in authorizations if (token := bearer_token(value)) is not None)
    named.discard("")
    if len(named) > 1:
        raise ApiError(
            400, "api_key and Authorization: Bearer name different credentials: send one of them, or the same"
        )
    return named.pop() if named else ""


def request_credential(request: web.Request) -> str:
    """The credential of `request` ("" when it sends none); 400 when its headers disagree."""
    found = request.get(_CREDENTIAL)
    if found is None:
        headers = request.headers
        if API_KEY_HEADER not in headers and AUTHORIZATION_HEADER not in headers:
            found = ""  # most reads: nothing to parse
        else:
            found = credentials_in(
                headers.getall(API_KEY_HEADER, []), headers.getall(AUTHORIZATION_HEADER, [])
            )
        request[_CREDENTIAL] = found
    return found
