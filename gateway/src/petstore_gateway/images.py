"""How a stored pet image is served: its own media type whatever Accept says, never sniffed,
cached by anyone for as long as they like (an image id names the same bytes for ever)."""

from __future__ import annotations

from aiohttp import web

from petstore_gateway.etags import ETAG, IF_NONE_MATCH, none_match

IMAGE_CACHE_CONTROL = "public, max-age=31536000, immutable"
IMAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": IMAGE_CACHE_CONTROL,
    # Opened on its own, an image can run nothing and load nothing, whatever its bytes hold.
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


def image_etag(image_id: str) -> str:
    """Strong: the id is new for every upload and its bytes never change."""
    return f'"{image_id}"'


def image_response(request: web.Request, image_id: str, media_type: str, data: bytes) -> web.Response:
    etag = image_etag(image_id)
    if none_match(request.headers.get(IF_NONE_MATCH), etag):
        return web.Response(status=304, headers={ETAG: etag, **IMAGE_HEADERS})
    return web.Response(body=data, headers={"Content-Type": media_type, ETAG: etag, **IMAGE_HEADERS})
