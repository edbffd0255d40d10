from __future__ import annotations

import pytest

from petstore_gateway.errors import ApiError
from petstore_gateway.negotiation import (
    JSON_RESPONSE,
    MEMO_MAX_ACCEPT_LENGTH,
    TEXT_XML_RESPONSE,
    XML_RESPONSE,
    BodyFormat,
    ResponseType,
    body_format,
    choose_response_type,
)


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON_RESPONSE),
        ("", JSON_RESPONSE),
        ("*/*", JSON_RESPONSE),
        ("application/*", JSON_RESPONSE),
        ("application/json", JSON_RESPONSE),
        ("application/xml", XML_RESPONSE),
        ("text/xml", TEXT_XML_RESPONSE),
        ("text/*", TEXT_XML_RESPONSE),
        ("APPLICATION/XML", XML_RESPONSE),
        ("application/xml, */*", XML_RESPONSE),
        ("application/json;q=0.5, application/xml", XML_RESPONSE),
        ("application/json;q=0.9, application/xml;q=0.8", JSON_RESPONSE),
        ("application/xml;q=0.1, */*;q=0.5", JSON_RESPONSE),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", XML_RESPONSE),
        ("application/xml, application/json", XML_RESPONSE),
        ("*/*;q=0.5, application/json;q=0", XML_RESPONSE),
        ("garbage", JSON_RESPONSE),
    ],
)
def test_accept_chooses_the_representation(accept: str | None, expected: ResponseType) -> None:
    assert choose_response_type(accept) == expected


@pytest.mark.parametrize(
    "accept",
    ["text/html", "image/png", "application/json;q=0", "*/*;q=0", "application/json;q=0, text/*;q=0"],
)
def test_nothing_acceptable_is_none(accept: str) -> None:
    assert choose_response_type(accept) is None


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", BodyFormat.JSON),
        ("application/json; charset=utf-8", BodyFormat.JSON),
        ("Application/JSON", BodyFormat.JSON),
        ("application/xml", BodyFormat.XML),
        ("text/xml; charset=ISO-8859-1", BodyFormat.XML),
    ],
)
def test_body_format_by_content_type(content_type: str, expected: BodyFormat) -> None:
    assert body_format(content_type) is expected


@pytest.mark.parametrize(
    "content_type", [None, "", "text/plain", "application/x-www-form-urlencoded", "json"]
)
def test_missing_or_unsupported_content_type_is_415(content_type: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        body_format(content_type)
    assert caught.value.status == 415
    assert "Content-Type" in caught.value.message


def test_a_long_accept_is_parsed_like_a_short_one() -> None:
    padding = ", ".join(f"application/x-{n}" for n in range(60))  # longer than the memo takes
    accept = f"{padding}, application/xml"
    assert len(accept) > MEMO_MAX_ACCEPT_LENGTH
    assert choose_response_type(accept) == XML_RESPONSE
    assert choose_response_type(accept) == XML_RESPONSE
    assert choose_response_type("application/x-none") is None
