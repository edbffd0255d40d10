"""Bounds that a service enforces and another service (or the gateway) must respect: written
once, here, and imported by both sides, so that they cannot drift apart."""

MAX_IDS_PER_CHECK = 1_000
"""Pet ids one PetService.FindExistingPets call may ask about (one `$in` query of at most 8 KB of
ids): the pet service refuses more, the order service never sends more."""

MAX_USERS_PER_BATCH = 100
"""Users one UserService.CreateUsers call (HTTP createWithArray / createWithList) may carry. Each
new password is hashed with argon2id, about 35 ms of CPU on two hashing threads, so 100 users
take about two seconds, inside the gateway's 5 s deadline; 1,000 would not be."""
