from __future__ import annotations

import pytest

from petstore_gateway.errors import ApiError
from petstore_gateway.params import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, parse_id, parse_limit, split_values


@pytest.mark.parametrize(("raw", "expected"), [("1", 1), ("42", 42), ("007", 7), (str(2**63 - 1), 2**63 - 1)])
def test_ids_are_positive_64_bit_integers(raw: str, expected: int) -> None:
    assert parse_id(raw, "petId") == expected


@pytest.mark.parametrize("raw", ["abc", "1.5", "0", "-1", "+1", str(2**63), str(2**70), "", " 1", "\u0661"])
def test_other_ids_are_400(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_id(raw, "petId")
    assert caught.value.status == 400
    assert "petId" in caught.value.message


def test_values_split_on_commas_and_repeats_without_duplicates() -> None:
    assert split_values(["available,pending", "sold", "pending", " ,"]) == ["available", "pending", "sold"]


def test_limit_defaults_and_bounds() -> None:
    assert parse_limit(None) == DEFAULT_PAGE_SIZE
    assert parse_limit("") == DEFAULT_PAGE_SIZE
    assert parse_limit(str(MAX_PAGE_SIZE)) == MAX_PAGE_SIZE
    for bad in ("0", str(MAX_PAGE_SIZE + 1), "ten", "-5"):
        with pytest.raises(ApiError):
            parse_limit(bad)
