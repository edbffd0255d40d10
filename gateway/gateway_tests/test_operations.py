"""The operations' declarations are the one source: an operation declared and nothing else is
routed under the API prefix, checked for access, mapped and described in both documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from petstore.user.v1 import user_service_pb2
from petstore_gateway.apidoc.schemas import ok_message
from petstore_gateway.app import create_app
from petstore_gateway.bodies import respond_message
from petstore_gateway.idempotency import KEY_REUSED_IS_422
from petstore_gateway.keys import CLIENTS
from petstore_gateway.operations import (
    API_PREFIX,
    PRECONDITION_FAILED_IS_412,
    Access,
    Operation,
)
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.rpc import call
from petstore_gateway.settings import GatewaySettings

from .backend import Backend
from .conftest import STATIC_KEY, Client

REFUSAL = "only staff may ring the bell"


async def ring(request: web.Request) -> web.Response:
    """Asks the user service for a user that is not there: its NOT_FOUND, as declared, is a 410."""
    await call(
        request,
        request.config_dict[CLIENTS].user.GetUser,
        user_service_pb2.GetUserRequest(username="nobody-at-all"),
        service="user",
    )
    return respond_message(request, "rang")


BELL = Operation(
    method="POST",
    path="/bell",
    operation_id="ringBell",
    tag="store",
    summary="Ring the shop's bell",
    handler=ring,
    access=Access.STAFF,
    staff_refusal=REFUSAL,
    overrides={grpc.StatusCode.NOT_FOUND: 410},
    success=ok_message('"rang" as message'),
    errors={410: "Nobody came"},
)


@pytest.fixture
async def bell_client(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    app = create_app(settings, clients=backend.clients(), operations=(*OPERATIONS, BELL))
    async with TestClient(TestServer(app)) as client:
        yield client


async def test_a_declared_operation_is_routed_under_the_prefix_and_checked(
    bell_client: Client, backend: Backend
) -> None:
    await backend.add_user("kit")
    customer = await backend.login("kit")
    anonymous = await bell_client.post(f"{API_PREFIX}/bell")
    assert anonymous.status == 401
    refused = await bell_client.post(f"{API_PREFIX}/bell", headers={"api_key": customer})
    assert refused.status == 403
    assert (await refused.json())["message"] == REFUSAL
    staff = await bell_client.post(f"{API_PREFIX}/bell", headers={"api_key": STATIC_KEY})
    assert staff.status == 410  # the declared mapping of the service's NOT_FOUND
    assert (await bell_client.post("/bell", headers={"api_key": STATIC_KEY})).status == 404


async def test_a_declared_operation_is_in_both_descriptions(bell_client: Client) -> None:
    swagger: dict[str, Any] = await (await bell_client.get(f"{API_PREFIX}/swagger.json")).json()
    described = swagger["paths"]["/bell"]["post"]
    assert described["operationId"] == "ringBell"
    assert described["security"] == [{"api_key": []}, {"bearer": []}]
    assert REFUSAL in described["responses"]["403"]["description"]
    assert described["responses"]["410"]["description"] == "Nobody came"
    openapi: dict[str, Any] = await (await bell_client.get(f"{API_PREFIX}/openapi.json")).json()
    assert openapi["paths"]["/bell"]["post"]["operationId"] == "ringBell"


async def test_the_product_serves_no_such_operation(client: Client) -> None:
    assert (await client.post(f"{API_PREFIX}/bell", headers={"api_key": STATIC_KEY})).status == 404


@pytest.mark.parametrize("op", OPERATIONS, ids=[op.operation_id for op in OPERATIONS])
async def test_every_status_an_operation_maps_to_is_described(client: Client, op: Operation) -> None:
    swagger: dict[str, Any] = await (await client.get(f"{API_PREFIX}/swagger.json")).json()
    responses = swagger["paths"][op.path][op.method.lower()]["responses"]
    for status in op.status_overrides(if_match=True).values():
        assert str(status) in responses, (op.operation_id, status)


def test_the_kind_of_an_operation_adds_its_mappings() -> None:
    create = Operation(
        method="POST", path="/x", operation_id="x", tag="t", summary="s", handler=ring,
        access=Access.REQUIRED, idempotent=True, success={},
    )  # fmt: skip
    assert create.status_overrides(if_match=False) == KEY_REUSED_IS_422
    write = Operation(
        method="PUT", path="/x", operation_id="x", tag="t", summary="s", handler=ring,
        access=Access.REQUIRED, conditional_write=True, overrides={grpc.StatusCode.INVALID_ARGUMENT: 405},
        success={},
    )  # fmt: skip
    assert write.status_overrides(if_match=False) == {grpc.StatusCode.INVALID_ARGUMENT: 405}
    assert write.status_overrides(if_match=True) == {
        grpc.StatusCode.INVALID_ARGUMENT: 405,
        **PRECONDITION_FAILED_IS_412,
    }
    assert write.invalid_input_status == 405
    assert create.invalid_input_status == 400


@pytest.mark.parametrize(("access", "refusal"), [(Access.STAFF, ""), (Access.REQUIRED, "staff only")])
def test_a_staff_refusal_goes_with_and_only_with_staff(access: Access, refusal: str) -> None:
    with pytest.raises(ValueError, match="staff_refusal"):
        Operation(
            method="GET", path="/x", operation_id="x", tag="t", summary="s", handler=ring,
            access=access, staff_refusal=refusal, success={},
        )  # fmt: skip


def test_operation_ids_and_routes_are_unique() -> None:
    assert len({op.operation_id for op in OPERATIONS}) == len(OPERATIONS)
    assert len({(op.method, op.path) for op in OPERATIONS}) == len(OPERATIONS)
