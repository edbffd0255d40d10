"""Lists in id order, a page at a time: the page size rule and the page tokens, opaque to
clients, carrying the last id and the filter they belong to. Every list RPC uses these."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable

from petstore_common.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
_VERSION = "v1"
_INVALID = "pageToken is invalid"
_MAX_ID = 2**63 - 1


def page_size(requested: int) -> int:
    """The server's default when zero, its cap when larger."""
    if requested < 0:
        raise InvalidArgument("limit must not be negative")
    if requested == 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


def filter_fingerprint(*filters: Iterable[int | str]) -> str:
    """A short digest of the filter (each part a set of values), so a token is not replayed
    against another query."""
    canonical = repr(tuple(sorted(set(values)) for values in filters))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_page_token(last_id: int, fingerprint: str) -> str:
    raw = f"{_VERSION}:{last_id}:{fingerprint}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, fingerprint: str) -> int:
    """The last id a previous page returned (0 for the first page); InvalidArgument if forged."""
    if not token:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        version, last_id_text, token_fingerprint = raw.split(":")
        last_id = int(last_id_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument(_INVALID) from None
    if version != _VERSION or not last_id_text.isdigit() or not 0 < last_id <= _MAX_ID:
        raise InvalidArgument(_INVALID)
    if token_fingerprint != fingerprint:
        raise InvalidArgument("pageToken does not belong to this filter")
    return last_id
