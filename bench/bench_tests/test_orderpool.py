"""The order scenario's pool: sized for every wrk run, cut into disjoint ranges, each pet ordered once."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from petstore_bench import orderpool, runner, wrk
from petstore_bench.__main__ import parse_args
from petstore_bench.scenarios import BY_KEY


def test_ranges_are_disjoint_and_cover_the_stretch() -> None:
    assert orderpool.split(1, 10, 1) == [(1, 10)]
    assert orderpool.split(11, 10, 3) == [(11, 14), (15, 17), (18, 20)]
    with pytest.raises(ValueError, match="non-empty"):
        orderpool.split(1, 2, 3)


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        ([], [5, 3, 3, 3, 3, 3]),  # make bench: 5 s warm-up, 15 s in 5 slices
        (["--smoke"], [1]),
        (["--duration", "10", "--warmup", "2"], [2, 2, 2, 2, 2, 2]),
        (["--duration", "7", "--warmup", "0", "--slices", "5"], [1, 1, 1, 1, 1]),  # as _drive cuts it
    ],
)
def test_the_pool_is_sized_for_every_wrk_run_of_the_scenario(argv: list[str], runs: list[int]) -> None:
    options = parse_args(argv)
    assert runner.wrk_runs(options) == runs
    size = orderpool.pool_size(runs)
    assert size == orderpool.ORDER_RATE_BOUND * sum(runs)
    pool = orderpool.OrderPool(Path("/pool.txt"), size, threads=options.load.threads)
    lines: list[int] = []
    for seconds in runs:
        env = pool.take(seconds)
        assert env["BENCH_ORDER_PETS_FILE"] == "/pool.txt"
        for part in env["BENCH_ORDER_RANGES"].split(","):
            first, last = map(int, part.split("-"))
            lines.extend(range(first, last + 1))
    assert lines == list(range(1, size + 1))  # every pet handed out once, none twice
    with pytest.raises(orderpool.PoolExhausted):
        pool.take(1)


def test_each_thread_gets_its_own_range() -> None:
    pool = orderpool.OrderPool(Path("p"), 30, threads=3, rate=5)
    assert pool.take(2)["BENCH_ORDER_RANGES"] == "1-4,5-7,8-10"
    assert pool.take(4)["BENCH_ORDER_RANGES"] == "11-17,18-24,25-30"


def test_the_rate_bound_follows_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert runner.order_rate_bound(parse_args([])) == orderpool.FERRETDB_ORDER_RATE_BOUND  # started here
    assert runner.order_rate_bound(parse_args(["--memory-store"])) == orderpool.ORDER_RATE_BOUND
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:27017/")
    assert runner.order_rate_bound(parse_args([])) == orderpool.ORDER_RATE_BOUND


def test_only_the_order_scenario_draws_from_a_pool() -> None:
    assert [key for key, scenario in BY_KEY.items() if scenario.orders_pets] == ["post_order"]


# post_order.lua under wrk, against a shop that refuses a second order for a pet as the stack does.


def fake_shop() -> tuple[web.Application, Counter[int]]:
    ordered: Counter[int] = Counter()

    async def place_order(request: web.Request) -> web.Response:
        pet_id = int((await request.json())["petId"])
        ordered[pet_id] += 1
        if ordered[pet_id] > 1:
            return web.json_response({"message": f"pet {pet_id} is pending"}, status=409)
        return web.json_response({"id": sum(ordered.values()), "petId": pet_id, "status": "placed"})

    app = web.Application()
    app.router.add_post("/v2/store/order", place_order)
    return app, ordered


TWO_THREADS = wrk.Load(seconds=1, connections=4, threads=2, timeout_s=2)


async def order_from_pool(tmp_path: Path, pets: int) -> tuple[wrk.WrkResult, Counter[int], list[int]]:
    """One 1 s wrk run of post_order.lua over a pool of `pets` (ids 1000, 1001, ...), 2 threads."""
    app, ordered = fake_shop()
    ids = [1000 + index for index in range(pets)]
    ids_file = tmp_path / "pool.txt"
    orderpool.write_ids(ids_file, ids)
    pool = orderpool.OrderPool(ids_file, pets, threads=2, rate=pets)
    env = {"BENCH_API_KEY": "key", **pool.take(1)}
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/")).rstrip("/")
        found = await asyncio.to_thread(wrk.run, "wrk", url, wrk.script_path("post_order"), TWO_THREADS, env)
    return found, ordered, ids


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
async def test_every_order_is_for_a_pet_nobody_ordered(tmp_path: Path) -> None:
    result, ordered, ids = await order_from_pool(tmp_path, 200_000)
    assert result.requests > 100
    assert result.errors.total == 0
    assert set(ordered) <= set(ids)
    assert max(ordered.values()) == 1
    # Both threads ordered, each from its own half.
    assert min(ordered) < ids[100_000] <= max(ordered)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
async def test_a_pool_that_runs_out_stops_and_is_counted_never_reordered(tmp_path: Path) -> None:
    result, ordered, ids = await order_from_pool(tmp_path, 40)
    assert max(ordered.values()) == 1  # no 409: no pet ordered twice
    # Thread 1's first request is the one wrk builds to check the script, never sent.
    assert len(ordered) >= len(ids) - 1
    assert result.errors.exhausted >= 2  # each thread ran out
    assert result.errors.status <= result.errors.exhausted  # the placeholders the shop answered 404
    # The threads stopped (wrk still waits out its duration): not thousands of placeholders.
    assert result.requests <= len(ids) + TWO_THREADS.connections
