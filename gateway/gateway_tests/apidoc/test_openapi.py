from __future__ import annotations

from typing import Any

import orjson
import pytest

from petstore_gateway.apidoc.openapi import to_openapi
from petstore_gateway.apidoc.swagger import build_swagger
from petstore_gateway.routes import OPERATIONS


def _swagger(operation: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "basePath": "/v2",
        "paths": {"/thing/{id}": {"post": operation}},
        "definitions": {"Thing": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Thing"}}}},
        **extra,
    }


def _converted(operation: dict[str, Any], **extra: Any) -> dict[str, Any]:
    converted: dict[str, Any] = to_openapi(_swagger(operation, **extra))["paths"]["/thing/{id}"]["post"]
    return converted


def test_a_body_parameter_becomes_a_request_body_per_consumed_type() -> None:
    operation = _converted(
        {
            "consumes": ["application/json", "application/xml"],
            "parameters": [
                {"in": "body", "name": "body", "required": True, "schema": {"$ref": "#/definitions/Thing"}}
            ],
            "responses": {"200": {"description": "ok"}},
        }
    )
    assert "parameters" not in operation
    schema = {"$ref": "#/components/schemas/Thing"}
    assert operation["requestBody"] == {
        "description": "",
        "required": True,
        "content": {"application/json": {"schema": schema}, "application/xml": {"schema": schema}},
    }


def test_form_parameters_become_one_object_and_files_binary() -> None:
    operation = _converted(
        {
            "consumes": ["multipart/form-data"],
            "parameters": [
                {"in": "path", "name": "id", "required": True, "type": "integer", "minimum": 1},
                {"in": "formData", "name": "note", "type": "string", "maxLength": 5, "description": "a note"},
                {"in": "formData", "name": "file", "type": "file", "required": True},
            ],
            "responses": {"200": {"description": "ok"}},
        }
    )
    assert operation["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}}
    ]
    assert operation["requestBody"] == {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "note": {"type": "string", "maxLength": 5, "description": "a note"},
                        "file": {"type": "string", "format": "binary"},
                    },
                    "required": ["file"],
                }
            }
        },
    }


@pytest.mark.parametrize(("collection", "explode"), [("multi", True), ("csv", False)])
def test_collection_formats_become_styles(collection: str, explode: bool) -> None:
    operation = _converted(
        {
            "parameters": [
                {
                    "in": "query",
                    "name": "tags",
                    "required": True,
                    "type": "array",
                    "items": {"type": "string"},
                    "collectionFormat": collection,
                }
            ],
            "responses": {"200": {"description": "ok"}},
        }
    )
    (parameter,) = operation["parameters"]
    assert (parameter["style"], parameter["explode"]) == ("form", explode)
    assert parameter["schema"] == {"type": "array", "items": {"type": "string"}}


def test_responses_get_content_per_produced_type_and_header_schemas() -> None:
    operation = _converted(
        {
            "parameters": [],
            "responses": {
                "200": {
                    "description": "ok",
                    "schema": {"$ref": "#/definitions/Thing"},
                    "headers": {"X-Next": {"type": "string", "description": "more"}},
                },
                "404": {"description": "missing"},
            },
        },
        produces=["application/json"],
    )
    assert operation["responses"] == {
        "200": {
            "description": "ok",
            "headers": {"X-Next": {"description": "more", "schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}},
        },
        "404": {"description": "missing"},
    }


def test_servers_components_and_no_reference_left_behind() -> None:
    document = to_openapi(build_swagger(OPERATIONS, max_body_bytes=1024))
    assert document["openapi"] == "3.0.3"
    assert document["servers"] == [{"url": "/v2"}]
    assert b"#/definitions/" not in orjson.dumps(document)
    assert "Pet" in document["components"]["schemas"]


def test_only_swagger_2_is_converted() -> None:
    with pytest.raises(ValueError, match=r"Swagger 2\.0"):
        to_openapi({"openapi": "3.0.3"})


def test_an_authorization_api_key_becomes_http_bearer_and_other_schemes_stay() -> None:
    swagger = _swagger(
        {"responses": {}},
        securityDefinitions={
            "token": {"type": "apiKey", "name": "Authorization", "in": "header", "description": "d"},
            "key": {"type": "apiKey", "name": "api_key", "in": "header"},
            "query": {"type": "apiKey", "name": "Authorization", "in": "query"},
        },
    )
    assert to_openapi(swagger)["components"]["securitySchemes"] == {
        "token": {"type": "http", "scheme": "bearer", "description": "d"},
        "key": {"type": "apiKey", "name": "api_key", "in": "header"},
        "query": {"type": "apiKey", "name": "Authorization", "in": "query"},
    }
