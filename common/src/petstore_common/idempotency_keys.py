"""What the gateway and the services share about Idempotency-Keys: their format and how long a
dead request's key stays blocked. Apart from the record store (petstore_common.idempotency,
which needs the database driver), so the gateway imports no storage code."""

from __future__ import annotations

from petstore_common.errors import InvalidArgument

LEASE_SECONDS = 1.0
"""How long a request holds its key past its last renewal: how long a key stays blocked after
its request died without a word (its process killed, its database gone as it died)."""
MAX_KEY_CHARS = 255
KEY_RULE = f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} characters of visible ASCII"


def is_valid_key(key: str) -> bool:
    """1 to 255 characters of visible ASCII (RFC 8941 tokens and UUIDs fit)."""
    return 0 < len(key) <= MAX_KEY_CHARS and all("!" <= char <= "~" for char in key)


def check_key(key: str) -> str:
    if not is_valid_key(key):
        raise InvalidArgument(KEY_RULE)
    return key
