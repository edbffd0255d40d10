"""How many times an account's password may be changed: each change costs argon2 work (the
password sent is verified against the current hash, then a new one is made), so a customer who
repeats them would spend the hashing lane everybody's sign-ups and changes share.

Counted per account in the user store (every replica shares the count): PER_WINDOW changes per
WINDOW_SECONDS, the window starting at the first change after the last one ended. A password
sent again unchanged (a profile edit of a classic client) counts too: telling it apart costs a
hash. Staff are not counted (their keys are trusted and rate-limited by the gateway).
"""

from __future__ import annotations

PER_WINDOW = 6
WINDOW_SECONDS = 3600


def too_many_changes(wait_seconds: int) -> str:
    return f"too many password changes for this user; retry after {wait_seconds} s"
