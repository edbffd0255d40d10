"""OpenAPI 3.0 derived from the Swagger 2.0 document, so the two can never disagree.

Only what `swagger.py` uses is converted: body and formData parameters become a requestBody
per consumed media type, response schemas and headers move under content and schema,
`#/definitions/` becomes `#/components/schemas/`, and an apiKey named Authorization (Swagger
2.0's stand-in for a bearer token) becomes the `http` `bearer` scheme it stands for.
"""

from __future__ import annotations

from typing import Any

from petstore_gateway.operations import Json

OPENAPI_VERSION = "3.0.3"
_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
)
_COLLECTION_STYLES = {"multi": ("form", True), "csv": ("form", False)}


def to_openapi(swagger: Json) -> Json:
    if swagger.get("swagger") != "2.0":
        raise ValueError("not a Swagger 2.0 document")
    document: Json = {
        "openapi": OPENAPI_VERSION,
        "info": swagger["info"],
        "servers": [{"url": swagger.get("basePath", "/")}],
        "tags": swagger.get("tags", []),
        "paths": {
            path: {method: _operation(operation, swagger) for method, operation in item.items()}
            for path, item in swagger["paths"].items()
        },
        "components": {
            "schemas": swagger.get("definitions", {}),
            "securitySchemes": {
                name: _security_scheme(scheme)
                for name, scheme in swagger.get("securityDefinitions", {}).items()
            },
        },
    }
    converted: Json = _rewrite_refs(document)
    return converted


def _operation(operation: Json, swagger: Json) -> Json:
    consumes = _media_types("consumes", operation, swagger)
    produces = _media_types("produces", operation, swagger)
    converted: Json = {
        key: operation[key] for key in ("tags", "summary", "description", "operationId") if key in operation
    }
    parameters = operation.get("parameters", [])
    plain = [_parameter(p) for p in parameters if p["in"] not in ("body", "formData")]
    if plain:
        converted["parameters"] = plain
    body = [p for p in parameters if p["in"] == "body"]
    form = [p for p in parameters if p["in"] == "formData"]
    if body:
        (parameter,) = body
        converted["requestBody"] = {
            "description": parameter.get("description", ""),
            "required": parameter.get("required", False),
            "content": {media_type: {"schema": parameter["schema"]} for media_type in consumes},
        }
    elif form:
        schema: Json = {"type": "object", "properties": {p["name"]: _form_property(p) for p in form}}
        required = [p["name"] for p in form if p.get("required")]
        if required:
            schema["required"] = required
        converted["requestBody"] = {
            "required": bool(required),
            "content": {media_type: {"schema": schema} for media_type in consumes},
        }
    converted["responses"] = {
        status: _response(response, produces) for status, response in operation["responses"].items()
    }
    if "security" in operation:
        converted["security"] = operation["security"]
    return converted


def _security_scheme(scheme: Json) -> Json:
    if (
        scheme.get("type") == "apiKey"
        and scheme.get("in") == "header"
        and scheme.get("name") == "Authorization"
    ):
        converted: Json = {"type": "http", "scheme": "bearer"}
        if "description" in scheme:
            converted["description"] = scheme["description"]
        return converted
    return dict(scheme)


def _media_types(key: str, operation: Json, swagger: Json) -> list[str]:
    """The operation's own list, else the document's."""
    found = operation[key] if key in operation else swagger.get(key)
    return [str(media_type) for media_type in found or ()]


def _schema_of(item: Json) -> Json:
    return {key: item[key] for key in _SCHEMA_KEYS if key in item}


def _parameter(parameter: Json) -> Json:
    converted: Json = {"name": parameter["name"], "in": parameter["in"]}
    if "description" in parameter:
        converted["description"] = parameter["description"]
    converted["required"] = bool(parameter.get("required")) or parameter["in"] == "path"
    if "collectionFormat" in parameter:
        converted["style"], converted["explode"] = _COLLECTION_STYLES[parameter["collectionFormat"]]
    converted["schema"] = _schema_of(parameter)
    return converted


def _form_property(parameter: Json) -> Json:
    schema = {"type": "string", "format": "binary"} if parameter["type"] == "file" else _schema_of(parameter)
    if "description" in parameter:
        schema["description"] = parameter["description"]
    return schema


def _response(response: Json, produces: list[str]) -> Json:
    converted: Json = {"description": response["description"]}
    if "headers" in response:
        converted["headers"] = {
            name: {
                **({"description": header["description"]} if "description" in header else {}),
                "schema": _schema_of(header),
            }
            for name, header in response["headers"].items()
        }
    if "schema" in response:
        # Bytes (an image) go out in the image types the operation produces, documents in the others.
        schema = response["schema"]
        binary = schema.get("format") == "binary"
        types = [t for t in produces if t.startswith("image/") == binary]
        converted["content"] = {media_type: {"schema": schema} for media_type in types}
    return converted


def _rewrite_refs(value: Any) -> Any:
    """A deep copy with every Swagger 2.0 reference pointing at its OpenAPI 3.0 place."""
    if isinstance(value, dict):
        return {
            key: (
                item.replace("#/definitions/", "#/components/schemas/", 1)
                if key == "$ref" and isinstance(item, str)
                else _rewrite_refs(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rewrite_refs(item) for item in value]
    return value
