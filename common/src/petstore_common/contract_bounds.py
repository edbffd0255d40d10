"""Bounds that a service enforces and another service (or the gateway) must respect. Each is
written once, as a rule on its field in the protos, and read from there by both sides, so that
they cannot drift apart."""

from petstore.pet.v1 import pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore_common.rules import field_rules

MAX_IDS_PER_CHECK = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated.max_items
"""Pet ids one PetService.FindExistingPets call may ask about: the pet service refuses more, the
order service never sends more."""

MAX_USERS_PER_BATCH = field_rules(user_service_pb2.CreateUsersRequest, "users").repeated.max_items
"""Users one UserService.CreateUsers call (HTTP createWithArray / createWithList) may carry: the
user service refuses more, the gateway never sends more (and describes the bound)."""
