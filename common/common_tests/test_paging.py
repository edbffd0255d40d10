"""Page tokens: opaque round trips, and forged or foreign tokens are refused."""

from __future__ import annotations

import base64

import pytest

from petstore_common.errors import InvalidArgument
from petstore_common.paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    decode_page_token,
    encode_page_token,
    filter_fingerprint,
    page_size,
)

SOLD = 3
PENDING = 2


def _raw(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def test_a_token_carries_the_last_id_back() -> None:
    fingerprint = filter_fingerprint([SOLD], ["a"])

    token = encode_page_token(2**63 - 1, fingerprint)

    assert str(2**63 - 1) not in token  # opaque, not the bare id
    assert decode_page_token(token, fingerprint) == 2**63 - 1


def test_no_token_starts_at_the_beginning() -> None:
    assert decode_page_token("", filter_fingerprint([SOLD], [])) == 0


def test_the_fingerprint_ignores_order_and_repeats() -> None:
    assert filter_fingerprint([SOLD, PENDING], ["b", "a"]) == filter_fingerprint(
        [PENDING, SOLD, SOLD], ["a", "b"]
    )
    assert filter_fingerprint([SOLD], []) != filter_fingerprint([], ["3"])


@pytest.mark.parametrize(
    "token",
    [
        "not a token",
        "%%%",
        "é",
        _raw("v1:abc:0123"),
        _raw("v1:0:0123"),
        _raw("v1:-4:0123"),
        _raw("v1:+4:0123"),
        _raw(f"v1:{2**63}:0123"),
        _raw("v2:4:0123"),
        _raw("v1:4"),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_malformed_tokens_are_invalid(token: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^pageToken is invalid$"):
        decode_page_token(token, "0123")


def test_a_token_of_another_filter_is_invalid() -> None:
    token = encode_page_token(5, filter_fingerprint([SOLD], []))

    with pytest.raises(InvalidArgument, match=r"^pageToken does not belong to this filter$"):
        decode_page_token(token, filter_fingerprint([PENDING], []))


def test_the_page_size_has_a_default_and_a_cap() -> None:
    assert page_size(0) == DEFAULT_PAGE_SIZE
    assert page_size(7) == 7
    assert page_size(MAX_PAGE_SIZE + 1) == MAX_PAGE_SIZE
    with pytest.raises(InvalidArgument, match="limit must not be negative"):
        page_size(-1)


def test_the_fingerprint_keeps_its_parts_apart() -> None:
    assert filter_fingerprint([1], [], [2]) != filter_fingerprint([1], [2], [])
