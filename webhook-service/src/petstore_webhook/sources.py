"""The event outboxes of the order and pet services, read and acknowledged over gRPC.

Each service keeps a document's unacknowledged events on the document itself; ReadXEvents
returns those of the oldest documents (a page), AckXEvents forgets them up to a sequence once
the webhook service has them safe. Calls are signed as the issuer "webhook-service", on behalf
of nobody. A service of an earlier release has no ReadXEvents (UNIMPLEMENTED): that is said
once and the source reads nothing until the service is upgraded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from petstore.order.v1 import order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_service_pb2, pet_service_pb2_grpc
from petstore_common.rules import field_rules
from petstore_webhook.event_types import ORDER, ORDER_EVENT_TYPES, PET, PET_EVENT_TYPES, subject
from petstore_webhook.payloads import order_data, pet_data, timestamp_moment
from petstore_webhook.storage.base import Event

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

log = logging.getLogger(__name__)

ORDER_SERVICE = order_service_pb2.DESCRIPTOR.services_by_name["OrderService"]
PET_SERVICE = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]
MAX_ACKS = min(
    field_rules(order_service_pb2.AckOrderEventsRequest, "acks").repeated.max_items,
    field_rules(pet_service_pb2.AckPetEventsRequest, "acks").repeated.max_items,
)
"""Documents one AckXEvents call may name (the protos' bound): a page never holds more."""
PAGE_SIZE = min(100, MAX_ACKS)
"""Documents whose events one read asks for."""
CALL_TIMEOUT_SECONDS = 10.0
RETRIED_LATER = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class SourceUnavailable(Exception):
    """The service could not be asked right now (down, restarting, slow): try again later."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """One read: the events (each document's in sequence) and what acknowledges them."""

    events: tuple[Event, ...] = ()
    through: Mapping[int, int] = field(default_factory=dict)
    """Document id -> the highest sequence read of it (every event read, kept or skipped)."""
    full: bool = False
    """As many documents as asked for: more may be waiting."""


class EventSource(Protocol):
    name: str

    async def read(self) -> EventPage:
        """The next page; an empty one from a service without events (or an earlier release).
        SourceUnavailable when the service cannot be reached."""

    async def acknowledge(self, page: EventPage) -> None:
        """Let the service forget the page's events. SourceUnavailable as read."""


class _GrpcEventSource:
    """Reads and acknowledges one service's events; the subclasses say which service."""

    name: str
    _read_method: str
    _ack_method: str

    def __init__(
        self, stub: Any, *, page_size: int = PAGE_SIZE, timeout_seconds: float = CALL_TIMEOUT_SECONDS
    ) -> None:
        assert 0 < page_size <= MAX_ACKS
        self._stub = stub
        self._page_size = page_size
        self._timeout_seconds = timeout_seconds
        self._said_unimplemented = False

    async def read(self) -> EventPage:
        request = self._read_request(self._page_size)
        response = await self._call(self._read_method, request)
        if response is None:
            return EventPage()
        events: list[Event] = []
        through: dict[int, int] = {}
        documents = 0
        previous: int | None = None
        for message in response.events:
            document_id, event = self._event(message)
            through[document_id] = max(through.get(document_id, 0), message.sequence)
            # A deleted document's events come apart from those of one stored since under its
            # id: the service counts them as two documents of its page.
            documents += document_id != previous
            previous = document_id
            if event is not None:
                events.append(event)
        return EventPage(tuple(events), through, full=documents >= self._page_size)

    async def acknowledge(self, page: EventPage) -> None:
        if page.through:
            await self._call(self._ack_method, self._ack_request(page.through))

    async def _call(self, method: str, request: Any) -> Any:
        try:
            response = await getattr(self._stub, method)(request, timeout=self._timeout_seconds)
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code == grpc.StatusCode.UNIMPLEMENTED:
                if not self._said_unimplemented:
                    log.warning(
                        "%s service has no %s (an earlier release): no %s webhooks until it is upgraded",
                        self.name,
                        method,
                        self.name,
                    )
                    self._said_unimplemented = True
                return None
            if code in RETRIED_LATER:
                raise SourceUnavailable(f"{self.name} service: {code.name}") from None
            raise
        if self._said_unimplemented:
            log.info("%s service answers %s again: %s webhooks resume", self.name, method, self.name)
            self._said_unimplemented = False
        return response

    def _read_request(self, page_size: int) -> Any:
        raise NotImplementedError

    def _ack_request(self, through: Mapping[int, int]) -> Any:
        raise NotImplementedError

    def _event(self, message: Any) -> tuple[int, Event | None]:
        raise NotImplementedError


def _event(
    message: Any, kind: str, document_id: int, type_names: Mapping[int, str], data: Mapping[str, Any]
) -> Event | None:
    """The stored form of one event; None for a type this release does not know (a newer
    service's: no endpoint can have asked for it)."""
    type_name = type_names.get(message.type)
    if type_name is None:
        log.warning("skipping an event of an unknown type", extra={"event_type": message.type, "kind": kind})
        return None
    return Event(
        id=message.id,
        type=type_name,
        subject=subject(kind, document_id),
        sequence=message.sequence,
        time=timestamp_moment(message.time),
        data=data,
    )


class OrderEventSource(_GrpcEventSource):
    name = ORDER
    _read_method = "ReadOrderEvents"
    _ack_method = "AckOrderEvents"

    def __init__(self, channel: grpc.aio.Channel, **options: Any) -> None:
        stub: OrderServiceAsyncStub = order_service_pb2_grpc.OrderServiceStub(channel)
        super().__init__(stub, **options)

    def _read_request(self, page_size: int) -> Any:
        return order_service_pb2.ReadOrderEventsRequest(page_size=page_size)

    def _ack_request(self, through: Mapping[int, int]) -> Any:
        acks = [order_service_pb2.OrderEventAck(order_id=i, through_sequence=s) for i, s in through.items()]
        return order_service_pb2.AckOrderEventsRequest(acks=acks)

    def _event(self, message: order_service_pb2.OrderEvent) -> tuple[int, Event | None]:
        order = message.order
        return order.id, _event(message, ORDER, order.id, ORDER_EVENT_TYPES, order_data(order))


class PetEventSource(_GrpcEventSource):
    name = PET
    _read_method = "ReadPetEvents"
    _ack_method = "AckPetEvents"

    def __init__(self, channel: grpc.aio.Channel, **options: Any) -> None:
        stub: PetServiceAsyncStub = pet_service_pb2_grpc.PetServiceStub(channel)
        super().__init__(stub, **options)

    def _read_request(self, page_size: int) -> Any:
        return pet_service_pb2.ReadPetEventsRequest(page_size=page_size)

    def _ack_request(self, through: Mapping[int, int]) -> Any:
        acks = [pet_service_pb2.PetEventAck(pet_id=i, through_sequence=s) for i, s in through.items()]
        return pet_service_pb2.AckPetEventsRequest(acks=acks)

    def _event(self, message: pet_service_pb2.PetEvent) -> tuple[int, Event | None]:
        pet = message.pet
        return pet.id, _event(message, PET, pet.id, PET_EVENT_TYPES, pet_data(pet))
