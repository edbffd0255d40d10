"""/v2/pet: the pet operations, forwarded to the pet service."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.field_mask_pb2 import FieldMask
from multidict import MultiDictProxy

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.rules import field_rules
from petstore_gateway.bodies import (
    read_body,
    read_form,
    respond,
    respond_entity,
    respond_message,
    response_type,
    utf8_text,
)
from petstore_gateway.errors import ApiError, Overrides
from petstore_gateway.etags import IF_MATCH, if_match_precondition, matches_version, versioned_etag
from petstore_gateway.idempotency import KEY_REUSED_IS_422, idempotency_key, replay_headers
from petstore_gateway.images import IMAGE_ROUTE, image_response, image_url_path
from petstore_gateway.keys import CLIENTS, PET_CACHE, PRINCIPAL
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.params import next_page_headers, page_request, parse_id, query_values
from petstore_gateway.pet_cache import CachedPet
from petstore_gateway.public_url import public_base_url
from petstore_gateway.representations.pet import (
    PET,
    PET_STATUSES,
    PETS,
    parse_pet_status,
    pet_from_wire,
    pet_to_wire,
    pets_to_wire,
)
from petstore_gateway.representations.shapes import InvalidRepresentation, encode
from petstore_gateway.rpc import call

SERVICE = "pet"
# The classic API answers 405 "Invalid input" for a pet body or form that fails validation.
INVALID_INPUT_IS_405 = {grpc.StatusCode.INVALID_ARGUMENT: 405}
# A pet with as many images or photo URLs as it may keep takes no more.
UPLOAD_OVERRIDES = {grpc.StatusCode.FAILED_PRECONDITION: 409}
# The contract's image id (a plain regular expression, which RE2 and Python read alike), checked
# here too so that a bad path segment never costs a call.
_IMAGE_ID = re.compile(field_rules(pet_service_pb2.GetPetImageRequest, "image_id").string.pattern)
# With If-Match, a version that moved on, or no pet at all, fails the precondition (RFC 9110 13.1.1).
CONDITIONAL_WRITE = INVALID_INPUT_IS_405 | {
    grpc.StatusCode.FAILED_PRECONDITION: 412,
    grpc.StatusCode.NOT_FOUND: 412,
}

routes = web.RouteTableDef()


@routes.post("/v2/pet")
async def add_pet(request: web.Request) -> web.Response:
    key = idempotency_key(request)
    pet = await read_body(
        request, PET, lambda value: pet_from_wire(value, require_id=False), invalid_status=405
    )
    reply = await call(
        request,
        request.app[CLIENTS].pet.CreatePet,
        pet_service_pb2.CreatePetRequest(pet=pet, caller=request[PRINCIPAL].caller(), idempotency_key=key),
        service=SERVICE,
        overrides={**INVALID_INPUT_IS_405, **KEY_REUSED_IS_422},
    )
    return _respond_pet(request, reply.pet, headers=replay_headers(reply.idempotent_replay))


def encode_pet(pet: pet_pb2.Pet, body_format: BodyFormat) -> CachedPet:
    """A pet's representation in one format, with its ETag, fit to be kept in the cache."""
    # orjson (3.12+) hands back its whole write buffer, at least 4 KiB, for a body of about
    # 200 bytes and does not trim it (ijl/orjson: the resize is a no-op; home-assistant/core
    # #181240): 10,000 cached pets held 39 MiB instead of 2. A copy of the exact size is kept.
    body = memoryview(encode(pet_to_wire(pet), body_format, PET)).tobytes()
    return CachedPet(pet.version, body, versioned_etag(pet.version, body))


def _respond_pet(
    request: web.Request, pet: pet_pb2.Pet, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    entity = encode_pet(pet, response_type(request).format)
    return respond_entity(request, entity.body, entity.etag, conditional=False, headers=headers)


def _write_overrides(request: web.Request) -> Overrides:
    return INVALID_INPUT_IS_405 if request.headers.get(IF_MATCH) is None else CONDITIONAL_WRITE


@routes.put("/v2/pet")
async def update_pet(request: web.Request) -> web.Response:
    pet = await read_body(
        request, PET, lambda value: pet_from_wire(value, require_id=True), invalid_status=405
    )
    try:
        reply = await call(
            request,
            request.app[CLIENTS].pet.UpdatePet,
            pet_service_pb2.UpdatePetRequest(
                pet=pet,
                caller=request[PRINCIPAL].caller(),
                precondition=if_match_precondition(request.headers.get(IF_MATCH)),
            ),
            service=SERVICE,
            overrides=_write_overrides(request),
        )
    finally:
        request.app[PET_CACHE].written(pet.id)  # before the answer leaves: read-your-writes
    return _respond_pet(request, reply.pet)


async def _list_pets(request: web.Request, query: pet_service_pb2.ListPetsRequest) -> web.Response:
    query.page_size, query.page_token = page_request(request.query)
    reply = await call(request, request.app[CLIENTS].pet.ListPets, query, service=SERVICE)
    return respond(request, pets_to_wire(reply.pets), PETS, headers=next_page_headers(reply.next_page_token))


@routes.get("/v2/pet/findByStatus")
async def find_pets_by_status(request: web.Request) -> web.Response:
    names = query_values(request.query, "status")
    if not names:
        raise ApiError(400, f"status is required: one or more of {', '.join(PET_STATUSES)}")
    try:
        statuses = [parse_pet_status(name) for name in names]
    except InvalidRepresentation as exc:
        raise ApiError(400, str(exc)) from None
    return await _list_pets(request, pet_service_pb2.ListPetsRequest(statuses=statuses))


@routes.get("/v2/pet/findByTags")
async def find_pets_by_tags(request: web.Request) -> web.Response:
    tags = query_values(request.query, "tags")
    if not tags:
        raise ApiError(400, "tags is required: one or more tag names")
    return await _list_pets(request, pet_service_pb2.ListPetsRequest(tag_names=tags))


@routes.get("/v2/pet/{petId}")
async def get_pet(request: web.Request) -> web.Response:
    """From the cache while it is coherent, else read through (filling it when it may)."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    body_format = response_type(request).format
    cache = request.app[PET_CACHE]
    entity = cache.get(pet_id, body_format)
    if entity is None:
        fill = cache.begin_fill(pet_id)
        try:
            reply = await call(
                request,
                request.app[CLIENTS].pet.GetPet,
                pet_service_pb2.GetPetRequest(id=pet_id),
                service=SERVICE,
            )
            entity = encode_pet(reply.pet, body_format)
        finally:
            cache.end_fill(fill, body_format, entity)
    return respond_entity(request, entity.body, entity.etag)


@routes.post("/v2/pet/{petId}")
async def update_pet_with_form(request: web.Request) -> web.Response:
    """Form fields name and status (both optional): only those given change."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    form = await read_form(request)
    pet = pet_pb2.Pet(id=pet_id)
    paths: list[str] = []
    name = _form_text(form, "name")
    if name is not None:
        pet.name = name
        paths.append("name")
    status = _form_text(form, "status")
    if status is not None:
        try:
            pet.status = parse_pet_status(status)
        except InvalidRepresentation as exc:
            raise ApiError(405, str(exc)) from None
        paths.append("status")
    clients = request.app[CLIENTS]
    if_match = request.headers.get(IF_MATCH)
    if paths:
        try:
            await call(
                request,
                clients.pet.UpdatePet,
                pet_service_pb2.UpdatePetRequest(
                    pet=pet,
                    update_mask=FieldMask(paths=paths),
                    caller=request[PRINCIPAL].caller(),
                    precondition=if_match_precondition(if_match),
                ),
                service=SERVICE,
                overrides=_write_overrides(request),
            )
        finally:
            request.app[PET_CACHE].written(pet_id)
    else:  # nothing to change (an empty mask would mean "replace everything"): still 404 if absent
        reply = await call(
            request,
            clients.pet.GetPet,
            pet_service_pb2.GetPetRequest(id=pet_id),
            service=SERVICE,
            overrides=_write_overrides(request),
        )
        if if_match is not None and not matches_version(if_match, reply.pet.version):
            raise ApiError(412, f"pet {pet_id} was changed since the version given (If-Match)")
    return respond_message(request, str(pet_id))


def _form_text(form: MultiDictProxy[Any], name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(405, f"{name} must be a text field")
    return value


@routes.delete("/v2/pet/{petId}")
async def delete_pet(request: web.Request) -> web.Response:
    pet_id = parse_id(request.match_info["petId"], "petId")
    try:
        await call(
            request,
            request.app[CLIENTS].pet.DeletePet,
            pet_service_pb2.DeletePetRequest(id=pet_id, caller=request[PRINCIPAL].caller()),
            service=SERVICE,
        )
    finally:
        request.app[PET_CACHE].written(pet_id)
    return respond_message(request, str(pet_id))


@routes.post("/v2/pet/{petId}/uploadImage")
async def upload_image(request: web.Request) -> web.Response:
    """Multipart `file` (+ `additionalMetadata`). The bytes go to the pet service; nothing is
    written to disk under a client-chosen name and no URL is ever fetched."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    form = await read_form(request, allowed=frozenset({"multipart/form-data"}))
    upload = form.get("file")
    if upload is None:
        raise ApiError(400, "file is required: a multipart part named file")
    if isinstance(upload, web.FileField):
        data = upload.file.read()
        content_type = utf8_text(upload.content_type, "the file's Content-Type")
        file_name = utf8_text(upload.filename, "the file name")
    elif isinstance(upload, (bytes, bytearray)):
        data, content_type, file_name = bytes(upload), "application/octet-stream", ""
    else:
        raise ApiError(400, "file must be a file part, not a text field")
    metadata = form.get("additionalMetadata")
    if metadata is not None and not isinstance(metadata, str):
        raise ApiError(400, "additionalMetadata must be a text field")
    try:
        reply = await call(
            request,
            request.app[CLIENTS].pet.UploadPetImage,
            pet_service_pb2.UploadPetImageRequest(
                pet_id=pet_id,
                content_type=content_type,
                data=data,
                additional_metadata=metadata or "",
                file_name=file_name,
                caller=request[PRINCIPAL].caller(),
                images_base_url=public_base_url(request) + image_url_path(pet_id),
            ),
            service=SERVICE,
            overrides=UPLOAD_OVERRIDES,
        )
    finally:
        request.app[PET_CACHE].written(pet_id)  # its photoUrls changed: read-your-writes
    shown = "null" if metadata is None else metadata  # what the classic server printed
    message = (
        f"additionalMetadata: {shown}\nimage {reply.image_id} stored, {reply.size_bytes} bytes, "
        f"{reply.media_type}, at {reply.photo_url}"
    )
    return respond_message(request, message)


@routes.get(IMAGE_ROUTE)
async def get_pet_image(request: web.Request) -> web.Response:
    """An uploaded image, to anyone, in the media type it was stored with."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    image_id = request.match_info["imageId"]
    if not _IMAGE_ID.fullmatch(image_id):
        raise ApiError(400, "Invalid ID supplied: imageId must be 32 lowercase hexadecimal digits")
    reply = await call(
        request,
        request.app[CLIENTS].pet.GetPetImage,
        pet_service_pb2.GetPetImageRequest(pet_id=pet_id, image_id=image_id),
        service=SERVICE,
    )
    return image_response(request, image_id, reply.media_type, reply.data)
