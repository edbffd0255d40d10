"""How long a login waits once passwords were wrong: per account *and* source, so a stranger's
guesses cannot lock the owner out (OWASP Authentication Cheat Sheet, "Login Throttling").

A source is a digest of the client address the gateway derived (client_sources). Two counts,
both in the user store, so every gateway and replica shares them and they survive restarts:

- per (account, source): the first FREE_FAILURES wrong passwords from a source cost nothing;
  each further one doubles that source's wait before its next attempt, from 1 s up to
  MAX_WAIT_SECONDS. A good password from the source clears its count.
- per account, all sources together: a looser bound, ACCOUNT_FREE_FAILURES, past which the
  same doubling wait applies, but only to sources that have not logged in to the account
  within KNOWN_SOURCE_SECONDS. Guessing spread over many addresses (credential stuffing, or
  browsers made to send guesses) slows down for every new source, while the owner's usual
  source is never held by anybody else's guesses. A good login does not clear this count (it
  would hand a distributed guesser a fresh allowance); it is forgotten after a quiet day.

Waits end by themselves and are capped low on purpose: nobody is ever locked out for good, and
an owner on a new device waits at most MAX_WAIT_SECONDS. A request with no address (an older
gateway) is the UNKNOWN source: it never becomes a known one. Counts with no failure for
FORGET_AFTER_SECONDS start again from zero. The servicer takes one account's attempts in turn,
so parallel guesses all read fresh counts.
"""

from __future__ import annotations

import math

from petstore_user.storage.base import LoginFailures, LoginSource

FREE_FAILURES = 5
"""Free wrong passwords per (account, source)."""
ACCOUNT_FREE_FAILURES = 20
"""Free wrong passwords per account, over all sources, before unknown sources wait."""
MAX_WAIT_SECONDS = 300
FORGET_AFTER_SECONDS = 24 * 3600
KNOWN_SOURCE_SECONDS = 30 * 24 * 3600
"""A source that logged in to an account this recently is the owner's: exempt from the
account-wide wait."""


def wait_after(failures: int, free: int = FREE_FAILURES) -> int:
    """Seconds to wait after the `failures`-th wrong password in a row, `free` of them free."""
    if failures < free:
        return 0
    return int(min(2 ** (failures - free), MAX_WAIT_SECONDS))


def seconds_to_wait(failures: LoginFailures, now: float, free: int = FREE_FAILURES) -> int:
    """Whole seconds before the next attempt of one count (0: it may now)."""
    if failures.count == 0 or failures.last_at <= now - FORGET_AFTER_SECONDS:
        return 0
    left = failures.last_at + wait_after(failures.count, free) - now
    return max(0, math.ceil(left))


def is_known(source: LoginSource, now: float) -> bool:
    return source.succeeded_at > 0 and source.succeeded_at > now - KNOWN_SOURCE_SECONDS  # 0: never


def login_wait(account: LoginFailures, source: LoginSource, now: float) -> int:
    """Whole seconds before `source` may try the account's password again (0: it may now)."""
    own = seconds_to_wait(source.failures, now)
    if is_known(source, now):
        return own
    return max(own, seconds_to_wait(account, now, ACCOUNT_FREE_FAILURES))


def too_many_failures(wait_seconds: int) -> str:
    return f"too many wrong passwords for this user; retry after {wait_seconds} s"
