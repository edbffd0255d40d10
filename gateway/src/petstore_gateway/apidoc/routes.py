"""The description (Swagger 2.0 and OpenAPI 3.0) and Swagger UI from locally bundled assets.

All open, and all answering in their own media type whatever Accept says. The page refers
to everything by relative URL (assets under docs/, the description beside it), so it works
behind any host, port or path prefix; nothing is loaded from anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson
from aiohttp import web
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from petstore_gateway.apidoc.documents import ApiDocuments
from petstore_gateway.apidoc.openapi import to_openapi
from petstore_gateway.apidoc.swagger import build_swagger
from petstore_gateway.errors import ApiError
from petstore_gateway.keys import API_DOCUMENTS
from petstore_gateway.operations import API_PREFIX, JSON, Operation

# Under API_PREFIX, in the API's sub-application.
SWAGGER_PATH = "/swagger.json"
OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"
DOCS_ASSET_PATH = "/docs/{asset}"
SWAGGER_UI_DIR = Path(str(swagger_ui_path))
SWAGGER_UI_ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-standalone-preset.js": "text/javascript",
    "favicon-16x16.png": "image/png",
    "favicon-32x32.png": "image/png",
}
"""The files of the bundle the page uses; nothing else there is served (its sample page points
at petstore.swagger.io)."""
INITIALIZER = "petstore-initializer.js"
ASSET_CACHE_SECONDS = 3600

DOCS_PAGE = """\
<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Petstore API</title>
    <link rel="stylesheet" type="text/css" href="docs/swagger-ui.css">
    <link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="docs/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js" charset="utf-8"></script>
    <script src="docs/swagger-ui-standalone-preset.js" charset="utf-8"></script>
    <script src="docs/petstore-initializer.js" charset="utf-8"></script>
  </body>
</html>
"""

DOCS_PAGE_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",  # the bundle and the initializer, served files: no inline script
        # Swagger UI sets inline styles on what it renders; styles run no code.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",  # its stylesheet's icons are data: URLs
        "connect-src 'self'",  # the description, and "Try it out" against this API
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",  # no page may frame it (clickjacking)
    )
)
"""The docs page's Content-Security-Policy: it loads nothing from anywhere else."""

# validatorUrl null: the default sends the description to validator.swagger.io.
INITIALIZER_SCRIPT = """\
window.onload = function () {
  window.ui = SwaggerUIBundle({
    urls: [
      { url: "openapi.json", name: "OpenAPI 3.0" },
      { url: "swagger.json", name: "Swagger 2.0" }
    ],
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout"
  });
};
"""


def build_documents(operations: Iterable[Operation], *, max_body_bytes: int) -> ApiDocuments:
    swagger = build_swagger(operations, max_body_bytes=max_body_bytes)
    return ApiDocuments(swagger=orjson.dumps(swagger), openapi=orjson.dumps(to_openapi(swagger)))


routes = web.RouteTableDef()
"""The description and the docs, under API_PREFIX."""
entry_routes = web.RouteTableDef()
"""The host's root and API_PREFIX itself, which lead to the docs."""


def _json(body: bytes) -> web.Response:
    return web.Response(body=body, content_type=JSON, headers={"Cache-Control": "no-cache"})


@routes.get(SWAGGER_PATH)
async def swagger_json(request: web.Request) -> web.Response:
    return _json(request.config_dict[API_DOCUMENTS].swagger)


@routes.get(OPENAPI_PATH)
async def openapi_json(request: web.Request) -> web.Response:
    return _json(request.config_dict[API_DOCUMENTS].openapi)


@routes.get(DOCS_PATH)
async def docs_page(request: web.Request) -> web.Response:
    return web.Response(
        text=DOCS_PAGE,
        content_type="text/html",
        headers={"Cache-Control": "no-cache", "Content-Security-Policy": DOCS_PAGE_POLICY},
    )


@routes.get(DOCS_PATH + "/")
async def docs_page_with_slash(request: web.Request) -> web.Response:
    """The page's relative URLs need it without the slash: send the browser there."""
    raise web.HTTPFound("../docs")


async def entry(request: web.Request) -> web.Response:
    """The base URL itself (or the host's root) leads to the docs, rather than a 404."""
    raise web.HTTPFound(API_PREFIX + DOCS_PATH)


entry_routes.get("/")(entry)
entry_routes.get(API_PREFIX)(entry)
routes.get("/")(entry)


@routes.get(DOCS_ASSET_PATH)
async def docs_asset(request: web.Request) -> web.StreamResponse:
    asset = request.match_info["asset"]
    cache = {"Cache-Control": f"public, max-age={ASSET_CACHE_SECONDS}"}
    if asset == INITIALIZER:
        return web.Response(text=INITIALIZER_SCRIPT, content_type="text/javascript", headers=cache)
    content_type = SWAGGER_UI_ASSETS.get(asset)
    if content_type is None:
        raise ApiError(404, "no such resource")
    return web.FileResponse(SWAGGER_UI_DIR / asset, headers={**cache, "Content-Type": content_type})
