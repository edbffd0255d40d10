"""Entity tags and the conditional headers, as pure functions."""

from __future__ import annotations

import pytest

from petstore_gateway.etags import (
    if_match_precondition,
    matches_version,
    none_match,
    parse_entity_tags,
    unversioned_etag,
    versioned_etag,
)


def test_a_tag_names_the_version_and_the_bytes() -> None:
    json_tag = versioned_etag(3, b'{"id":1}')
    assert json_tag.startswith('"3-')
    assert json_tag.endswith('"')
    assert len(json_tag) == len('"3-"') + 16
    assert versioned_etag(3, b"<Pet/>") != json_tag  # another representation, another tag
    assert versioned_etag(4, b'{"id":1}') != json_tag
    assert unversioned_etag(b"x").startswith('"p-')


def test_parsing_keeps_weak_flags_and_drops_what_is_not_a_tag() -> None:
    parsed = parse_entity_tags(' "a", W/"b" ,"c"')
    assert parsed.tags == ((False, '"a"'), (True, '"b"'), (False, '"c"'))
    assert not parsed.any
    assert parse_entity_tags("*").any
    assert parse_entity_tags("garbage").tags == ()


@pytest.mark.parametrize(
    ("header", "held"),
    [
        (None, False),
        ('"1-aaaaaaaaaaaaaaaa"', True),
        ('W/"1-aaaaaaaaaaaaaaaa"', True),  # If-None-Match compares weakly
        ('"x", "1-aaaaaaaaaaaaaaaa"', True),
        ("*", True),
        ('"2-aaaaaaaaaaaaaaaa"', False),
        ("nonsense", False),
    ],
)
def test_if_none_match(header: str | None, held: bool) -> None:
    assert none_match(header, '"1-aaaaaaaaaaaaaaaa"') is held


def test_if_match_carries_the_versions_of_strong_tags_only() -> None:
    tag = versioned_etag(7, b"body")
    assert if_match_precondition(None) is None
    assert if_match_precondition("*") is None  # only asks that the pet exist
    assert list(if_match_precondition(f'{tag}, "9-0123456789abcdef"').versions) == [7, 9]  # type: ignore[union-attr]
    assert list(if_match_precondition(f"W/{tag}").versions) == []  # type: ignore[union-attr]
    assert list(if_match_precondition('"p-0123456789abcdef", "junk"').versions) == []  # type: ignore[union-attr]


def test_matches_version() -> None:
    assert matches_version(versioned_etag(2, b"x"), 2)
    assert not matches_version(versioned_etag(2, b"x"), 3)
    assert matches_version("*", 3)
