"""The pet operations, forwarded to the pet service; their declarations at the end."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.field_mask_pb2 import FieldMask
from multidict import MultiDictProxy

from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.callers import CATALOGUE_STAFF_ONLY
from petstore_common.contract_bounds import IMAGE_MEDIA_TYPES, MAX_IMAGE_PIXELS, MAX_IMAGES_PER_PET
from petstore_gateway.apidoc.schemas import (
    IMAGE_ID_PATTERN,
    IMAGE_METADATA,
    IMAGE_METADATA_PATTERN,
    INVALID_ID,
    MAX_PET_NAME_CHARS,
    MAX_TAG_NAME_FILTERS,
    NAME_PATTERN,
    PAGING,
    PET_HELD,
    PET_ID,
    PET_NOT_FOUND,
    PETS_RESPONSE,
    STAFF_ONLY_NOTE,
    TAG_FILTERS,
    body_parameter,
    ok,
    ok_message,
    ref,
    text_schema,
)
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
from petstore_gateway.idempotency import idempotency_key, replay_headers
from petstore_gateway.images import IMAGE_CACHE_CONTROL, IMAGE_HEADERS, image_response
from petstore_gateway.keys import CLIENTS, PET_CACHE, PRINCIPAL
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.operations import (
    API_PREFIX,
    BODY_MEDIA_TYPES,
    FORM,
    MULTIPART,
    Access,
    Operation,
    current_operation,
)
from petstore_gateway.params import next_page_headers, page_request, parse_id, query_values
from petstore_gateway.pet_cache import CachedPet
from petstore_gateway.public_url import public_base_url
from petstore_gateway.representations.pet import (
    MAX_PHOTO_URLS,
    PET,
    PET_STATUSES,
    PET_WRITTEN_FIELDS,
    PETS,
    parse_pet_status,
    pet_from_wire,
    pet_to_wire,
    pets_to_wire,
)
from petstore_gateway.representations.shapes import InvalidRepresentation, encode
from petstore_gateway.rpc import call

SERVICE = "pet"
INVALID_INPUT_IS_405: Overrides = MappingProxyType({grpc.StatusCode.INVALID_ARGUMENT: 405})
"""The classic API answers 405 "Invalid input" for a pet body or form that fails validation."""
IMAGE_PATH = "/pet/{petId}/images/{imageId}"
# The contract's image id (a plain regular expression, which RE2 and Python read alike), checked
# here too so that a bad path segment never costs a call.
_IMAGE_ID = re.compile(IMAGE_ID_PATTERN)


async def add_pet(request: web.Request) -> web.Response:
    key = idempotency_key(request)
    pet = await read_body(request, PET, lambda value: pet_from_wire(value, require_id=False))
    reply = await call(
        request,
        request.config_dict[CLIENTS].pet.CreatePet,
        pet_service_pb2.CreatePetRequest(pet=pet, caller=request[PRINCIPAL].caller(), idempotency_key=key),
        service=SERVICE,
    )
    return _respond_pet(request, reply.pet, headers=replay_headers(reply.idempotent_replay))


def _images_path(pet_id: int) -> str:
    """Where the images of this pet are, under the base URL (each at this, a slash, its id)."""
    return API_PREFIX + IMAGE_PATH.split("/{imageId}", 1)[0].replace("{petId}", str(pet_id))


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


async def update_pet(request: web.Request) -> web.Response:
    pet = await read_body(request, PET, lambda value: pet_from_wire(value, require_id=True))
    try:
        reply = await call(
            request,
            request.config_dict[CLIENTS].pet.UpdatePet,
            pet_service_pb2.UpdatePetRequest(
                pet=pet,
                # Exactly the fields this representation has: one the body lacks is cleared (a
                # replace), one the gateway does not know is kept (docs/compatibility.md).
                update_mask=FieldMask(paths=PET_WRITTEN_FIELDS),
                caller=request[PRINCIPAL].caller(),
                precondition=if_match_precondition(request.headers.get(IF_MATCH)),
            ),
            service=SERVICE,
        )
    finally:
        request.config_dict[PET_CACHE].written(pet.id)  # before the answer leaves: read-your-writes
    return _respond_pet(request, reply.pet)


async def _list_pets(request: web.Request, query: pet_service_pb2.ListPetsRequest) -> web.Response:
    query.page_size, query.page_token = page_request(request.query)
    reply = await call(request, request.config_dict[CLIENTS].pet.ListPets, query, service=SERVICE)
    return respond(request, pets_to_wire(reply.pets), PETS, headers=next_page_headers(reply.next_page_token))


async def find_pets_by_status(request: web.Request) -> web.Response:
    names = query_values(request.query, "status")
    if not names:
        raise ApiError(400, f"status is required: one or more of {', '.join(PET_STATUSES)}")
    try:
        statuses = [parse_pet_status(name) for name in names]
    except InvalidRepresentation as exc:
        raise ApiError(400, str(exc)) from None
    return await _list_pets(request, pet_service_pb2.ListPetsRequest(statuses=statuses))


async def find_pets_by_tags(request: web.Request) -> web.Response:
    tags = query_values(request.query, "tags")
    if not tags:
        raise ApiError(400, "tags is required: one or more tag names")
    return await _list_pets(request, pet_service_pb2.ListPetsRequest(tag_names=tags))


async def get_pet(request: web.Request) -> web.Response:
    """From the cache while it is coherent, else read through (filling it when it may)."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    body_format = response_type(request).format
    cache = request.config_dict[PET_CACHE]
    entity = cache.get(pet_id, body_format)
    if entity is None:
        fill = cache.begin_fill(pet_id)
        try:
            reply = await call(
                request,
                request.config_dict[CLIENTS].pet.GetPet,
                pet_service_pb2.GetPetRequest(id=pet_id),
                service=SERVICE,
            )
            entity = encode_pet(reply.pet, body_format)
        finally:
            cache.end_fill(fill, body_format, entity)
    return respond_entity(request, entity.body, entity.etag)


async def update_pet_with_form(request: web.Request) -> web.Response:
    """Form fields name and status (both optional): only those given change."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    form = await read_form(request)
    invalid_status = current_operation(request).invalid_input_status
    pet = pet_pb2.Pet(id=pet_id)
    paths: list[str] = []
    name = _form_text(form, "name", invalid_status)
    if name is not None:
        pet.name = name
        paths.append("name")
    status = _form_text(form, "status", invalid_status)
    if status is not None:
        try:
            pet.status = parse_pet_status(status)
        except InvalidRepresentation as exc:
            raise ApiError(invalid_status, str(exc)) from None
        paths.append("status")
    clients = request.config_dict[CLIENTS]
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
            )
        finally:
            request.config_dict[PET_CACHE].written(pet_id)
    else:  # nothing to change (an empty mask would mean a full replace): still 404 if absent
        reply = await call(
            request,
            clients.pet.GetPet,
            pet_service_pb2.GetPetRequest(id=pet_id),
            service=SERVICE,
        )
        if if_match is not None and not matches_version(if_match, reply.pet.version):
            raise ApiError(412, f"pet {pet_id} was changed since the version given (If-Match)")
    return respond_message(request, str(pet_id))


def _form_text(form: MultiDictProxy[Any], name: str, invalid_status: int) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(invalid_status, f"{name} must be a text field")
    return value


async def delete_pet(request: web.Request) -> web.Response:
    pet_id = parse_id(request.match_info["petId"], "petId")
    try:
        await call(
            request,
            request.config_dict[CLIENTS].pet.DeletePet,
            pet_service_pb2.DeletePetRequest(id=pet_id, caller=request[PRINCIPAL].caller()),
            service=SERVICE,
        )
    finally:
        request.config_dict[PET_CACHE].written(pet_id)
    return respond_message(request, str(pet_id))


async def upload_image(request: web.Request) -> web.Response:
    """Multipart `file` (+ `additionalMetadata`). The bytes go to the pet service; nothing is
    written to disk under a client-chosen name and no URL is ever fetched."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    form = await read_form(request)
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
            request.config_dict[CLIENTS].pet.UploadPetImage,
            pet_service_pb2.UploadPetImageRequest(
                pet_id=pet_id,
                content_type=content_type,
                data=data,
                additional_metadata=metadata or "",
                file_name=file_name,
                caller=request[PRINCIPAL].caller(),
                images_base_url=public_base_url(request) + _images_path(pet_id),
            ),
            service=SERVICE,
        )
    finally:
        request.config_dict[PET_CACHE].written(pet_id)  # its photoUrls changed: read-your-writes
    shown = "null" if metadata is None else metadata  # what the classic server printed
    message = (
        f"additionalMetadata: {shown}\nimage {reply.image_id} stored, {reply.size_bytes} bytes, "
        f"{reply.media_type}, at {reply.photo_url}"
    )
    return respond_message(request, message)


async def get_pet_image(request: web.Request) -> web.Response:
    """An uploaded image, to anyone, in the media type it was stored with."""
    pet_id = parse_id(request.match_info["petId"], "petId")
    image_id = request.match_info["imageId"]
    if not _IMAGE_ID.fullmatch(image_id):
        raise ApiError(400, "Invalid ID supplied: imageId must be 32 lowercase hexadecimal digits")
    reply = await call(
        request,
        request.config_dict[CLIENTS].pet.GetPetImage,
        pet_service_pb2.GetPetImageRequest(pet_id=pet_id, image_id=image_id),
        service=SERVICE,
    )
    return image_response(request, image_id, reply.media_type, reply.data)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        method="POST",
        path="/pet",
        operation_id="addPet",
        tag="pet",
        summary="Add a new pet to the store",
        handler=add_pet,
        access=Access.STAFF,
        staff_refusal=CATALOGUE_STAFF_ONLY,
        consumes=BODY_MEDIA_TYPES,
        idempotent=True,
        overrides=INVALID_INPUT_IS_405,
        success=ok("successful operation: the stored pet", ref("Pet")),
        errors={400: "Malformed body", 405: "Invalid input", 409: "A pet with this id exists"},
        parameters=(body_parameter(ref("Pet"), "The pet to add; the store picks the id when none is given"),),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        method="PUT",
        path="/pet",
        operation_id="updatePet",
        tag="pet",
        summary="Update an existing pet",
        handler=update_pet,
        access=Access.STAFF,
        staff_refusal=CATALOGUE_STAFF_ONLY,
        consumes=BODY_MEDIA_TYPES,
        conditional_write=True,
        overrides=INVALID_INPUT_IS_405,
        success=ok("successful operation: the stored pet", ref("Pet")),
        errors={
            400: "Malformed body",
            404: PET_NOT_FOUND,
            405: "Validation exception (id is required)",
            409: PET_HELD,
        },
        parameters=(body_parameter(ref("Pet"), "The pet, with its id; every field is replaced"),),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        method="GET",
        path="/pet/findByStatus",
        operation_id="findPetsByStatus",
        tag="pet",
        summary="Finds Pets by status",
        handler=find_pets_by_status,
        access=Access.OPEN,
        success=PETS_RESPONSE,
        errors={400: "Invalid status value, limit or pageToken"},
        parameters=(
            {
                "name": "status",
                "in": "query",
                "description": "Status values to match: repeat the parameter or separate values by "
                "commas (status[]=a and status[0]=a are read too)",
                "required": True,
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "enum": list(PET_STATUSES)},
                "collectionFormat": "multi",
            },
            *PAGING,
        ),
        description="Pets in id order, a page at a time.",
    ),
    Operation(
        method="GET",
        path="/pet/findByTags",
        operation_id="findPetsByTags",
        tag="pet",
        summary="Finds Pets by tags",
        handler=find_pets_by_tags,
        access=Access.OPEN,
        success=PETS_RESPONSE,
        errors={400: "Invalid tag value, limit or pageToken"},
        parameters=(
            {
                "name": "tags",
                "in": "query",
                "description": "Tag names to match (any of them): repeat the parameter or separate by "
                "commas (tags[]=a and tags[0]=a are read too)",
                "required": True,
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TAG_NAME_FILTERS,
                "items": text_schema(TAG_FILTERS.items.string, minLength=TAG_FILTERS.items.string.min_len),
                "collectionFormat": "multi",
            },
            *PAGING,
        ),
        description="Pets in id order, a page at a time.",
    ),
    Operation(
        method="GET",
        path="/pet/{petId}",
        operation_id="getPetById",
        tag="pet",
        summary="Find pet by ID",
        handler=get_pet,
        access=Access.OPEN,
        conditional_read=True,
        success=ok("successful operation", ref("Pet")),
        errors={400: INVALID_ID, 404: PET_NOT_FOUND},
        parameters=(PET_ID,),
    ),
    Operation(
        method="POST",
        path="/pet/{petId}",
        operation_id="updatePetWithForm",
        tag="pet",
        summary="Updates a pet in the store with form data",
        handler=update_pet_with_form,
        access=Access.STAFF,
        staff_refusal=CATALOGUE_STAFF_ONLY,
        consumes=(FORM, MULTIPART),
        conditional_write=True,
        overrides=INVALID_INPUT_IS_405,
        success=ok_message("the pet's id as message"),
        errors={400: "Invalid ID or form supplied", 404: PET_NOT_FOUND, 405: "Invalid input", 409: PET_HELD},
        parameters=(
            PET_ID,
            {
                "name": "name",
                "in": "formData",
                "description": "New name of the pet",
                "required": False,
                "type": "string",
                "maxLength": MAX_PET_NAME_CHARS,
                "pattern": NAME_PATTERN,
            },
            {
                "name": "status",
                "in": "formData",
                "description": "New status of the pet",
                "required": False,
                "type": "string",
                "enum": list(PET_STATUSES),
            },
        ),
        description=f"Only the fields sent change. {STAFF_ONLY_NOTE}",
    ),
    Operation(
        method="DELETE",
        path="/pet/{petId}",
        operation_id="deletePet",
        tag="pet",
        summary="Deletes a pet",
        handler=delete_pet,
        access=Access.STAFF,
        staff_refusal=CATALOGUE_STAFF_ONLY,
        success=ok_message("the pet's id as message"),
        errors={400: INVALID_ID, 404: PET_NOT_FOUND, 409: PET_HELD},
        parameters=(PET_ID,),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        method="POST",
        path="/pet/{petId}/uploadImage",
        operation_id="uploadFile",
        tag="pet",
        summary="uploads an image",
        handler=upload_image,
        access=Access.STAFF,
        staff_refusal=CATALOGUE_STAFF_ONLY,
        consumes=(MULTIPART,),
        success=ok_message("the stored image's id and size in message"),
        errors={
            400: "Invalid ID, form, additionalMetadata or image (a PNG, JPEG, GIF or WebP that decodes "
            f"whole, at most {MAX_IMAGE_PIXELS} pixels), or a Host header that is no host",
            404: PET_NOT_FOUND,
            409: f"The pet has {MAX_IMAGES_PER_PET} images, or {MAX_PHOTO_URLS} photoUrls, already",
        },
        parameters=(
            PET_ID,
            {
                "name": "additionalMetadata",
                "in": "formData",
                "description": "Additional data to pass to server",
                "required": False,
                "type": "string",
                "maxLength": IMAGE_METADATA.max_len,
                "pattern": IMAGE_METADATA_PATTERN,
            },
            {
                "name": "file",
                "in": "formData",
                "description": "The image: PNG, JPEG, GIF or WebP, decoded before it is stored (its own "
                "Content-Type is not believed)",
                "required": True,
                "type": "file",
            },
        ),
        description=f"{STAFF_ONLY_NOTE} The image is served at /pet/{{petId}}/images/{{imageId}}; that URL, "
        "absolute, is added to the pet's photoUrls (the pet's version moves on) and named in message. "
        f"At most {MAX_IMAGES_PER_PET} images per pet; they are deleted with their pet.",
    ),
    Operation(
        method="GET",
        path=IMAGE_PATH,
        operation_id="getPetImage",
        tag="pet",
        summary="An uploaded image of a pet",
        handler=get_pet_image,
        access=Access.OPEN,
        conditional_read=True,
        produces=(*IMAGE_MEDIA_TYPES, *BODY_MEDIA_TYPES),
        success=ok(
            "The image, in the media type it was stored with",
            {"type": "string", "format": "binary"},
            {
                "Cache-Control": {"type": "string", "enum": [IMAGE_CACHE_CONTROL]},
                "X-Content-Type-Options": {
                    "type": "string",
                    "enum": [IMAGE_HEADERS["X-Content-Type-Options"]],
                },
            },
        ),
        errors={400: "Invalid petId or imageId", 404: "The pet has no such image"},
        parameters=(
            PET_ID,
            {
                "name": "imageId",
                "in": "path",
                "description": "ID of the image, as uploadFile named it",
                "required": True,
                "type": "string",
                "pattern": IMAGE_ID_PATTERN,
            },
        ),
        description="Open to anyone. An image never changes: its ETag holds for ever; any cache may keep it.",
    ),
)
