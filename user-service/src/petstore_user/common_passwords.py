"""The common passwords a new password may not be: the 30,000 of zxcvbn's "passwords" list
(the most frequent in leaked password sets, as zxcvbn ships them, lower case), compared
without regard to case. NIST SP 800-63B 5.1.1.2 asks for exactly this check of new passwords.
"""

from __future__ import annotations

from functools import cache

from zxcvbn.frequency_lists import FREQUENCY_LISTS  # type: ignore[import-untyped]

LIST_NAME = "passwords"


@cache
def common_passwords() -> frozenset[str]:
    """The list, built once (a few MB); the service builds it at start, not on a request."""
    return frozenset(FREQUENCY_LISTS[LIST_NAME])


def is_common(password: str) -> bool:
    return password.casefold() in common_passwords()
