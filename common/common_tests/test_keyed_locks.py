"""KeyedLocks: writes to one key take turns, other keys do not wait, nothing is kept after."""

from __future__ import annotations

import asyncio

from petstore_common.mongo import KeyedLocks


async def test_holders_of_one_key_take_turns_and_other_keys_do_not_wait() -> None:
    locks = KeyedLocks()
    inside: list[str] = []
    release = asyncio.Event()

    async def hold(key: int, name: str) -> None:
        async with locks.hold(key):
            inside.append(name)
            await release.wait()

    tasks = [
        asyncio.create_task(hold(1, "a")),
        asyncio.create_task(hold(1, "b")),
        asyncio.create_task(hold(2, "c")),
    ]
    await asyncio.sleep(0.01)
    assert inside == ["a", "c"]  # b waits for a; c holds another key
    release.set()
    await asyncio.gather(*tasks)
    assert inside == ["a", "c", "b"]
    assert len(locks) == 0


async def test_a_key_is_forgotten_even_when_its_holder_fails() -> None:
    locks = KeyedLocks()
    try:
        async with locks.hold("k"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert len(locks) == 0
