"""Entity tags and conditional requests (RFC 9110 sections 8.8.3 and 13), as pure functions.

A representation's ETag is strong and computed on the bytes sent: `"<version>-<digest>"`, the
resource's stored version and a digest of the body, so JSON and XML differ and a change of
encoder can never keep a tag. A view that must not reveal the version (a user's public view)
gets `"p-<digest>"`. If-Match needs the version only: the service compares it atomically with
the write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from hashlib import blake2b

from petstore.versioning.v1 import precondition_pb2

IF_MATCH = "If-Match"
IF_NONE_MATCH = "If-None-Match"
ETAG = "ETag"

_ENTITY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*(?:,|$)')
_VERSIONED = re.compile(r"([1-9][0-9]{0,18})-[0-9a-f]{16}")


def digest(body: bytes) -> str:
    return blake2b(body, digest_size=8).hexdigest()


def versioned_etag(version: int, body: bytes) -> str:
    return f'"{version}-{digest(body)}"'


def unversioned_etag(body: bytes) -> str:
    return f'"p-{digest(body)}"'


@dataclass(frozen=True, slots=True)
class EntityTags:
    """A parsed If-Match or If-None-Match: `any` for "*", else the tags (weak ones flagged)."""

    any: bool
    tags: tuple[tuple[bool, str], ...]
    """(weak, opaque-tag with its quotes) per listed tag; unparseable members are dropped."""


def parse_entity_tags(header: str) -> EntityTags:
    if header.strip() == "*":
        return EntityTags(any=True, tags=())
    tags: list[tuple[bool, str]] = []
    position = 0
    while position < len(header):
        match = _ENTITY_TAG.match(header, position)
        if match is None:
            break  # the rest is not a list of entity-tags: what parsed so far counts
        tags.append((match.group(1) is not None, f'"{match.group(2)}"'))
        position = match.end()
    return EntityTags(any=False, tags=tuple(tags))


def none_match(header: str | None, current: str) -> bool:
    """Whether If-None-Match says the client already holds `current` (weak comparison): 304."""
    if header is None:
        return False
    parsed = parse_entity_tags(header)
    return parsed.any or any(tag == current for _, tag in parsed.tags)


def if_match_precondition(header: str | None) -> precondition_pb2.Precondition | None:
    """The versions an If-Match accepts, for the service to compare with the write (strong
    comparison: weak tags never match). None without If-Match, and for "*", which only asks
    that the resource exist."""
    if header is None:
        return None
    parsed = parse_entity_tags(header)
    if parsed.any:
        return None
    versions = []
    for weak, tag in parsed.tags:
        match = _VERSIONED.fullmatch(tag[1:-1])
        if not weak and match is not None:
            versions.append(int(match.group(1)))
    return precondition_pb2.Precondition(versions=versions)


def matches_version(header: str, version: int) -> bool:
    """If-Match evaluated against a version the gateway already holds (strong comparison)."""
    precondition = if_match_precondition(header)
    return precondition is None or version in precondition.versions
