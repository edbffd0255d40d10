"""The order scenario's pool of pets nobody ordered yet.

An order reserves its pet: the pet turns pending, held by that order, and a second order for it
is refused (409). So `post_order` cannot cycle over the loaded pets: before it runs, the bench
loads a pool of available pets sized for the scenario's warm-up and measured seconds at a bound
on the order rate (by store, below), and every wrk run of the scenario (the warm-up, each
slice) takes the next unused stretch of it, cut into one range per wrk thread (the script
knows its thread by the number report.lua's setup() gives it). No pet is ordered twice, across
runs or threads.

The pool's ids are in a file (one a line, like the ETags file: tens of thousands of ids would
pass Linux's 128 KiB limit on one environment variable); each run gets BENCH_ORDER_PETS_FILE
and BENCH_ORDER_RANGES, "first-last" line numbers (1-based, inclusive) per thread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ORDER_RATE_BOUND = 1_500
"""Orders per second a pool is sized for, on the embedded store or a MongoDB at MONGODB_URI: at
least the fastest order rate this bench has recorded (1,469 req/s on the embedded store, about
1,200 in most tables, both before an order reserved its pet, which adds a call and writes),
2.5-3 times the 459-569 req/s measured with reservations. A run faster than this is flagged,
not turned into 409s (lua/post_order.lua)."""
FERRETDB_ORDER_RATE_BOUND = 500
"""The same on the FerretDB the bench starts itself (on PostgreSQL): 3 times the 129-167 req/s
its smoke runs measured with reservations (a bound of 200 ran out in a CI run that measured 167
req/s). The pool's size costs more than memory there: FerretDB v1
does not push an `_id` `$in` down to PostgreSQL, so the order service's FindExistingPets scans
the pets collection (6.5 / 41 / 218 ms at 100 / 1,000 / 5,000 pets, against 1.3-4.2 ms for one
`_id`); MongoDB serves the same query from its `_id` index."""


class PoolExhausted(RuntimeError):
    """More runs asked for pets than the pool was sized for (a bug in the sizing)."""


def pets_for(seconds: int, *, rate: int = ORDER_RATE_BOUND) -> int:
    """How many pets one wrk run of `seconds` gets."""
    return math.ceil(rate * seconds)


def pool_size(run_seconds: Sequence[int], *, rate: int = ORDER_RATE_BOUND) -> int:
    """The pets a scenario's wrk runs (warm-up and slices, in seconds) need together."""
    return sum(pets_for(seconds, rate=rate) for seconds in run_seconds)


def split(first: int, count: int, parts: int) -> list[tuple[int, int]]:
    """`count` consecutive line numbers from `first`, cut into `parts` disjoint ranges
    (first, last), inclusive, as even as can be; the first ranges take the remainder."""
    if parts < 1 or count < parts:
        raise ValueError(f"cannot cut {count} pets into {parts} non-empty ranges")
    size, extra = divmod(count, parts)
    ranges = []
    for part in range(parts):
        last = first + size + (1 if part < extra else 0) - 1
        ranges.append((first, last))
        first = last + 1
    return ranges


@dataclass
class OrderPool:
    """A loaded pool, handed out run by run."""

    ids_file: Path
    size: int
    threads: int
    """wrk's --threads: each run's stretch is cut into this many ranges."""
    rate: int = ORDER_RATE_BOUND
    taken: int = 0
    """Lines handed out so far."""

    def take(self, seconds: int) -> dict[str, str]:
        """The environment of the next wrk run of `seconds`: its own unused stretch of the pool."""
        count = pets_for(seconds, rate=self.rate)
        if self.taken + count > self.size:
            raise PoolExhausted(
                f"a {seconds}s run needs {count} pets; {self.size - self.taken} of {self.size} are left"
            )
        ranges = split(self.taken + 1, count, self.threads)
        self.taken += count
        return {
            "BENCH_ORDER_PETS_FILE": str(self.ids_file),
            "BENCH_ORDER_RANGES": ",".join(f"{first}-{last}" for first, last in ranges),
        }


def write_ids(path: Path, pet_ids: Sequence[int]) -> None:
    path.write_text("".join(f"{pet_id}\n" for pet_id in pet_ids))
