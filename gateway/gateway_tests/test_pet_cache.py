"""The cache's safety rules, one by one, without any stream or service."""

from __future__ import annotations

from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.pet_cache import ENTRY_OVERHEAD_BYTES, CachedPet, PetCache

JSON, XML = BodyFormat.JSON, BodyFormat.XML


def pet(version: int, body: bytes = b"{}") -> CachedPet:
    return CachedPet(version, body, f'"{version}-tag"')


def live_cache(**bounds: int) -> PetCache:
    cache = PetCache(max_entries=bounds.get("max_entries", 100), max_bytes=bounds.get("max_bytes", 1 << 20))
    cache.go_live()
    return cache


def fill(cache: PetCache, pet_id: int, entry: CachedPet, body_format: BodyFormat = JSON) -> None:
    cache.end_fill(cache.begin_fill(pet_id), body_format, entry)


def test_a_fill_is_served_until_a_newer_change_drops_it() -> None:
    cache = live_cache()
    fill(cache, 1, pet(3))
    assert cache.get(1, JSON) == pet(3)
    assert cache.get(1, XML) is None  # per representation

    cache.changed(1, 3)  # the change it already holds
    assert cache.get(1, JSON) == pet(3)
    cache.changed(1, 2)  # an older change never touches a newer entry
    assert cache.get(1, JSON) == pet(3)
    cache.changed(1, 4)
    assert cache.get(1, JSON) is None


def test_nothing_is_cached_or_served_while_the_stream_is_not_up() -> None:
    cache = PetCache(max_entries=100, max_bytes=1 << 20)
    assert cache.begin_fill(1) is None
    cache.end_fill(None, JSON, pet(1))
    assert cache.get(1, JSON) is None

    cache.go_live()
    fill(cache, 1, pet(1))
    cache.lose()
    assert cache.get(1, JSON) is None
    cache.go_live()  # back: it starts empty, nothing from before the loss comes back
    assert cache.get(1, JSON) is None
    assert cache.size == (0, 0)


def test_a_fill_in_flight_when_the_stream_is_lost_is_never_stored() -> None:
    cache = live_cache()
    in_flight = cache.begin_fill(1)
    cache.lose()
    cache.go_live()
    cache.end_fill(in_flight, JSON, pet(1))
    assert cache.get(1, JSON) is None


def test_a_fill_that_read_before_a_change_is_discarded() -> None:
    cache = live_cache()
    in_flight = cache.begin_fill(1)
    cache.changed(1, 5)  # committed while the read was in flight
    cache.end_fill(in_flight, JSON, pet(4))  # it read the version before
    assert cache.get(1, JSON) is None
    assert cache.stats.discarded == 1

    in_flight = cache.begin_fill(1)
    cache.changed(1, 5)
    cache.end_fill(in_flight, JSON, pet(5))  # it read that change or later: fine
    assert cache.get(1, JSON) == pet(5)


def test_a_deletion_spoils_fills_in_flight_and_drops_every_representation() -> None:
    cache = live_cache()
    fill(cache, 1, pet(2), JSON)
    fill(cache, 1, pet(2), XML)
    in_flight = cache.begin_fill(1)
    cache.changed(1, 2, deleted=True)
    cache.end_fill(in_flight, JSON, pet(2))
    assert cache.get(1, JSON) is None
    assert cache.get(1, XML) is None


def test_an_unknown_version_counts_as_final() -> None:
    cache = live_cache()
    fill(cache, 1, pet(9))
    cache.changed(1, 0)
    assert cache.get(1, JSON) is None


def test_a_write_through_this_gateway_drops_the_entry_and_spoils_fills_read_before_it() -> None:
    cache = live_cache()
    fill(cache, 1, pet(2))
    before_the_write = cache.begin_fill(1)
    cache.written(1)
    cache.end_fill(before_the_write, JSON, pet(2))
    assert cache.get(1, JSON) is None
    fill(cache, 1, pet(3))  # a read after the write
    assert cache.get(1, JSON) == pet(3)


def test_a_fill_never_replaces_a_newer_entry() -> None:
    cache = live_cache()
    slow = cache.begin_fill(1)
    fill(cache, 1, pet(3))
    cache.end_fill(slow, JSON, pet(2))
    assert cache.get(1, JSON) == pet(3)


def test_least_recently_used_entries_go_first_within_the_entry_bound() -> None:
    cache = live_cache(max_entries=2)
    fill(cache, 1, pet(1))
    fill(cache, 2, pet(1))
    assert cache.get(1, JSON) is not None  # 2 is now the least recently used
    fill(cache, 3, pet(1))
    assert cache.get(2, JSON) is None
    assert cache.get(1, JSON) is not None
    assert cache.get(3, JSON) is not None
    assert cache.stats.evicted == 1


def test_the_byte_bound_counts_bodies_and_a_cost_per_entry() -> None:
    entry_cost = 100 + ENTRY_OVERHEAD_BYTES
    cache = live_cache(max_bytes=2 * entry_cost)
    for pet_id in (1, 2, 3):
        fill(cache, pet_id, pet(1, b"x" * 100))
    assert cache.size == (2, 2 * entry_cost)
    assert cache.get(1, JSON) is None
    cache.changed(2, 2)
    assert cache.size == (1, entry_cost)


def test_a_cache_without_room_is_disabled() -> None:
    assert not PetCache(max_entries=0, max_bytes=100).enabled
    assert PetCache(max_entries=1, max_bytes=100).enabled
