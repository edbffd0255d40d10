"""Versions of stored resources: every write sets a new one, and a write may be conditional on
the version the client holds (HTTP If-Match, carried as a `petstore.versioning.v1.Precondition`)."""

from __future__ import annotations

from collections.abc import Collection

from petstore.versioning.v1 import precondition_pb2
from petstore_common.errors import FailedPrecondition

Precondition = precondition_pb2.Precondition

FIRST_VERSION = 1
"""The version of a resource just created; each write adds one."""
VERSION_KEY = "version"
"""Where a stored document keeps its version (absent in documents written before versions
existed: version 0)."""


def required_versions(precondition: Precondition, present: bool) -> frozenset[int] | None:
    """The versions a conditional write accepts, or None for an unconditional one
    (`present`: whether the request carried the precondition at all)."""
    return frozenset(precondition.versions) if present else None


def check_version(stored: int, accepted: Collection[int] | None, what: str) -> None:
    """FailedPrecondition when `accepted` is given and the stored version is not in it."""
    if accepted is not None and stored not in accepted:
        raise FailedPrecondition(f"{what} was changed since the version given (If-Match)")
