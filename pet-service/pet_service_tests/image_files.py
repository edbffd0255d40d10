"""Real image files, made with Pillow, for the tests that upload them."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image


def image_file(image_format: str = "PNG", size: tuple[int, int] = (2, 3)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 120, 40)).save(buffer, format=image_format)
    return buffer.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` pixels, with a few bytes of pixel data: a
    decompression bomb's shape, refused before anything is decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )
