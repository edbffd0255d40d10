"""Path and query parameters as pure functions: ids, multi-valued filters, paging."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from petstore_common.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from petstore_gateway.errors import ApiError

INT64_MAX = 2**63 - 1
NEXT_PAGE_HEADER = "X-Next-Page-Token"
PAGE_TOKEN_PARAM = "pageToken"  # noqa: S105 - a query parameter name, not a secret
LIMIT_PARAM = "limit"

_DIGITS = re.compile(r"[0-9]{1,20}")


def parse_id(raw: str, name: str) -> int:
    """A positive 64-bit integer from a path segment; 400 otherwise ("abc", "1.5", "0", 2^70)."""
    if _DIGITS.fullmatch(raw):
        value = int(raw)
        if 1 <= value <= INT64_MAX:
            return value
    raise ApiError(400, f"Invalid ID supplied: {name} must be a positive 64-bit integer")


def split_values(values: Iterable[str]) -> list[str]:
    """`?status=a,b&status=c` -> [a, b, c]: comma-separated and repeated both work; duplicates and
    blanks dropped, order kept."""
    seen: dict[str, None] = {}
    for value in values:
        for item in value.split(","):
            if item.strip():
                seen.setdefault(item.strip(), None)
    return list(seen)


class Query(Protocol):
    """What `query_values` reads of a query string (aiohttp's `request.query` is one)."""

    def items(self) -> Iterable[tuple[str, str]]: ...


_INDEXED = re.compile(r"\[([0-9]*)\]")
"""The suffix of `name[]` and `name[0]`, the forms PHP, jQuery and qs-style clients send."""


def query_values(query: Query, name: str) -> list[str]:
    """Every value of the array parameter `name` in all the forms clients send, merged:
    `name=a,b`, `name=a&name=b`, `name[]=a&name[]=b` and `name[0]=a&name[1]=b`. Duplicates and
    blanks are dropped, order kept. Any other `name[...` (`name[x]`, `name[0`) is 400."""
    values: list[str] = []
    for key, value in query.items():
        if key == name:
            values.append(value)
        elif key.startswith(name + "["):
            if _INDEXED.fullmatch(key, len(name)) is None:
                # The key itself is not echoed: it is the client's text, control characters and all.
                raise ApiError(
                    400,
                    f"malformed {name}[...] query parameter: send {name}=a,b, "
                    f"{name}=a&{name}=b, {name}[]=a&{name}[]=b or {name}[0]=a&{name}[1]=b",
                )
            values.append(value)
    return split_values(values)


def parse_limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_PAGE_SIZE
    if _DIGITS.fullmatch(raw) and 1 <= int(raw) <= MAX_PAGE_SIZE:
        return int(raw)
    raise ApiError(400, f"{LIMIT_PARAM} must be an integer from 1 to {MAX_PAGE_SIZE}")


def page_request(query: Mapping[str, str]) -> tuple[int, str]:
    """The page size (`limit`) and the `pageToken` of a list request: every list reads them so."""
    return parse_limit(query.get(LIMIT_PARAM)), query.get(PAGE_TOKEN_PARAM, "")


def next_page_headers(next_page_token: str) -> dict[str, str] | None:
    """The header that tells a client more items match, and how to ask for them."""
    return {NEXT_PAGE_HEADER: next_page_token} if next_page_token else None
