"""Real images, one pixel each: the pet service decodes every upload and keeps only what decodes
whole, stored with the decoded format's media type (made with Pillow)."""

from __future__ import annotations

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde"
    b"\x00\x00\x00\x0cIDATx\x9cc8ad\x04\x00\x02\xf2\x01-\xacj'\xeb\x00\x00\x00\x00IEND\xaeB`\x82"
)
GIF = (
    b"GIF87a\x01\x00\x01\x00\x81\x00\x00\xc822\x00\x00\x00\x00\x00\x00\x00\x00\x00,\x00\x00\x00\x00"
    b"\x01\x00\x01\x00\x00\x08\x04\x00\x01\x04\x04\x00;"
)
NOT_AN_IMAGE = "file is not a complete PNG, JPEG, GIF or WebP image"
"""The pet service's answer to anything else, whatever Content-Type the part claims."""
