"""Bounds that a service enforces and another service (or the gateway) must respect or
describe, each written once and read by both sides, so that they cannot drift apart. Those that
bound a field are rules on it in the protos, read from there; the rest are written here."""

from petstore.pet.v1 import pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore_common.rules import field_rules

MAX_IDS_PER_CHECK = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated.max_items
"""Pet ids one PetService.FindExistingPets call may ask about: the pet service refuses more, the
order service never sends more."""

MAX_USERS_PER_BATCH = field_rules(user_service_pb2.CreateUsersRequest, "users").repeated.max_items
"""Users one UserService.CreateUsers call (HTTP createWithArray / createWithList) may carry: the
user service refuses more, the gateway never sends more (and describes the bound)."""

MAX_IMAGES_PER_PET = 16
"""Images one pet keeps: the pet service refuses one more (FAILED_PRECONDITION)."""
MAX_IMAGE_PIXELS = 4096 * 4096
"""Width times height of an uploaded image: the pet service refuses a larger canvas before it
decodes a pixel (a small file may declare a huge one)."""
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""What an uploaded image may be: the pet service decodes it as one of these, or refuses it."""
