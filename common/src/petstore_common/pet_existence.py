"""The one bound of PetService.FindExistingPets, shared by the pet service (which refuses more)
and the order service (which never sends more)."""

MAX_IDS_PER_CHECK = 1_000
"""Pet ids one FindExistingPets call may ask about: one `$in` query of at most 8 KB of ids."""
