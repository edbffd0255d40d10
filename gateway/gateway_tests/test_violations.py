"""A service's field violation, worded by the gateway for its client; and what a hostile or
older service gets out of it: a 4xx with at most the service's own message, never a 500.

The service here is a stand-in on a real gRPC port that answers every call with the status and
trailers a test chooses, so the trailer the gateway parses is exactly what a service could send."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.any_pb2 import Any as AnyMessage
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common.field_violations import (
    MAX_DESCRIPTION_CHARS,
    MAX_STATUS_DETAILS_BYTES,
    STATUS_DETAILS_KEY,
    FieldViolation,
    status_details,
)
from petstore_gateway.errors import ApiError
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.rpc import call_service
from petstore_gateway.violations import FIELD_NAMES, violation_message

INVALID = grpc.StatusCode.INVALID_ARGUMENT
LEGACY = "what a service before the violations says"
"""The status's message: shown when the gateway cannot word a violation itself."""


@dataclass
class Answer:
    code: grpc.StatusCode = INVALID
    details: str = LEGACY
    trailers: Sequence[tuple[str, str | bytes]] = ()


@pytest.fixture
async def pet_stub() -> AsyncIterator[tuple[pet_service_pb2_grpc.PetServiceStub, Answer]]:
    """A pet service that refuses every CreatePet and ListPets with `answer`."""
    answer = Answer()

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(answer.code, answer.details, tuple(answer.trailers))

    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "CreatePet": grpc.unary_unary_rpc_method_handler(
            refuse, request_deserializer=pet_service_pb2.CreatePetRequest.FromString
        ),
        "ListPets": grpc.unary_unary_rpc_method_handler(
            refuse, request_deserializer=pet_service_pb2.ListPetsRequest.FromString
        ),
    }
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("petstore.pet.v1.PetService", handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield pet_service_pb2_grpc.PetServiceStub(channel), answer
    finally:
        await server.stop(None)


Refusal = Callable[[Any, Any], Awaitable[ApiError]]


@pytest.fixture
def refusal(pet_stub: tuple[pet_service_pb2_grpc.PetServiceStub, Answer]) -> Refusal:
    stub, _ = pet_stub

    async def refused(method: Any, request: Any) -> ApiError:
        with pytest.raises(ApiError) as caught:
            await call_service(getattr(stub, method), request, service="pet", deadline_seconds=5)
        return caught.value

    return refused


def answer_of(pet_stub: tuple[Any, Answer]) -> Answer:
    return pet_stub[1]


def violation_trailer(*violations: FieldViolation, code: grpc.StatusCode = INVALID) -> tuple[str, bytes]:
    return (STATUS_DETAILS_KEY, status_details(code, "the service's words", violations))


CREATE = ("CreatePet", pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(name="Rex")))
LIST = ("ListPets", pet_service_pb2.ListPetsRequest(tag_names=["a"]))


@pytest.mark.parametrize(
    ("call", "violation", "message"),
    [
        # JSON names, the carried pet left out.
        (
            CREATE,
            FieldViolation("pet.photo_urls[3]", "string.max_len", "must be at most 2048 characters"),
            "photoUrls[3]: must be at most 2048 characters",
        ),
        (
            CREATE,
            FieldViolation("pet.tags[1].id", "int64.gt", "must be positive"),
            "tags[1].id: must be positive",
        ),
        (CREATE, FieldViolation.required("pet.name"), "name is required"),
        # The query parameters' names, declared once in the gateway.
        (
            LIST,
            FieldViolation("tag_names[0]", "string.max_len", "must be at most 64 characters"),
            "tags[0]: must be at most 64 characters",
        ),
        (
            LIST,
            FieldViolation("statuses[0]", "enum.defined_only", "must be one of a, b"),
            "status[0]: must be one of a, b",
        ),
    ],
)
async def test_the_gateway_words_the_violation_whatever_the_message_says(
    pet_stub: tuple[Any, Answer],
    refusal: Refusal,
    call: tuple[str, Any],
    violation: FieldViolation,
    message: str,
) -> None:
    answer_of(pet_stub).trailers = [violation_trailer(violation)]
    error = await refusal(*call)
    assert (error.status, error.message) == (400, message)


async def test_without_a_violation_the_services_message_is_shown(
    pet_stub: tuple[Any, Answer], refusal: Refusal
) -> None:
    """A service before 1.1.0 sends no violation: its own (HTTP-worded) message reaches the client."""
    error = await refusal(*CREATE)
    assert (error.status, error.message) == (400, LEGACY)


def _status_bytes(*details: AnyMessage, code: grpc.StatusCode = INVALID) -> bytes:
    return Status(code=code.value[0], message="x", details=list(details)).SerializeToString()


def _packed(bad_request: BadRequest) -> AnyMessage:
    detail = AnyMessage()
    detail.Pack(bad_request)
    return detail


def _many_violations(count: int, path: str = "pet.name") -> bytes:
    bad_request = BadRequest(
        field_violations=[
            BadRequest.FieldViolation(field=path, reason="string.max_len", description="must be short")
            for _ in range(count)
        ]
    )
    return _status_bytes(_packed(bad_request))


@pytest.mark.parametrize(
    "trailer",
    [
        pytest.param(b"\xff\x00garbage\x80" * 50, id="garbage"),
        pytest.param(b"", id="empty"),
        pytest.param(_many_violations(150), id="150-violations"),
        pytest.param(_many_violations(1, "pet." + "a" * 4_000), id="a-4kB-field-path"),
        pytest.param(_many_violations(1, "pet.nickname"), id="a-field-this-gateway-does-not-know"),
        pytest.param(_many_violations(1, "pet.name[99999999999]"), id="an-index-too-long"),
        pytest.param(_many_violations(1, "pet[0].name"), id="an-index-into-no-list"),
        pytest.param(_many_violations(1, "pet..name"), id="an-empty-step"),
        pytest.param(_many_violations(1, "pet.name.first"), id="a-step-past-a-scalar"),
        pytest.param(
            _status_bytes(
                _packed(
                    BadRequest(field_violations=[BadRequest.FieldViolation(field="pet.name", description="")])
                )
            ),
            id="no-description",
        ),
        pytest.param(
            violation_trailer(FieldViolation("pet.name", "x", "d" * (MAX_DESCRIPTION_CHARS + 1)))[1],
            id="a-description-too-long",
        ),
        pytest.param(
            violation_trailer(FieldViolation("pet.name", "x", "must be\nforged: 200 OK"))[1],
            id="control-characters",
        ),
        pytest.param(
            violation_trailer(
                FieldViolation("pet.name", "x", "must be short"), code=grpc.StatusCode.NOT_FOUND
            )[1],
            id="another-status's-details",
        ),
        pytest.param(
            _status_bytes(AnyMessage(type_url="type.googleapis.com/google.rpc.BadRequest", value=b"\xff")),
            id="a-bad-detail",
        ),
        pytest.param(_status_bytes(), id="no-detail"),
    ],
)
async def test_a_detail_the_gateway_cannot_word_falls_back_to_the_message(
    pet_stub: tuple[Any, Answer], refusal: Refusal, trailer: bytes
) -> None:
    """Never a 500, and nothing of the detail echoed: the client gets the status's message."""
    answer_of(pet_stub).trailers = [(STATUS_DETAILS_KEY, trailer)]
    error = await refusal(*CREATE)
    assert (error.status, error.message) == (400, LEGACY)


GRPC_METADATA_SOFT_LIMIT = 8192
"""grpc's own bound on the metadata a client receives (grpc.max_metadata_size): past it a call
may fail in the channel (always past 16 KiB), and the trailer never reaches the gateway."""


def test_the_hostile_details_reach_the_gateway_and_pass_its_bound() -> None:
    """So the test above exercises the gateway's bounds, not grpc's."""
    assert MAX_STATUS_DETAILS_BYTES < len(_many_violations(150)) < GRPC_METADATA_SOFT_LIMIT
    assert len(_many_violations(1, "pet." + "a" * 4_000)) < GRPC_METADATA_SOFT_LIMIT


@pytest.mark.parametrize(
    "trailer",
    [
        pytest.param(_many_violations(1, "pet.secret" + "a" * 10_000), id="10kB-field-path"),
        pytest.param(_many_violations(5000, "pet.secret"), id="5000-violations"),
    ],
)
async def test_a_trailer_past_grpcs_limit_is_no_500_and_echoes_nothing_of_it(
    pet_stub: tuple[Any, Answer], refusal: Refusal, trailer: bytes
) -> None:
    """Either grpc refuses it in the channel (RESOURCE_EXHAUSTED in its own words, which the
    client gets as a 429, as from any service out of capacity) or the gateway's bound does (the
    service's message)."""
    answer_of(pet_stub).trailers = [(STATUS_DETAILS_KEY, trailer)]
    error = await refusal(*CREATE)
    assert error.status in (400, 429)
    assert "secret" not in error.message
    assert "must be short" not in error.message


def test_a_10kB_field_path_is_not_worded_even_when_it_arrives() -> None:
    """The gateway's own bound, without grpc's in front of it."""
    metadata = grpc.aio.Metadata((STATUS_DETAILS_KEY, _many_violations(1, "pet." + "a" * 10_000)))
    assert violation_message(INVALID, metadata, CREATE[1]) is None


async def test_of_many_violations_the_first_is_worded(pet_stub: tuple[Any, Answer], refusal: Refusal) -> None:
    answer_of(pet_stub).trailers = [(STATUS_DETAILS_KEY, _many_violations(40))]
    assert len(answer_of(pet_stub).trailers[0][1]) <= MAX_STATUS_DETAILS_BYTES
    error = await refusal(*CREATE)
    assert (error.status, error.message) == (400, "name: must be short")


async def test_a_violation_on_another_status_is_not_read(
    pet_stub: tuple[Any, Answer], refusal: Refusal
) -> None:
    answer = answer_of(pet_stub)
    answer.code, answer.details = grpc.StatusCode.NOT_FOUND, "pet 1 not found"
    answer.trailers = [violation_trailer(FieldViolation.required("pet.name"), code=grpc.StatusCode.NOT_FOUND)]
    error = await refusal(*CREATE)
    assert (error.status, error.message) == (404, "pet 1 not found")


def test_each_renamed_field_is_a_parameter_an_operation_declares() -> None:
    """FIELD_NAMES names what clients send: a query parameter of the API, or the upload's file."""
    declared = {
        parameter["name"] for op in OPERATIONS for parameter in op.parameters if parameter["in"] == "query"
    }
    query_names = set(FIELD_NAMES.values()) - {"the file's filename"}
    assert query_names == {"status", "tags"}
    assert query_names <= declared
