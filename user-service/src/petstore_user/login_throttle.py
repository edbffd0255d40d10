"""How long an account waits between password guesses once several were wrong.

Counted per account in the user store, so every gateway and every replica of this service
shares one count, it survives restarts, and no amount of other traffic can evict it. The
first FREE_FAILURES wrong passwords cost nothing; each further one doubles the wait before
the next attempt, from 1 s up to MAX_WAIT_SECONDS. The wait ends by itself, a good password
clears the count, and a count with no failure for FORGET_AFTER_SECONDS starts again from zero.
The wait is capped low on purpose: whoever guesses can delay the owner by at most that much.
The servicer takes one account's attempts in turn, so parallel guesses all read a fresh count.
"""

from __future__ import annotations

import math

from petstore_user.storage.base import LoginFailures

FREE_FAILURES = 5
MAX_WAIT_SECONDS = 300
FORGET_AFTER_SECONDS = 24 * 3600


def wait_after(failures: int) -> int:
    """Seconds an account waits after its `failures`-th wrong password in a row."""
    if failures < FREE_FAILURES:
        return 0
    return int(min(2 ** (failures - FREE_FAILURES), MAX_WAIT_SECONDS))


def seconds_to_wait(failures: LoginFailures, now: float) -> int:
    """Whole seconds before the account may try again (0: it may now)."""
    if failures.count == 0 or failures.last_at <= now - FORGET_AFTER_SECONDS:
        return 0
    left = failures.last_at + wait_after(failures.count) - now
    return max(0, math.ceil(left))


def too_many_failures(wait_seconds: int) -> str:
    return f"too many wrong passwords for this user; retry after {wait_seconds} s"
