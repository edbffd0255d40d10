"""The request id of the call being served, visible to logging anywhere below it."""

from __future__ import annotations

import re
import secrets
from contextvars import ContextVar

REQUEST_ID_METADATA_KEY = "x-request-id"
"""gRPC metadata key (lower case, as gRPC requires) that carries the request id."""

NO_REQUEST_ID = "-"
"""The id logged outside any request (start-up, shutdown)."""

current_request_id: ContextVar[str] = ContextVar("current_request_id", default=NO_REQUEST_ID)

# Ids are echoed into headers and logs: allow only a safe, bounded alphabet.
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def sanitize_request_id(candidate: str | None) -> str:
    """Return the client's id when it is safe to echo, else a fresh one."""
    if candidate and _SAFE_REQUEST_ID.fullmatch(candidate):
        return candidate
    return secrets.token_hex(16)  # uuid4().hex's 128 random bits, without building a UUID
