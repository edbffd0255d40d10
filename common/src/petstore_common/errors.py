"""Domain errors that storage and servicers raise; the server maps them to gRPC statuses."""

from __future__ import annotations

import grpc

from petstore_common.field_violations import STATUS_DETAILS_KEY, FieldViolation, status_details

TrailingMetadata = tuple[tuple[str, str | bytes], ...]


class ServiceError(Exception):
    """An error the client should see, with its gRPC status and a safe message."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def trailing_metadata(self) -> TrailingMetadata:
        """What the status carries beside its code and message."""
        return ()


class InvalidArgument(ServiceError):
    """Bad input. About one request field, it carries that field's `violation` in neutral words
    (field_violations.py): the status then holds a google.rpc.BadRequest for the caller to word.

    The message words it for HTTP clients too, because a gateway before 1.1.0 shows only the
    message (rolling updates run one release of skew): that wording goes once no gateway older
    than 1.1.0 runs, and the services' renames (validation.py's REQUEST_RULES) with it."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, message: str, *, violation: FieldViolation | None = None) -> None:
        super().__init__(message)
        self.violation = violation

    def trailing_metadata(self) -> TrailingMetadata:
        if self.violation is None:
            return ()
        return ((STATUS_DETAILS_KEY, status_details(self.code, self.message, [self.violation])),)


class NotFound(ServiceError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(ServiceError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(ServiceError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(ServiceError):
    code = grpc.StatusCode.UNAUTHENTICATED


class FailedPrecondition(ServiceError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(ServiceError):
    """A dependency (the database, another service) cannot be reached right now."""

    code = grpc.StatusCode.UNAVAILABLE


class ResourceExhausted(ServiceError):
    """The caller must wait before trying again: how long travels as RETRY_AFTER_METADATA."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def trailing_metadata(self) -> TrailingMetadata:
        return ((RETRY_AFTER_METADATA, str(self.retry_after_seconds)),)


RETRY_AFTER_METADATA = "retry-after"
"""Trailing metadata of a RESOURCE_EXHAUSTED status: whole seconds to wait (HTTP Retry-After)."""


class Aborted(ServiceError):
    """A concurrent request holds what this one needs (e.g. the twin of an idempotent create)."""

    code = grpc.StatusCode.ABORTED
