"""Argon2id password hashes, computed off the event loop in two small, bounded lanes.

Hashing is deliberately slow and memory-hungry; run on the event loop it would stall every
other call. Each lane has its own threads (not asyncio.to_thread's default executor, which is
sized from the host's CPU count), so at most MAX_CONCURRENT_HASHES x PARAMETERS.memory_cost KiB
of argon2 memory is in use, and its own queue bound: a request that finds its lane's queue full
is UNAVAILABLE at once (the gateway answers 503 with Retry-After) instead of waiting behind it.

The LOGIN lane verifies passwords at login (and upgrades old hashes there); the NEW_PASSWORD lane
hashes new passwords (sign-ups, bulk creates, password changes) and verifies a password sent
again on a profile edit. A flood of one kind fills its own lane only: a login never waits
behind sign-ups or password changes, nor they behind a login burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from argon2 import Parameters, PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from petstore.user.v1 import user_service_pb2
from petstore_common.errors import InvalidArgument, Unavailable
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


@dataclass(frozen=True, slots=True)
class LaneBound:
    """How many hashes of one lane run at once (its threads) and how many more may wait."""

    name: str
    workers: int
    queued: int

    @property
    def admitted(self) -> int:
        return self.workers + self.queued


LOGIN_LANE = LaneBound("login", workers=1, queued=64)
"""Login verification: one thread (about 30 ms a hash), so 64 waiting logins are about two
seconds of work, inside the gateway's 5 s deadline; the 65th waiting is refused at once."""
NEW_PASSWORD_LANE = LaneBound("new-password", workers=1, queued=16)
"""Sign-ups, password changes and bulk creates (a whole batch is one job): fewer may wait,
since each is also bounded by sign-up and password-change budgets."""

MAX_CONCURRENT_HASHES = LOGIN_LANE.workers + NEW_PASSWORD_LANE.workers
"""Hashes computed at once per process (about 38 MiB of argon2 memory at most)."""

LANE_FULL = "too many password checks in progress; retry shortly"

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


class Lane:
    """Threads of one kind of hashing, and a count of the jobs admitted to them (running or
    waiting). A job stays counted until its thread is done with it, even when its caller gave
    up (a deadline): the bound is on the work, not on the callers still waiting."""

    def __init__(self, bound: LaneBound) -> None:
        self.bound = bound
        self._pool = ThreadPoolExecutor(max_workers=bound.workers, thread_name_prefix=f"argon2-{bound.name}")
        self._admitted = 0
        self.hashes = 0
        """Hashes and verifications admitted so far (what a cheap check spares shows here)."""

    @property
    def admitted(self) -> int:
        return self._admitted

    async def run(self, function: Callable[..., T], *args: object, hashes: int = 1) -> T:
        if self._admitted >= self.bound.admitted:
            raise Unavailable(LANE_FULL)
        loop = asyncio.get_running_loop()
        self._admitted += 1
        self.hashes += hashes
        job: Future[T] = self._pool.submit(function, *args)
        job.add_done_callback(lambda _: self._released_on(loop))
        return await asyncio.wrap_future(job)

    def _released_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """From the hashing thread, when its job ends: the count is the loop's to change."""
        # The loop may have closed (a stop does not wait for a hash): nobody to count for then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._release)

    def _release(self) -> None:
        self._admitted -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Passwords:
    """Hash and verify passwords without blocking the event loop, each kind of work in its
    lane; close() ends the lanes' threads."""

    def __init__(
        self,
        parameters: Parameters = PARAMETERS,
        *,
        login: LaneBound = LOGIN_LANE,
        new_password: LaneBound = NEW_PASSWORD_LANE,
    ) -> None:
        self._hasher = PasswordHasher.from_parameters(parameters)
        self.login_lane = Lane(login)
        self.new_password_lane = Lane(new_password)

    @property
    def hashes(self) -> int:
        """Hashes and verifications admitted to either lane so far."""
        return self.login_lane.hashes + self.new_password_lane.hashes

    async def hash(self, password: str) -> str:
        """A fresh salted hash of a new password in PHC string form ($argon2id$...)."""
        return await self.new_password_lane.run(self._hash, password)

    async def hash_many(self, passwords: Sequence[str]) -> list[str]:
        """Hashes of a batch's new passwords, one job in the new-password lane."""
        return await self.new_password_lane.run(
            lambda: [self._hash(password) for password in passwords], hashes=len(passwords)
        )

    async def verify(self, password_hash: str, password: str) -> bool:
        """Whether `password` is the one `password_hash` was made from (a login)."""
        return await self.login_lane.run(self._verify, password_hash, password)

    async def rehash(self, password: str) -> str:
        """A hash with the current parameters of a password that just logged in."""
        return await self.login_lane.run(self._hash, password)

    async def is_current(self, password_hash: str, password: str) -> bool:
        """Whether a password sent with a profile edit is the one it has (new-password lane:
        it is the cost of a password change)."""
        return await self.new_password_lane.run(self._verify, password_hash, password)

    def needs_rehash(self, password_hash: str) -> bool:
        """True when the hash was made with other parameters than the current ones (cheap)."""
        return self._hasher.check_needs_rehash(password_hash)

    def close(self) -> None:
        self.login_lane.close()
        self.new_password_lane.close()

    def _hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except VerifyMismatchError:
            return False
        except (VerificationError, InvalidHashError):
            # A stored hash we cannot read: the password cannot be checked, so it is wrong.
            log.warning("unusable password hash")
            return False
