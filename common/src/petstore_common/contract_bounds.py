"""Bounds that a service enforces and the gateway must respect or describe that no proto field
carries, each written once and read by both sides, so that they cannot drift apart. A bound on a
field is a rule on it in its proto, and each side reads it from there (petstore_common.rules)."""

MAX_IMAGES_PER_PET = 16
"""Images one pet keeps: the pet service refuses one more (FAILED_PRECONDITION)."""
MAX_IMAGE_PIXELS = 4096 * 4096
"""Width times height of an uploaded image: the pet service refuses a larger canvas before it
decodes a pixel (a small file may declare a huge one)."""
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""What an uploaded image may be: the pet service decodes it as one of these, or refuses it."""
