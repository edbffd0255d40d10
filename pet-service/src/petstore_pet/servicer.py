"""PetService RPCs: check the request, ask the store, shape the response.

Every request has passed its field rules (the protos' annotations, checked by the shared server
interceptor with validation.REQUEST_RULES) before a method here runs; validation holds the rest.

Errors are raised as petstore_common.errors exceptions; the shared server interceptor turns
them into gRPC statuses with their messages. The catalogue is the staff's: every change to it
checks the caller first, so a customer learns nothing (not even whether a pet exists).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import grpc
from prometheus_client import Counter

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common.callers import CATALOGUE_STAFF_ONLY, require_staff
from petstore_common.contract_bounds import MAX_IMAGES_PER_PET
from petstore_common.errors import Aborted, FailedPrecondition, ServiceError
from petstore_common.idempotency import (
    DEFAULT_TTL_SECONDS,
    Idempotency,
    Reservation,
    create_under_reserved_id,
)
from petstore_common.paging import decode_page_token, encode_page_token, filter_fingerprint, page_size
from petstore_common.versions import required_versions
from petstore_common.watch import HEARTBEAT_SECONDS
from petstore_pet import events, validation
from petstore_pet.changes import PetChange, Position, Subscription
from petstore_pet.images import decoded_media_type
from petstore_pet.storage.base import PetImage, PetStore

Context = grpc.aio.ServicerContext[Any, Any]

STAFF_ONLY = CATALOGUE_STAFF_ONLY
DECODES_AT_ONCE = 2
"""Image decodes that may run at once (each off the event loop, up to 64 MiB of pixels)."""
PHOTO_URL_ATTEMPTS = 8
"""Compare-and-set rounds adding an image's URL to its pet may lose to other writers."""
IGNORED_PATHS_METADATA_KEY = "petstore-ignored-paths"
"""Trailing metadata of an UpdatePet that ignored update mask paths naming no field this release
knows: those paths, comma-separated (at most validation.MAX_REPORTED_PATHS)."""
IGNORED_PATHS = Counter(
    "petstore_pet_update_paths_ignored_total",
    "UpdatePet calls that ignored update mask paths naming no field this release knows (a newer client's).",
)

log = logging.getLogger(__name__)


class PetServicer(pet_service_pb2_grpc.PetServiceServicer):
    def __init__(
        self,
        store: PetStore,
        *,
        idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        deleted_events_retention: timedelta = events.DELETED_EVENTS_RETENTION,
    ) -> None:
        self._store = store
        self._deleted_events_retention = deleted_events_retention
        self._next_purge = 0.0
        """When (time.monotonic) a DeletePet may next purge deleted pets' expired events."""
        self._heartbeat_seconds = heartbeat_seconds
        # Announced on every WatchPets message, so watchers time silence by this service's own
        # heartbeat; never 0, which would mean "not announced".
        self._heartbeat_ms = max(1, round(heartbeat_seconds * 1000))
        self._idempotency = Idempotency(store.idempotency, ttl_seconds=idempotency_ttl_seconds)
        self._decoding = asyncio.Semaphore(DECODES_AT_ONCE)

    async def GetPet(
        self, request: pet_service_pb2.GetPetRequest, context: Context
    ) -> pet_service_pb2.GetPetResponse:
        pet = await self._store.get(request.id)
        return pet_service_pb2.GetPetResponse(pet=pet)

    async def FindExistingPets(
        self, request: pet_service_pb2.FindExistingPetsRequest, context: Context
    ) -> pet_service_pb2.FindExistingPetsResponse:
        existing = await self._store.existing(set(request.ids))
        return pet_service_pb2.FindExistingPetsResponse(ids=sorted(existing))

    async def ReservePet(
        self, request: pet_service_pb2.ReservePetRequest, context: Context
    ) -> pet_service_pb2.ReservePetResponse:
        pet = await self._store.reserve(request.pet_id, request.order_id)
        return pet_service_pb2.ReservePetResponse(pet=pet)

    async def ReleasePet(
        self, request: pet_service_pb2.ReleasePetRequest, context: Context
    ) -> pet_service_pb2.ReleasePetResponse:
        released = await self._store.release(request.pet_id, request.order_id)
        return pet_service_pb2.ReleasePetResponse(released=released)

    async def SellPet(
        self, request: pet_service_pb2.SellPetRequest, context: Context
    ) -> pet_service_pb2.SellPetResponse:
        pet = await self._store.sell(request.pet_id, request.order_id)
        return pet_service_pb2.SellPetResponse(pet=pet)

    async def ReadPetEvents(
        self, request: pet_service_pb2.ReadPetEventsRequest, context: Context
    ) -> pet_service_pb2.ReadPetEventsResponse:
        # Who may call it is the caller gate's (petstore_common.caller_gate: the webhook service).
        page = events.Page(page_size(request.page_size))
        await self._store.read_events(page)
        return pet_service_pb2.ReadPetEventsResponse(events=page.events)

    async def AckPetEvents(
        self, request: pet_service_pb2.AckPetEventsRequest, context: Context
    ) -> pet_service_pb2.AckPetEventsResponse:
        through: dict[int, int] = {}
        for ack in request.acks:  # a pet named twice: the further ack covers the other
            through[ack.pet_id] = max(through.get(ack.pet_id, 0), ack.through_sequence)
        await self._store.ack_events(through)
        return pet_service_pb2.AckPetEventsResponse()

    async def CreatePet(
        self, request: pet_service_pb2.CreatePetRequest, context: Context
    ) -> pet_service_pb2.CreatePetResponse:
        require_staff(request.caller, STAFF_ONLY)
        validation.check_new_pet(request.pet)

        async def create(reservation: Reservation) -> pet_service_pb2.CreatePetResponse:
            pet = await create_under_reserved_id(reservation, self._store, request.pet)
            return pet_service_pb2.CreatePetResponse(pet=pet)

        return await self._idempotency.serve(request, pet_service_pb2.CreatePetResponse, create)

    async def UpdatePet(
        self, request: pet_service_pb2.UpdatePetRequest, context: Context
    ) -> pet_service_pb2.UpdatePetResponse:
        require_staff(request.caller, STAFF_ONLY)
        update = validation.update_fields(request.pet, request.update_mask)
        accepted = required_versions(request.precondition, request.HasField("precondition"))
        pet = await self._store.update(request.pet, update.fields, accepted_versions=accepted)
        if update.ignored:
            _report_ignored_paths(context, pet.id, update.ignored)
        return pet_service_pb2.UpdatePetResponse(pet=pet)

    async def DeletePet(
        self, request: pet_service_pb2.DeletePetRequest, context: Context
    ) -> pet_service_pb2.DeletePetResponse:
        require_staff(request.caller, STAFF_ONLY)
        await self._store.delete(request.id)
        await self._purge_expired_events()
        return pet_service_pb2.DeletePetResponse()

    async def _purge_expired_events(self) -> None:
        """Deleted pets' events are kept a while only: only a deletion adds any, so a deletion
        purges the expired ones, at most once an interval per process."""
        if time.monotonic() < self._next_purge:
            return
        self._next_purge = time.monotonic() + events.PURGE_INTERVAL_SECONDS
        try:
            purged = await self._store.purge_deleted_events(older_than=self._deleted_events_retention)
        except Exception:  # the pet is deleted: a failed purge is the next interval's to do
            log.warning("purge of deleted pets' events failed", exc_info=True)
            return
        if purged:
            events.PURGED.inc(purged)
            log.warning("deleted pets' events purged unacknowledged", extra={"pets": purged})

    async def ListPets(
        self, request: pet_service_pb2.ListPetsRequest, context: Context
    ) -> pet_service_pb2.ListPetsResponse:
        statuses, tag_names = list(request.statuses), list(request.tag_names)
        validation.check_list_filter(statuses, tag_names)
        size = page_size(request.page_size)
        fingerprint = filter_fingerprint(statuses, tag_names)
        after_id = decode_page_token(request.page_token, fingerprint)
        # One extra pet tells whether another page exists without a second query.
        pets = await self._store.find(
            statuses=statuses, tag_names=tag_names, after_id=after_id, limit=size + 1
        )
        next_token = encode_page_token(pets[size - 1].id, fingerprint) if len(pets) > size else ""
        return pet_service_pb2.ListPetsResponse(pets=pets[:size], next_page_token=next_token)

    async def GetInventory(
        self, request: pet_service_pb2.GetInventoryRequest, context: Context
    ) -> pet_service_pb2.GetInventoryResponse:
        return pet_service_pb2.GetInventoryResponse(counts=await self._store.count_by_status())

    async def UploadPetImage(
        self, request: pet_service_pb2.UploadPetImageRequest, context: Context
    ) -> pet_service_pb2.UploadPetImageResponse:
        """Decode, store, then add the image's URL to its pet. The client's content type is not
        trusted: the stored media type is the decoded format's."""
        require_staff(request.caller, STAFF_ONLY)
        pet_id = request.pet_id
        image_id = uuid.uuid4().hex
        photo_url = f"{request.images_base_url}/{image_id}" if request.images_base_url else ""
        if photo_url:
            validation.check_photo_url(photo_url)
        pet = await self._store.get(pet_id)
        if photo_url:
            _check_room_for_a_photo(pet)
        async with self._decoding:
            media_type = await asyncio.to_thread(decoded_media_type, request.data)
        image = PetImage(
            image_id=image_id,
            pet_id=pet_id,
            content_type=media_type,
            data=request.data,
            additional_metadata=request.additional_metadata,
            file_name=request.file_name,
        )
        await self._store.add_image(image, max_images=MAX_IMAGES_PER_PET)
        if photo_url:
            try:
                pet = await self._add_photo_url(pet_id, photo_url)
            except BaseException:
                await self._store.delete_image(image_id)  # no image without its URL on the pet
                raise
        return pet_service_pb2.UploadPetImageResponse(
            image_id=image_id, size_bytes=image.size, media_type=media_type, photo_url=photo_url, pet=pet
        )

    async def _add_photo_url(self, pet_id: int, photo_url: str) -> pet_pb2.Pet:
        """The pet with `photo_url` appended, written only over the version it was read at."""
        for _ in range(PHOTO_URL_ATTEMPTS):
            pet = await self._store.get(pet_id)
            _check_room_for_a_photo(pet)
            pet.photo_urls.append(photo_url)
            try:
                return await self._store.update(pet, ["photo_urls"], accepted_versions=[pet.version])
            except FailedPrecondition:
                continue  # somebody wrote the pet since it was read: read it again
        raise Aborted(f"pet {pet_id} is being changed by others; try again")

    async def GetPetImage(
        self, request: pet_service_pb2.GetPetImageRequest, context: Context
    ) -> pet_service_pb2.GetPetImageResponse:
        image = await self._store.get_image(request.pet_id, request.image_id)
        return pet_service_pb2.GetPetImageResponse(media_type=image.content_type, data=image.data)

    async def WatchPets(
        self, request: pet_service_pb2.WatchPetsRequest, context: Context
    ) -> AsyncIterator[pet_service_pb2.WatchPetsResponse]:
        # A stream handler is not wrapped by the server interceptor: errors are mapped here.
        resume = Position(request.resume_epoch, request.resume_after) if request.resume_epoch else None
        try:
            async with self._store.changes.subscribe(resume) as subscription:
                # Live: every later commit follows (after a resumed position, from there on).
                yield _watch_message(subscription, subscription.drain(), self._heartbeat_ms, first=True)
                while True:
                    batch = await subscription.next_batch(self._heartbeat_seconds)
                    yield _watch_message(subscription, batch, self._heartbeat_ms)
        except ServiceError as exc:
            await context.abort(exc.code, exc.message)


def _report_ignored_paths(context: Context, pet_id: int, ignored: tuple[str, ...]) -> None:
    """A newer client named fields this release does not know: the write went through without
    them. The caller learns which (trailing metadata), the operators that it happens (log, metric):
    during a rolling update it should stop once every replica runs the newer release."""
    reported = ",".join(ignored[: validation.MAX_REPORTED_PATHS])
    context.set_trailing_metadata(((IGNORED_PATHS_METADATA_KEY, reported),))
    IGNORED_PATHS.inc()
    log.warning("update mask paths ignored", extra={"pet_id": pet_id, "paths": reported})


def _check_room_for_a_photo(pet: pet_pb2.Pet) -> None:
    if len(pet.photo_urls) >= validation.MAX_PHOTO_URLS:
        raise FailedPrecondition(
            f"pet {pet.id} has {validation.MAX_PHOTO_URLS} photoUrls already: there is no room for another"
        )


def _watch_message(
    subscription: Subscription, batch: list[PetChange], heartbeat_ms: int, *, first: bool = False
) -> pet_service_pb2.WatchPetsResponse:
    return pet_service_pb2.WatchPetsResponse(
        changes=[pet_service_pb2.PetChange(id=c.pet_id, version=c.version, deleted=c.deleted) for c in batch],
        epoch=subscription.epoch,
        sequence=subscription.sequence,
        resumed=first and subscription.resumed,
        heartbeat_ms=heartbeat_ms,
    )
