"""The API description (Swagger 2.0 and OpenAPI 3.0, built once from one source) and Swagger UI.

This module only names the routes, so that the middlewares can tell them apart without
importing the builders.
"""

from __future__ import annotations

SWAGGER_PATH = "/v2/swagger.json"
OPENAPI_PATH = "/v2/openapi.json"
DOCS_PATH = "/v2/docs"
DOCS_ASSET_PATH = "/v2/docs/{asset}"
ENTRY_PATHS = ("/", "/v2", "/v2/")
"""Where a person typing the address lands first: sent on to the docs."""

DOCUMENT_ROUTES = frozenset(
    {SWAGGER_PATH, OPENAPI_PATH, DOCS_PATH, DOCS_PATH + "/", DOCS_ASSET_PATH, *ENTRY_PATHS}
)
"""Route templates that answer in their own media type whatever Accept says (never a 406)."""
