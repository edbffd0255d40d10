"""A webhook shows an order or a pet exactly as the HTTP API does: the webhook service's
conversion (petstore_webhook.payloads), written again because the service cannot import the
gateway, gives what the gateway's representations give, for every field, absent optionals and
every status (key order included: receivers may sign or compare the JSON text)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_gateway.representations.order import order_to_wire
from petstore_gateway.representations.pet import pet_to_wire
from petstore_webhook.payloads import order_data, pet_data

INT64 = st.integers(min_value=1, max_value=2**63 - 1)
MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59), timezones=st.just(UTC)
)
ORDER_STATUSES = st.sampled_from(list(order_pb2.OrderStatus.values()))
PET_STATUSES = st.sampled_from(list(pet_pb2.PetStatus.values()))
TEXT = st.text(max_size=20)


@st.composite
def orders(draw: st.DrawFn) -> order_pb2.Order:
    order = order_pb2.Order(
        pet_id=draw(INT64),
        quantity=draw(st.integers(min_value=0, max_value=2**31 - 1)),
        status=draw(ORDER_STATUSES),
        complete=draw(st.booleans()),
    )
    if draw(st.booleans()):
        order.id = draw(INT64)
    if draw(st.booleans()):
        order.ship_date.FromDatetime(draw(MOMENTS))
    return order


@st.composite
def categories(draw: st.DrawFn) -> pet_pb2.Category:
    item = pet_pb2.Category()
    if draw(st.booleans()):
        item.id = draw(INT64)
    if draw(st.booleans()):
        item.name = draw(TEXT)
    return item


@st.composite
def tags(draw: st.DrawFn) -> pet_pb2.Tag:
    item = pet_pb2.Tag()
    if draw(st.booleans()):
        item.id = draw(INT64)
    if draw(st.booleans()):
        item.name = draw(TEXT)
    return item


@st.composite
def pets(draw: st.DrawFn) -> pet_pb2.Pet:
    pet = pet_pb2.Pet(
        name=draw(TEXT),
        photo_urls=draw(st.lists(TEXT, max_size=3)),
        tags=draw(st.lists(tags(), max_size=3)),
        status=draw(PET_STATUSES),
    )
    if draw(st.booleans()):
        pet.id = draw(INT64)
    if draw(st.booleans()):
        pet.category.CopyFrom(draw(categories()))
    return pet


def same_json(ours: object, gateways: object) -> None:
    assert orjson.dumps(ours) == orjson.dumps(gateways)


@settings(max_examples=300, deadline=None)
@given(orders())
def test_an_order_is_shown_as_the_gateway_shows_it(order: order_pb2.Order) -> None:
    same_json(order_data(order), order_to_wire(order))


@settings(max_examples=300, deadline=None)
@given(pets())
def test_a_pet_is_shown_as_the_gateway_shows_it(pet: pet_pb2.Pet) -> None:
    same_json(pet_data(pet), pet_to_wire(pet))


@pytest.mark.parametrize("status", list(order_pb2.OrderStatus.values()))
def test_every_order_status_and_the_bare_order(status: int) -> None:
    bare = order_pb2.Order(status=status)  # type: ignore[arg-type]
    full = order_pb2.Order(id=7, pet_id=3, quantity=2, status=status, complete=True)  # type: ignore[arg-type]
    full.ship_date.FromDatetime(datetime(487, 1, 2, 3, 4, 5, 678_999, tzinfo=UTC))
    for order in (bare, full):
        same_json(order_data(order), order_to_wire(order))
    assert order_data(full)["shipDate"] == "0487-01-02T03:04:05.678Z"


@pytest.mark.parametrize("status", list(pet_pb2.PetStatus.values()))
def test_every_pet_status_and_the_bare_pet(status: int) -> None:
    bare = pet_pb2.Pet(status=status)  # type: ignore[arg-type]
    full = pet_pb2.Pet(
        id=9,
        name="Rex",
        photo_urls=["https://example.com/rex.jpg"],
        category=pet_pb2.Category(id=1, name="Dogs"),
        tags=[pet_pb2.Tag(id=2, name="good"), pet_pb2.Tag(name="no id"), pet_pb2.Tag()],
        status=status,  # type: ignore[arg-type]
    )
    for pet in (bare, full):
        same_json(pet_data(pet), pet_to_wire(pet))
