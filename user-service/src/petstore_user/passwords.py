"""Argon2id password hashes, computed off the event loop on a small, bounded thread pool.

Hashing is deliberately slow and memory-hungry; run on the event loop it would stall every
other call. The pool (not asyncio.to_thread's default executor, which is sized from the
host's CPU count) caps how many hashes run at once, so a burst of logins cannot push the
process past its memory limit: MAX_CONCURRENT_HASHES x PARAMETERS.memory_cost KiB at most.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import Parameters, PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from petstore.user.v1 import user_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.rules import field_rules
from petstore_user.common_passwords import is_common

log = logging.getLogger(__name__)

PARAMETERS = Parameters(
    type=Type.ID,
    version=19,
    salt_len=16,
    hash_len=32,
    time_cost=2,
    memory_cost=19_456,  # KiB: OWASP's minimum for argon2id with t=2, p=1
    parallelism=1,
)
"""Cheap enough for a small container under load (tens of ms per hash), still sane. Hashes made
with other parameters keep verifying and are upgraded at the next successful login."""

MAX_CONCURRENT_HASHES = 2
"""Hashes computed at once per process (about 38 MiB of argon2 memory at most)."""

_NEW_PASSWORD = field_rules(user_service_pb2.CreateUserRequest, "password").string
MIN_PASSWORD_CHARS = _NEW_PASSWORD.min_len
"""NIST SP 800-63B 5.1.1.2: at least 8 characters for a password the user chooses (the
contract's rule on a new password, read from the proto)."""
MAX_PASSWORD_CHARS = _NEW_PASSWORD.max_len
"""Long enough for any passphrase, short enough to hash cheaply (the contract's rule too). Login
takes the shorter passwords accounts had before the policy: they keep working until the next
change, which must meet it; a longer one than this is no stored password."""

T = TypeVar("T")


_M_MMAP_THRESHOLD = -3
"""glibc's mallopt() parameter number for the mmap threshold."""


def map_hash_memory_directly(threshold_bytes: int = 128 * 1024) -> bool:
    """Have glibc serve argon2's working memory (memory_cost KiB per hash) with mmap, so it goes
    back to the OS when each hash ends. Left alone, glibc raises its mmap threshold when the
    first such block is freed, and from then on every hashing thread keeps about 19 MiB in its
    arena for good. Process-wide; returns False where the C library has no mallopt."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold_bytes))


def check_password(password: str, field: str = "password", *, username: str = "") -> None:
    """A new password (sign-up or change), once its field rules passed (any characters, 8..128
    of them): not a common one and not the username. No composition rules and no expiry, as
    NIST SP 800-63B advises."""
    if is_common(password):
        raise InvalidArgument(f"{field} is one of the most common passwords: choose another")
    if username and password.casefold() == username.casefold():
        raise InvalidArgument(f"{field} must not be the username")


class Passwords:
    """Hash and verify passwords without blocking the event loop; close() ends the pool."""

    def __init__(self, parameters: Parameters = PARAMETERS, *, workers: int = MAX_CONCURRENT_HASHES) -> None:
        self._hasher = PasswordHasher.from_parameters(parameters)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="argon2")

    async def hash(self, password: str) -> str:
        """A fresh salted hash of `password` in PHC string form ($argon2id$...)."""
        return await self._run(self._hasher.hash, password)

    async def verify(self, password_hash: str, password: str) -> bool:
        """Whether `password` is the one `password_hash` was made from."""
        return await self._run(self._verify, password_hash, password)

    def needs_rehash(self, password_hash: str) -> bool:
        """True when the hash was made with other parameters than the current ones (cheap)."""
        return self._hasher.check_needs_rehash(password_hash)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _run(self, function: Callable[..., T], *args: str) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, function, *args)

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except VerifyMismatchError:
            return False
        except (VerificationError, InvalidHashError):
            # A stored hash we cannot read: the password cannot be checked, so it is wrong.
            log.warning("unusable password hash")
            return False
