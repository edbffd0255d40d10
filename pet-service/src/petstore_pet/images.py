"""Uploaded images are decoded before they are stored: only what really is an image of an
accepted format is kept, and its media type is the decoded format's, never the client's claim."""

from __future__ import annotations

import io
from collections.abc import Mapping

from PIL import Image

from petstore_common.contract_bounds import IMAGE_MEDIA_TYPES, MAX_IMAGE_PIXELS
from petstore_common.errors import InvalidArgument

MAX_IMAGE_BYTES = 1024 * 1024
# MAX_IMAGE_PIXELS bounds a decompression bomb: at four bytes a pixel, one decode holds at most
# 64 MiB.
MEDIA_TYPES: Mapping[str, str] = {
    media_type.split("/")[1].upper(): media_type for media_type in IMAGE_MEDIA_TYPES
}
"""Pillow's format name (PNG, JPEG, GIF, WEBP) -> the media type an image of it is stored and
served with."""
NOT_AN_IMAGE = "file is not a complete PNG, JPEG, GIF or WebP image"

# Pillow's own bomb check warns, or raises, at a size of its choosing while the header is read;
# ours is MAX_IMAGE_PIXELS, checked on the header before a single pixel is decoded.
Image.MAX_IMAGE_PIXELS = None


def decoded_media_type(data: bytes) -> str:
    """The media type of `data` once it has decoded whole; InvalidArgument otherwise. Takes a
    few milliseconds to a second of CPU: call it off the event loop."""
    if not data:
        raise InvalidArgument("image data is required")
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidArgument(f"image must be at most {MAX_IMAGE_BYTES} bytes")
    try:
        with Image.open(io.BytesIO(data), formats=list(MEDIA_TYPES)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise InvalidArgument(
                    f"image is {width}x{height}: at most {MAX_IMAGE_PIXELS} pixels are accepted"
                )
            image.load()  # decodes every pixel (of the first frame): a truncated file fails here
            media_type = MEDIA_TYPES[str(image.format)]
    except InvalidArgument:
        raise
    except Exception:
        raise InvalidArgument(NOT_AN_IMAGE) from None
    return media_type
