"""The Swagger 2.0 description of the API exactly as this gateway serves it, rendered from the
operations' declarations (operations.py, routes/). `openapi.py` derives the OpenAPI 3.0
document from it. What each declaration implies is added here, so no operation states it:

- `security` (and the 401 answer) from its access: the credential as `api_key` or as
  `Authorization: Bearer`, either one; 403 with its staff refusal;
- 400 on every operation: a request whose two credential headers disagree;
- 413 and 415 on every operation that reads a body or a form, 406 on every negotiated one, and
  429 and 503 (both with Retry-After) on every operation (all of them call a service);
  Retry-After on every 409;
- the Idempotency-Key header, 409 and 422 of an idempotent one; the ETag, 304 and If-Match,
  412 of a conditional one.
"""

from __future__ import annotations

from collections.abc import Iterable

from petstore_common.idempotency_keys import MAX_KEY_CHARS
from petstore_gateway.apidoc.schemas import definitions, int32, ref
from petstore_gateway.idempotency import IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER
from petstore_gateway.negotiation import OFFERED
from petstore_gateway.operations import API_PREFIX, JSON, Access, Json, Operation

API_KEY_SCHEME = "api_key"
BEARER_SCHEME = "bearer"
SECURITY: list[dict[str, list[str]]] = [{API_KEY_SCHEME: []}, {BEARER_SCHEME: []}]
"""Either header will do (the alternatives of a security requirement)."""
SECURITY_DEFINITIONS = {
    API_KEY_SCHEME: {
        "type": "apiKey",
        "name": "api_key",
        "in": "header",
        "description": "A static key (PETSTORE_API_KEYS) or the session token GET /user/login returns.",
    },
    # Swagger 2.0 has no bearer scheme: the usual stand-in is an apiKey named Authorization,
    # whose value a client prefixes with "Bearer " (openapi.py turns it into http bearer).
    BEARER_SCHEME: {
        "type": "apiKey",
        "name": "Authorization",
        "in": "header",
        "description": "`Bearer <credential>`: the same static key or session token as api_key. "
        "Send one of the two headers, or both with the same credential.",
    },
}

CREDENTIAL_CONFLICT = "api_key and Authorization: Bearer name different credentials"


def _derived_errors(op: Operation, max_body_bytes: int) -> dict[int, str]:
    errors: dict[int, str] = {400: CREDENTIAL_CONFLICT}
    access = op.access
    if access in (Access.REQUIRED, Access.STAFF):
        errors[401] = "Credential (api_key or Bearer) missing, unknown, expired or logged out"
        if access is Access.STAFF:
            errors[403] = f"Not staff (a static api key): {op.staff_refusal}"
    elif access is Access.OPTIONAL:
        errors[401] = (
            "Credential (api_key or Bearer) sent but unknown, expired or logged out (it may be left out)"
        )
    if op.consumes:
        errors[413] = f"Request body larger than {max_body_bytes} bytes"
        if JSON in op.consumes:
            errors[415] = (
                f"Content-Type not one of {', '.join(op.consumes)} (a body without one is read as JSON)"
            )
        else:
            errors[415] = f"Content-Type missing or not one of {', '.join(op.consumes)}"
    if op.negotiated:  # an image is served whatever Accept says
        offered = ", ".join(t.content_type for t in OFFERED)
        errors[406] = f"Accept allows none of {offered} (the error is then JSON)"
    if op.conditional_write:
        errors[412] = "If-Match names a version that is no longer the stored one, or nothing is stored"
    if op.idempotent:
        errors[409] = "A request with this Idempotency-Key is still being processed"
        errors[422] = "This Idempotency-Key was already used with a different request"
    errors[429] = "Too many requests from this client, or a service at capacity: retry later"
    errors[503] = "A service is unavailable or did not answer in time"
    return errors


IDEMPOTENCY_KEY: Json = {
    "name": IDEMPOTENCY_KEY_HEADER,
    "in": "header",
    "description": "Makes retries safe: the same key with the same body within 24 hours has no second "
    "effect and gets the first answer again. Keys are per caller.",
    "required": False,
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_KEY_CHARS,
    "pattern": "^[!-~]+$",
}
REPLAYED: Json = {
    REPLAYED_HEADER: {
        "type": "string",
        "enum": ["true"],
        "description": "This is the first answer to the key, again",
    }
}


ETAG_HEADER: Json = {
    "ETag": {"type": "string", "description": "A strong tag of this representation (JSON and XML differ)"}
}
IF_MATCH: Json = {
    "name": "If-Match",
    "in": "header",
    "description": "Write only if the stored version is the one this ETag names, else 412; * only "
    "asks that it exist",
    "required": False,
    "type": "string",
}


def _render(op: Operation, max_body_bytes: int) -> Json:
    errors = {**_derived_errors(op, max_body_bytes), **op.errors}
    if 400 in op.errors:
        errors[400] = f"{op.errors[400]}; or {CREDENTIAL_CONFLICT}"
    if op.idempotent and 409 in op.errors:  # both conflicts share the status
        errors[409] = f"{op.errors[409]}, or a request with this Idempotency-Key is still being processed"
    success = op.success
    if op.idempotent:
        success = {**success, "headers": {**success.get("headers", {}), **REPLAYED}}
    if op.conditional_read:
        success = {**success, "headers": {**success.get("headers", {}), **ETAG_HEADER}}
    responses: Json = {"200": success}
    if op.conditional_read:
        responses["304"] = {
            "description": "Not modified: If-None-Match names the current ETag",
            "headers": ETAG_HEADER,
        }
    for status in sorted(errors):
        responses[str(status)] = {"description": errors[status], "schema": ref("ApiResponse")}
    responses["429"]["headers"] = {"Retry-After": int32(minimum=1, description="Seconds to wait")}
    responses["503"]["headers"] = {"Retry-After": int32(minimum=1, description="Seconds to wait")}
    if "409" in responses:
        # Only while another request holds what this one needs: waiting may help.
        retry = int32(minimum=1, description="Seconds to wait, when another request is still running")
        responses["409"]["headers"] = {"Retry-After": retry}
    rendered: Json = {"tags": [op.tag], "summary": op.summary}
    if op.description:
        rendered["description"] = op.description
    rendered["operationId"] = op.operation_id
    if op.consumes:
        rendered["consumes"] = list(op.consumes)
    rendered["produces"] = list(op.produces)
    rendered["parameters"] = [dict(parameter) for parameter in op.parameters]
    if op.idempotent:
        rendered["parameters"].append(dict(IDEMPOTENCY_KEY))
    if op.conditional_write:
        rendered["parameters"].append(dict(IF_MATCH))
    rendered["responses"] = responses
    access = op.access
    if access is not Access.OPEN:
        rendered["security"] = [{name: list(scopes) for name, scopes in r.items()} for r in SECURITY]
        if access is Access.OPTIONAL:
            rendered["security"].append({})  # {}: no credential is fine too
    return rendered


DESCRIPTION = """\
The classic Petstore v2 interface, served by a gateway in front of the pet, order and user \
services.

- JSON or XML both ways: choose the answer with `Accept`, declare a body with `Content-Type`.
- Callers: a static `api_key` is staff; the token `GET /user/login` returns, sent as `api_key`, \
is that customer; no key is anonymous. Anyone reads the catalogue and signs up; only staff \
change the catalogue and manage webhooks; a customer places orders and sees and deletes only \
its own, and reads and changes only its own account (others' accounts show their id and username only). \
`Authorization: Bearer <the same credential>` works wherever `api_key` does; two headers naming \
different credentials are a 400.
- A body without `Content-Type` is read as JSON. Array query parameters may be repeated \
(`status=a&status=b`), comma-separated (`status=a,b`) or indexed (`status[]=a`, `status[0]=a`).
- Every error has one shape, an ApiResponse `{code, type: "error", message}`, except for requests \
the HTTP server cannot read at all: a request line (method, path and query) or a header longer \
than 8190 bytes is refused before it reaches the API, with a plain-text 400.
"""


def build_swagger(operations: Iterable[Operation], *, max_body_bytes: int) -> Json:
    """The whole Swagger 2.0 document of `operations`. No host: clients use the one they
    fetched it from."""
    paths: Json = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _render(op, max_body_bytes)
    return {
        "swagger": "2.0",
        "info": {"title": "Petstore", "version": "1.0.0", "description": DESCRIPTION},
        "basePath": API_PREFIX,
        "tags": [
            {"name": "pet", "description": "Pets, their photos and their status"},
            {"name": "store", "description": "Orders and the inventory"},
            {"name": "user", "description": "Accounts and sessions"},
            {"name": "webhook", "description": "Signed HTTP callbacks of order and pet events (staff)"},
        ],
        "paths": paths,
        "securityDefinitions": {name: dict(scheme) for name, scheme in SECURITY_DEFINITIONS.items()},
        "definitions": definitions(),
    }
