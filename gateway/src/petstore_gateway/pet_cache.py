"""The gateway's read cache of encoded pets, coherent through the pet service's WatchPets.

Entries are the bytes of a pet's representation (per body format) with its ETag and version,
least recently used first out, bounded by entries and by bytes. The rules that keep it honest:

- It answers only while `live`: the watch stream is up. Losing the stream stops it serving;
  a new stream either resumes where the old one stopped, having told every change since, or
  the cache forgets everything before serving again, so no entry can have missed a change.
- A change (from the stream, or a write made through this gateway) drops what is older than
  it and never touches what is newer: changes only ever remove entries.
- A fill (a miss read through from the service) is kept only if nothing happened to that pet
  while it was in flight that could make it stale: a deletion, a change newer than what it
  read, a write through this gateway, or the stream going down.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from petstore_gateway.negotiation import BodyFormat

ENTRY_OVERHEAD_BYTES = 256
"""What an entry costs beside its body (key, tuple, ETag string, dict slot): counted against
the byte bound so that many small entries cannot outgrow it."""


@dataclass(frozen=True, slots=True)
class CachedPet:
    version: int
    body: bytes
    etag: str


@dataclass(slots=True, eq=False)
class Fill:
    """A read-through in flight for one pet."""

    pet_id: int
    generation: int
    floor: int = 0
    """The oldest version it may store: changes seen while it was in flight raise it."""
    spoiled: bool = False
    """A deletion or a write through this gateway happened meanwhile: store nothing."""


@dataclass(slots=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    stored: int = 0
    discarded: int = 0
    """Fills not stored because something happened to their pet while they were in flight."""
    evicted: int = 0
    lost: int = 0
    """Times entries were forgotten: the stream was lost and did not resume."""
    suspended: int = 0
    """Times the stream broke and the entries waited for a resumed one."""


class PetCache:
    def __init__(self, *, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, BodyFormat], CachedPet] = OrderedDict()
        self._bytes = 0
        self._live = False
        self._generation = 0
        self._fills: dict[int, list[Fill]] = {}
        self.stats = CacheStats()

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0

    @property
    def live(self) -> bool:
        return self._live

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes counted)."""
        return len(self._entries), self._bytes

    def get(self, pet_id: int, body_format: BodyFormat) -> CachedPet | None:
        if not self._live:
            return None
        key = (pet_id, body_format)
        entry = self._entries.get(key)
        if entry is None:
            self.stats.misses += 1
            return None
        self._entries.move_to_end(key)
        self.stats.hits += 1
        return entry

    def begin_fill(self, pet_id: int) -> Fill | None:
        """Call before reading a pet from the service; None when nothing could be cached."""
        if not self._live:
            return None
        fill = Fill(pet_id, self._generation)
        self._fills.setdefault(pet_id, []).append(fill)
        return fill

    def end_fill(self, fill: Fill | None, body_format: BodyFormat, entry: CachedPet | None) -> None:
        """The read is over: `entry` is what it got (None when it failed). Stored only when
        nothing that could make it stale happened while it was in flight."""
        if fill is None:
            return
        fills = self._fills.get(fill.pet_id)
        if fills is not None:
            fills.remove(fill)
            if not fills:
                del self._fills[fill.pet_id]
        if entry is None:
            return
        if fill.spoiled or fill.generation != self._generation or entry.version < fill.floor:
            self.stats.discarded += 1
            return
        key = (fill.pet_id, body_format)
        current = self._entries.get(key)
        if current is not None:
            if current.version >= entry.version:
                return  # never replace a newer (or the same) representation with an older one
            self._remove(key)
        self._entries[key] = entry
        self._bytes += len(entry.body) + ENTRY_OVERHEAD_BYTES
        self.stats.stored += 1
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))
            self.stats.evicted += 1

    def changed(self, pet_id: int, version: int, *, deleted: bool = False) -> None:
        """A committed change: drop what is older than `version`; a deletion, or an unknown
        version (0), drops everything of the pet. Fills in flight learn of it too."""
        final = deleted or version <= 0
        for body_format in BodyFormat:
            key = (pet_id, body_format)
            entry = self._entries.get(key)
            if entry is not None and (final or entry.version < version):
                self._remove(key)
        for fill in self._fills.get(pet_id, ()):
            if final:
                fill.spoiled = True
            else:
                fill.floor = max(fill.floor, version)

    def written(self, pet_id: int) -> None:
        """A write through this gateway is about to be answered (whatever its outcome): nothing
        read before it may be served after it."""
        self.changed(pet_id, 0, deleted=True)

    def go_live(self, *, resumed: bool = False) -> None:
        """The watch stream is up: every change from now on will be told. A stream that
        `resumed` where the last one stopped (its missed changes applied) keeps the entries."""
        if not resumed:
            if self._entries:
                self.stats.lost += 1
            self._forget_all()
        self._live = True

    def suspend(self) -> None:
        """The stream is down but may resume where it stopped: nothing is served or stored
        (fills in flight included) until a new stream says whether it resumed; the entries
        wait for that answer."""
        if self._live:
            self.stats.suspended += 1
        self._live = False
        self._generation += 1

    def lose(self) -> None:
        """The watch stream is down (or was never up): forget everything, read through."""
        if self._live:
            self.stats.lost += 1
        self._live = False
        self._forget_all()

    def _forget_all(self) -> None:
        self._generation += 1  # fills in flight belong to the old generation: never stored
        self._entries.clear()
        self._bytes = 0

    def _remove(self, key: tuple[int, BodyFormat]) -> None:
        entry = self._entries.pop(key)
        self._bytes -= len(entry.body) + ENTRY_OVERHEAD_BYTES


def disabled() -> PetCache:
    return PetCache(max_entries=0, max_bytes=0)
