from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from multidict import MultiDict, MultiDictProxy

from petstore_common.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from petstore_gateway.errors import ApiError
from petstore_gateway.params import (
    parse_id,
    parse_limit,
    query_values,
    split_values,
)


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


def query(text: str) -> MultiDictProxy[str]:
    return MultiDictProxy(MultiDict(parse_qsl(text, keep_blank_values=True)))


@pytest.mark.parametrize(
    "text",
    [
        "status=available,sold",
        "status=available&status=sold",
        "status[]=available&status[]=sold",
        "status[0]=available&status[1]=sold",
        "status%5B0%5D=available&status%5B1%5D=sold",
        "status[1]=available&status[0]=sold&status=available",
        "status[]=available&status[3]=sold&status=sold,available&status[]=",
        "status=available&other[x]=1&statuses[0]=pending&status=sold&sold=pending",
    ],
)
def test_array_parameters_in_every_common_form_are_merged(text: str) -> None:
    assert sorted(query_values(query(text), "status")) == ["available", "sold"]


def test_array_parameters_keep_the_order_sent_without_duplicates() -> None:
    assert query_values(query("tags[0]=b&tags=a,b&tags[]=c&tags[2]=a"), "tags") == ["b", "a", "c"]


def test_other_parameters_are_not_read() -> None:
    assert query_values(query("other[x]=1&statuses[0]=pending&sold=status"), "status") == []


@pytest.mark.parametrize(
    "key", ["status[x]", "status[0", "status[0]]", "status[0][1]", "status[-1]", "status[ 0]", "status[]x"]
)
def test_malformed_indexes_are_400(key: str) -> None:
    with pytest.raises(ApiError) as caught:
        query_values(MultiDictProxy(MultiDict([(key, "available")])), "status")
    assert caught.value.status == 400
    assert caught.value.message == (
        "malformed status[...] query parameter: send status=a,b, status=a&status=b, "
        "status[]=a&status[]=b or status[0]=a&status[1]=b"
    )
