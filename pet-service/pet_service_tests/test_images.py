"""Uploads are decoded by Pillow: the format and the media type are the decoded image's, and
what only looks like an image, is cut short, or declares too many pixels is refused."""

from __future__ import annotations

import pytest

from petstore_common.contract_bounds import MAX_IMAGE_PIXELS
from petstore_common.errors import InvalidArgument
from petstore_pet.images import MAX_IMAGE_BYTES, NOT_AN_IMAGE, decoded_media_type

from .image_files import image_file, png_claiming


@pytest.mark.parametrize(
    ("image_format", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_each_accepted_format_is_stored_with_its_own_media_type(image_format: str, media_type: str) -> None:
    assert decoded_media_type(image_file(image_format)) == media_type


def test_the_largest_canvas_allowed_decodes() -> None:
    side = int(MAX_IMAGE_PIXELS**0.5)
    assert decoded_media_type(image_file("PNG", (side, side))) == "image/png"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, id="png-signature-then-zeros"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + b"<script>alert(1)</script>", id="png-signature-then-html"),
        pytest.param(image_file("PNG", (64, 64))[:-30], id="truncated-png"),
        pytest.param(image_file("JPEG", (64, 64))[:200], id="truncated-jpeg"),
        pytest.param(b"GIF89a", id="gif-signature-only"),
        pytest.param(b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8, id="webp-header-only"),
        pytest.param(image_file("BMP"), id="bmp"),
        pytest.param(image_file("TIFF"), id="tiff"),
        pytest.param(b"<svg xmlns='http://www.w3.org/2000/svg'/>", id="svg"),
        pytest.param(b"hello", id="text"),
    ],
)
def test_what_does_not_decode_as_an_accepted_format_is_refused(data: bytes) -> None:
    with pytest.raises(InvalidArgument) as caught:
        decoded_media_type(data)
    assert caught.value.message == NOT_AN_IMAGE


@pytest.mark.parametrize(("width", "height"), [(4097, 4096), (100_000, 100_000), (2**31 - 1, 2**31 - 1)])
def test_a_canvas_over_the_pixel_bound_is_refused_before_decoding(width: int, height: int) -> None:
    with pytest.raises(InvalidArgument) as caught:
        decoded_media_type(png_claiming(width, height))
    assert (
        caught.value.message == f"image is {width}x{height}: at most {MAX_IMAGE_PIXELS} pixels are accepted"
    )


def test_empty_and_oversized_files_are_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"^image data is required$"):
        decoded_media_type(b"")
    with pytest.raises(InvalidArgument, match=rf"^image must be at most {MAX_IMAGE_BYTES} bytes$"):
        decoded_media_type(image_file() + b"\x00" * MAX_IMAGE_BYTES)
