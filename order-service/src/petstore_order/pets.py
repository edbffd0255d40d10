"""What the order service asks of the pet service: does this pet exist, and the pet's steps of
an order's sale (reserve, release, sell; petstore_order.sale drives them).

Every order asks it, so the questions of the orders waiting at one moment go out together in
one FindExistingPets call (`PetQuestions`): under load one call answers tens of orders, and a
lone order is asked at once. A question only ever joins a call sent after it was asked, so
the answer is read after the order arrived: an order placed after a pet's deletion was
acknowledged is refused, whatever the timing (no cache, no follower that could lag).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from petstore.pet.v1 import pet_service_pb2, pet_service_pb2_grpc
from petstore_common.caller_tokens import CallerSigner
from petstore_common.errors import FailedPrecondition, NotFound, Unavailable
from petstore_common.grpc_client import create_channel
from petstore_common.rules import field_rules

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

PET_SERVICE = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]
MAX_IDS_PER_CHECK = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated.max_items
"""Pet ids one FindExistingPets call may ask about: the pet service refuses more (its proto's
rule), so we never send more."""
PET_SERVICE_UNAVAILABLE = "the pet service is unavailable"
UNIMPLEMENTED_RETRY_SECONDS = 30.0
"""A pet service of an earlier release (no FindExistingPets) is asked with GetPet, one pet a
call, and offered the batched call again this often: its replicas may be upgraded meanwhile."""

log = logging.getLogger(__name__)


class StepUnsupported(Exception):
    """The pet service is of a release without the sale's steps (UNIMPLEMENTED)."""


class PetDirectory(Protocol):
    async def exists(self, pet_id: int, *, budget_seconds: float | None = None) -> bool:
        """Whether the pet exists; Unavailable when that cannot be known right now.
        `budget_seconds` is what is left of the caller's own deadline, if it has one."""

    async def reserve(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        """Reserve the pet for the order (ReservePet): NotFound when absent, FailedPrecondition
        (the pet service's words) when not available, Unavailable when the outcome is unknown,
        StepUnsupported from a pet service without the step."""

    async def release(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        """Release the pet if the order holds it (ReleasePet); Unavailable, StepUnsupported."""

    async def sell(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        """Sell the pet to the order that holds it (SellPet): NotFound, FailedPrecondition,
        Unavailable, StepUnsupported."""


@dataclass(slots=True, eq=False)
class _Question:
    pet_id: int
    deadline: float
    """time.monotonic() after which its asker has given up."""
    answer: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class GrpcPetDirectory:
    """Asks the pet service. Only "not found" means "no such pet": any other failure (the
    service down, slow or broken) is Unavailable, so an outage is never reported as a missing
    pet. One FindExistingPets call at a time carries every question waiting (at most
    MAX_IDS_PER_CHECK ids); while it is out, new questions wait for the next."""

    def __init__(self, channel: grpc.aio.Channel, *, timeout_seconds: float) -> None:
        self._stub: PetServiceAsyncStub = pet_service_pb2_grpc.PetServiceStub(channel)
        self._timeout_seconds = timeout_seconds
        self._waiting: list[_Question] = []
        self._sender: asyncio.Task[None] | None = None
        self._batches_refused_until = 0.0
        self.calls = 0
        """FindExistingPets calls made (each answers one or more questions)."""

    async def exists(self, pet_id: int, *, budget_seconds: float | None = None) -> bool:
        # Never wait longer than our caller will: its deadline bounds the call's.
        timeout = (
            self._timeout_seconds if budget_seconds is None else min(self._timeout_seconds, budget_seconds)
        )
        if time.monotonic() < self._batches_refused_until:
            return await self._get_pet(pet_id, timeout)
        question = _Question(pet_id, time.monotonic() + timeout)
        self._waiting.append(question)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_while_waiting())
        try:  # a waiter that gives up (or is cancelled) cancels its answer: nobody sets it then
            async with asyncio.timeout(timeout):
                return await question.answer
        except TimeoutError:
            log.warning("pet service call failed", extra={"grpc_code": "DEADLINE_EXCEEDED"})
            raise Unavailable(PET_SERVICE_UNAVAILABLE) from None

    async def reserve(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        request = pet_service_pb2.ReservePetRequest(pet_id=pet_id, order_id=order_id)
        await self._step(self._stub.ReservePet, request, budget_seconds)

    async def release(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        request = pet_service_pb2.ReleasePetRequest(pet_id=pet_id, order_id=order_id)
        await self._step(self._stub.ReleasePet, request, budget_seconds)

    async def sell(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        request = pet_service_pb2.SellPetRequest(pet_id=pet_id, order_id=order_id)
        await self._step(self._stub.SellPet, request, budget_seconds)

    async def _step(self, method: Any, request: Any, budget_seconds: float | None) -> None:
        """One step of a sale: the pet service's definite answers as the order service's own
        errors; anything else is Unavailable (the step may or may not have been taken)."""
        timeout = (
            self._timeout_seconds if budget_seconds is None else min(self._timeout_seconds, budget_seconds)
        )
        try:
            await method(request, timeout=max(timeout, 0.001))
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code == grpc.StatusCode.NOT_FOUND:
                raise NotFound(exc.details() or f"pet {request.pet_id} not found") from None
            if code == grpc.StatusCode.FAILED_PRECONDITION:
                raise FailedPrecondition(exc.details() or f"pet {request.pet_id} is not available") from None
            if code == grpc.StatusCode.UNIMPLEMENTED:
                raise StepUnsupported() from None
            log.warning("pet service call failed", extra={"grpc_code": code.name})
            raise Unavailable(PET_SERVICE_UNAVAILABLE) from None

    async def close(self) -> None:
        """Stop sending (the channel is closing): every question still open is Unavailable."""
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
        for question in self._waiting:
            _settle(question, Unavailable(PET_SERVICE_UNAVAILABLE))
        self._waiting.clear()

    async def _send_while_waiting(self) -> None:
        while self._waiting:
            now = time.monotonic()
            batch = [
                question
                for question in self._waiting[:MAX_IDS_PER_CHECK]
                if not question.answer.done() and question.deadline > now
            ]
            del self._waiting[:MAX_IDS_PER_CHECK]
            if batch:
                await self._ask(batch, seconds=max(question.deadline for question in batch) - now)

    async def _ask(self, batch: list[_Question], *, seconds: float) -> None:
        if time.monotonic() < self._batches_refused_until:  # refused while these waited
            await asyncio.gather(*(self._answer_with_get_pet(question) for question in batch))
            return
        ids = sorted({question.pet_id for question in batch})
        self.calls += 1
        try:
            found = await self._stub.FindExistingPets(
                pet_service_pb2.FindExistingPetsRequest(ids=ids), timeout=seconds
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                log.info("the pet service cannot answer for many pets at once: asking GetPet, one a call")
                self._batches_refused_until = time.monotonic() + UNIMPLEMENTED_RETRY_SECONDS
                await asyncio.gather(*(self._answer_with_get_pet(question) for question in batch))
                return
            log.warning("pet service call failed", extra={"grpc_code": exc.code().name})
            for question in batch:
                _settle(question, Unavailable(PET_SERVICE_UNAVAILABLE))
            return
        except BaseException as exc:  # cancelled (closing), or a bug: nobody may wait for ever
            for question in batch:
                _settle(question, Unavailable(PET_SERVICE_UNAVAILABLE))
            if not isinstance(exc, Exception):
                raise
            log.exception("pet service call failed")
            return
        existing = set(found.ids)
        for question in batch:
            _settle(question, question.pet_id in existing)

    async def _answer_with_get_pet(self, question: _Question) -> None:
        try:
            answer = await self._get_pet(question.pet_id, question.deadline - time.monotonic())
        except Unavailable as exc:
            _settle(question, exc)
        else:
            _settle(question, answer)

    async def _get_pet(self, pet_id: int, seconds: float) -> bool:
        try:
            await self._stub.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=max(seconds, 0.001))
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return False
            log.warning("pet service call failed", extra={"grpc_code": exc.code().name})
            raise Unavailable(PET_SERVICE_UNAVAILABLE) from None
        return True


def _settle(question: _Question, outcome: bool | Exception) -> None:
    if question.answer.done():
        return
    if isinstance(outcome, Exception):
        question.answer.set_exception(outcome)
    else:
        question.answer.set_result(outcome)


@asynccontextmanager
async def grpc_pet_directory(
    address: str, *, timeout_seconds: float, signer: CallerSigner
) -> AsyncIterator[GrpcPetDirectory]:
    """A directory over one channel to `address`, closed on exit, its calls signed by `signer`
    (the issuer "order-service"). The channel connects lazily and reconnects by itself, so the
    pet service may start after (or restart under) us."""
    async with create_channel(address, (PET_SERVICE,), signer=signer) as channel:
        directory = GrpcPetDirectory(channel, timeout_seconds=timeout_seconds)
        try:
            yield directory
        finally:
            await directory.close()
