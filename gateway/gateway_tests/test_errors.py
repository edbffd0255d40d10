from __future__ import annotations

import math

import grpc
import pytest

from petstore_common.idempotency_keys import LEASE_SECONDS
from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER, api_error_from_rpc, http_status_for


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, 400),
        (grpc.StatusCode.FAILED_PRECONDITION, 409),
        (grpc.StatusCode.ABORTED, 409),
        (grpc.StatusCode.OUT_OF_RANGE, 400),
        (grpc.StatusCode.UNAUTHENTICATED, 500),  # a refused caller token: the deployment's fault
        (grpc.StatusCode.PERMISSION_DENIED, 403),
        (grpc.StatusCode.NOT_FOUND, 404),
        (grpc.StatusCode.ALREADY_EXISTS, 409),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, 429),
        (grpc.StatusCode.UNAVAILABLE, 503),
        (grpc.StatusCode.DEADLINE_EXCEEDED, 503),
        (grpc.StatusCode.CANCELLED, 503),
        (grpc.StatusCode.INTERNAL, 500),
        (grpc.StatusCode.UNKNOWN, 500),
        (grpc.StatusCode.UNIMPLEMENTED, 500),
        (grpc.StatusCode.DATA_LOSS, 500),
    ],
)
def test_grpc_status_table(code: grpc.StatusCode, status: int) -> None:
    assert http_status_for(code) == status


def test_overrides_apply_only_to_their_codes() -> None:
    overrides = {grpc.StatusCode.INVALID_ARGUMENT: 405}
    assert http_status_for(grpc.StatusCode.INVALID_ARGUMENT, overrides) == 405
    assert http_status_for(grpc.StatusCode.NOT_FOUND, overrides) == 404


def test_client_errors_carry_the_service_message() -> None:
    error = api_error_from_rpc(grpc.StatusCode.NOT_FOUND, "pet 12 not found", "pet")
    assert (error.status, error.message) == (404, "pet 12 not found")


def test_client_errors_without_details_get_the_status_phrase() -> None:
    assert api_error_from_rpc(grpc.StatusCode.ALREADY_EXISTS, "", "pet").message == "conflict"


def test_server_errors_never_show_details() -> None:
    unavailable = api_error_from_rpc(grpc.StatusCode.UNAVAILABLE, "connect to 10.0.0.1 failed", "order")
    assert (unavailable.status, unavailable.message) == (503, "the order service is unavailable")
    internal = api_error_from_rpc(grpc.StatusCode.INTERNAL, "Traceback: KeyError", "pet")
    assert (internal.status, internal.message) == (500, "internal error")


def test_a_service_out_of_capacity_says_when_to_retry() -> None:
    error = api_error_from_rpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "Concurrent RPC limit exceeded!", "pet")
    assert (error.status, error.headers) == (429, {"Retry-After": "1"})
    assert api_error_from_rpc(grpc.StatusCode.NOT_FOUND, "pet 1 not found", "pet").headers == {}


def test_unavailable_and_a_running_twin_say_when_to_retry() -> None:
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        error = api_error_from_rpc(code, "", "pet")
        assert (error.status, error.headers) == (503, {"Retry-After": UNAVAILABLE_RETRY_AFTER}), code
    running = api_error_from_rpc(grpc.StatusCode.ABORTED, "still being processed", "pet")
    assert (running.status, running.headers) == (409, {"Retry-After": str(math.ceil(LEASE_SECONDS))})
    # A conflict that waiting does not change tells no time to wait.
    assert api_error_from_rpc(grpc.StatusCode.ALREADY_EXISTS, "pet 1 exists", "pet").headers == {}
    assert api_error_from_rpc(grpc.StatusCode.FAILED_PRECONDITION, "delivered", "order").headers == {}


@pytest.mark.parametrize(("sent", "header"), [("17", "17"), ("soon", "1"), (None, "1")])
def test_a_429_carries_the_services_own_wait_when_it_is_a_number(sent: str | None, header: str) -> None:
    error = api_error_from_rpc(
        grpc.StatusCode.RESOURCE_EXHAUSTED, "too many wrong passwords", "user", retry_after=sent
    )
    assert (error.status, error.headers) == (429, {"Retry-After": header})
