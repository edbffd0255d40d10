"""`python -m petstore_bench --growth`: how each operation's cost moves as the shop grows.

One stack per store (the embedded store, then FerretDB on PostgreSQL or MONGODB_URI), grown
through the product's own API to each size in turn (growth_data), and at each size every figure
measured for a short fixed window: requests/s, p99 and the CPU each process used per request
(utime + stime from /proc over the window). growth_report turns it into the table.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import secrets
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from petstore_bench import data, growth_data, procmem, runner, wrk
from petstore_bench.growth_data import Shop
from petstore_devstack.stack import Stack

PROCESSES = ("gateway", "pet", "order", "user")
DATABASE_PROCESSES = ("ferretdb", "postgres")
"""The FerretDB and PostgreSQL this run started (children of this process; PostgreSQL's backends
are its server's children): their CPU per request is reported beside the services'."""
STORES = {"memory": "embedded in-memory store", "mongo": "FerretDB (PostgreSQL), or MONGODB_URI"}
CACHE_FILL = 20_000
"""Pets read once to fill the gateway's pet cache (its default PET_CACHE_MAX_ENTRIES): the hit
figure reads them again. The cache's own gauge says how many it kept."""
CACHE_OFF = {"PET_CACHE_MAX_ENTRIES": "0"}
"""The gateway setting the miss figure runs under: every read goes to the pet service."""
FILL_CONCURRENCY = 32


@dataclass(frozen=True, slots=True)
class Figure:
    key: str
    title: str
    script: str = ""
    """The wrk script; "" for the order figure, driven from Python (its pets are each ordered once)."""


FIGURES: tuple[Figure, ...] = (
    Figure("get_hit", "GET /pet/{id}, cached: a pet read again", "get_pet_ids_file"),
    Figure("get_miss", "GET /pet/{id}, cache off (PET_CACHE_MAX_ENTRIES=0)", "get_pet_ids_file"),
    Figure("list_orders", "GET /store/order, a customer's own", "list_orders"),
    Figure("login", "GET /user/login (argon2)", "login"),
    Figure("post_order", "POST /store/order (reserves its pet)"),
    Figure("post_pet", "POST /pet", "post_pet"),
)
BY_KEY = {figure.key: figure for figure in FIGURES}


@dataclass(frozen=True, slots=True)
class GrowthOptions:
    sizes: tuple[int, ...]
    window_s: int
    stores: tuple[str, ...]
    results_dir: Path
    connections: int = 32
    smoke: bool = False
    command: str = ""
    budget_s: float | None = None
    """Wall time the whole run may take: a size whose growth and figures, projected from the
    size before, would end past it is skipped (and said so), as are the larger ones."""

    @property
    def mode(self) -> str:
        return "growth-smoke" if self.smoke else "growth"


@dataclass(frozen=True, slots=True)
class FigureResult:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    cpu_ms: dict[str, float]
    """CPU milliseconds per request of each process (and "total", their sum)."""
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "requests_per_second": round(self.requests_per_second, 1),
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "cpu_ms_per_request": {name: round(value, 4) for name, value in self.cpu_ms.items()},
            **({"notes": self.notes} if self.notes else {}),
        }


@dataclass
class StoreResults:
    store: str
    description: str = ""
    figures: dict[str, dict[int, FigureResult]] = field(default_factory=dict)
    """figure -> size -> result."""
    seeding: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    """What the shop held when each size's figures began."""
    cache_memory: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Per size: the gateway's RSS cold and warm, the entries cached, KiB per 10k cached pets."""
    error: str = ""
    """Why the store's run stopped early (its sizes so far are kept)."""
    skipped: str = ""
    """The sizes left out for want of time, and why."""


def per_request(cpu_s: Mapping[str, float], requests: int) -> dict[str, float]:
    """CPU seconds per process over a window -> milliseconds per request, with their "total".
    Names "<process>#<pid>" (a database's several processes) add up under <process>."""
    count = max(requests, 1)
    cpu_ms = dict.fromkeys(PROCESSES, 0.0)
    for name, seconds in cpu_s.items():
        process = name.split("#", 1)[0]
        cpu_ms[process] = cpu_ms.get(process, 0.0) + seconds * 1000 / count
    cpu_ms["total"] = sum(cpu_ms.values())
    return cpu_ms


def database_pids() -> dict[str, int]:
    """The database processes this run started, each "<process>#<pid>" (none on the embedded store)."""
    pids = {f"ferretdb#{pid}": pid for pid in procmem.children_named("ferretdb")}
    for server in procmem.children_named("postgres"):
        pids[f"postgres#{server}"] = server
        pids.update({f"postgres#{pid}": pid for pid in procmem.children_of(server)})
    return pids


def nearest_rank(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))]


def per_10k_kib(cold_kb: int, warm_kb: int, entries: int) -> float | None:
    """The gateway's RSS growth per 10,000 cached entries (None with nothing cached)."""
    return None if entries <= 0 else (warm_kb - cold_kb) * 10_000 / entries


# ---------------------------------------------------------------------------------------


def run(options: GrowthOptions) -> tuple[dict[str, Any], list[StoreResults]]:
    """Every store grown and measured in turn: the run's description and each store's results."""
    wrk_binary = wrk.ensure_wrk()
    options.results_dir.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    deadline = None if options.budget_s is None else time.monotonic() + options.budget_s
    results = []
    for store in options.stores:
        results.append(_run_store(store, options, wrk_binary, deadline))
    document = {
        "date": started,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": options.command,
        "sizes": list(options.sizes),
        "window_s": options.window_s,
        "connections": options.connections,
        "proportions": {
            "pets_per_user": growth_data.PETS_PER_USER,
            "orders_per_user": growth_data.ORDERS_PER_USER,
        },
        "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
    }
    return document, results


def _run_store(store: str, options: GrowthOptions, wrk_binary: str, deadline: float | None) -> StoreResults:
    found = StoreResults(store)
    info: dict[str, Any] = {}
    settings = runner.Options(
        mode=options.mode,
        scenarios=(),
        load=wrk.Load(options.window_s, options.connections, 1, 10),
        warmup_s=0,
        results_dir=options.results_dir,
        memory_store=store == "memory",
    )
    api_key, prefix = secrets.token_urlsafe(24), f"growth{secrets.token_hex(4)}"
    log_dir = options.results_dir / "logs" / f"{options.mode}-{store}"
    for stale in log_dir.glob("*.log"):
        stale.unlink()
    with runner._database(settings, info) as (uri, _database_pids):
        found.description = info.get("store", store)
        stack = Stack(
            mongodb_uri=uri,
            api_keys=api_key,
            database_prefix=prefix,
            extra_env={"LOG_LEVEL": "INFO", **runner.RATE_LIMITS_OUT_OF_REACH},
            log_dir=log_dir,
        )
        runner.log(f"growth on the {found.description}: starting the stack (logs in {log_dir})")
        stack.start()
        try:
            _grow_and_measure(stack, api_key, store, options, wrk_binary, found, deadline)
        except (wrk.WrkError, RuntimeError, TimeoutError, aiohttp.ClientError) as exc:
            found.error = f"{type(exc).__name__}: {exc}"
            runner.log(f"growth on the {found.description} stopped: {found.error}")
        finally:
            stack.stop()
            if uri and os.environ.get("MONGODB_URI"):
                runner._drop_databases(uri, prefix)
    return found


class _Stand:
    """The stack being measured: its pids (the gateway's change on restarts) and URLs."""

    def __init__(self, stack: Stack, api_key: str, options: GrowthOptions, wrk_binary: str) -> None:
        self.stack, self.api_key, self.options, self.wrk_binary = stack, api_key, options, wrk_binary
        self.url = f"http://127.0.0.1:{stack.gateway_port}"
        self.settle_s = 2.0 if options.smoke else runner.SETTLE_LIMIT_S

    def pids(self) -> dict[str, int]:
        """The stack's processes and the database's (PostgreSQL's backends come and go)."""
        services = {name: pid for name in PROCESSES if (pid := self.stack.pid(name)) is not None}
        return {**services, **database_pids()}

    def restart_gateway(self, extra_env: Mapping[str, str]) -> None:
        env = self.stack.processes["gateway"].env
        for name in CACHE_OFF:
            env.pop(name, None)
        env.update(extra_env)
        self.stack.stop_process("gateway")
        self.stack.start_process("gateway")

    def metrics(self) -> str:
        with urllib.request.urlopen(self.stack.gateway_metrics_url(), timeout=5) as response:  # noqa: S310
            return str(response.read().decode())

    def gauge(self, name: str) -> float:
        for line in self.metrics().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return 0.0

    def wrk_figure(self, figure: Figure, env: Mapping[str, str]) -> FigureResult:
        pids = self.pids()
        runner.settle(pids, limit_s=self.settle_s)
        lookups_before = runner.cache_lookups(self.metrics())
        load = wrk.Load(self.options.window_s, self.options.connections, 1, 10)
        before = procmem.cpu_seconds(pids)
        result = wrk.run(self.wrk_binary, self.url, wrk.script_path(figure.script), load, env)
        after = procmem.cpu_seconds(pids)
        lookups_after = runner.cache_lookups(self.metrics())
        used = {name: after[name] - before[name] for name in after if name in before}
        notes = {
            f"cache_{kind}s": count - lookups_before.get(kind, 0) for kind, count in lookups_after.items()
        }
        return FigureResult(
            requests=result.requests,
            seconds=result.duration_s,
            errors=result.errors.total,
            p50_ms=result.latency_us.p50 / 1000,
            p99_ms=result.latency_us.p99 / 1000,
            cpu_ms=per_request(used, result.requests),
            notes={key: value for key, value in notes.items() if value},
        )

    def order_figure(self, shop: Shop) -> FigureResult:
        """POST /store/order with the static key for pets nobody ordered, each once, from
        `connections` clients for the window or until the shop's available pets run out."""
        pids = self.pids()
        runner.settle(pids, limit_s=self.settle_s)
        before = procmem.cpu_seconds(pids)
        outcome = asyncio.run(_place_orders(self.url + "/v2", self.api_key, shop, self.options))
        after = procmem.cpu_seconds(pids)
        used = {name: after[name] - before[name] for name in after if name in before}
        latencies = sorted(outcome.latencies_s)
        notes: dict[str, Any] = {"pool": outcome.pool}
        if outcome.ran_out:
            notes["ran_out_of_available_pets"] = True
        return FigureResult(
            requests=len(latencies),
            seconds=outcome.seconds,
            errors=outcome.errors,
            p50_ms=nearest_rank(latencies, 0.5) * 1000,
            p99_ms=nearest_rank(latencies, 0.99) * 1000,
            cpu_ms=per_request(used, len(latencies)),
            notes=notes,
        )


@dataclass
class _Orders:
    pool: int
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0
    ran_out: bool = False


async def _place_orders(base_url: str, api_key: str, shop: Shop, options: GrowthOptions) -> _Orders:
    pets = shop.available
    outcome = _Orders(pool=len(pets))
    taken = 0
    headers = {"Accept": "application/json", "api_key": api_key}
    connector = aiohttp.TCPConnector(limit=options.connections)
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        started = time.monotonic()
        deadline = started + options.window_s

        async def client() -> None:
            nonlocal taken
            while time.monotonic() < deadline:
                if taken >= len(pets):
                    outcome.ran_out = True
                    return
                pet_id, taken = pets[taken], taken + 1
                sent = time.monotonic()
                try:
                    async with session.post(
                        f"{base_url}/store/order", json=growth_data.order_body(pet_id)
                    ) as response:
                        await response.read()
                        ok = response.status == 200
                except aiohttp.ClientError:
                    ok = False
                outcome.latencies_s.append(time.monotonic() - sent)
                outcome.errors += 0 if ok else 1

        await asyncio.gather(*(client() for _ in range(options.connections)))
        outcome.seconds = time.monotonic() - started
    shop.available = pets[taken:]
    shop.other_orders += len(outcome.latencies_s) - outcome.errors
    return outcome


async def _read_once(base_url: str, pet_ids: Sequence[int]) -> int:
    """GET each pet once (fills the gateway's cache); the number of non-200 answers."""
    failures = 0
    pending = iter(pet_ids)
    connector = aiohttp.TCPConnector(limit=FILL_CONCURRENCY)
    async with aiohttp.ClientSession(headers={"Accept": "application/json"}, connector=connector) as session:

        async def worker() -> None:
            nonlocal failures
            for pet_id in pending:
                async with session.get(f"{base_url}/pet/{pet_id}") as response:
                    await response.read()
                    failures += response.status != 200

        await asyncio.gather(*(worker() for _ in range(FILL_CONCURRENCY)))
    return failures


def _write_ids(path: Path, pet_ids: Sequence[int]) -> Path:
    path.write_text("".join(f"{pet_id}\n" for pet_id in pet_ids))
    return path


def projected_s(previous: tuple[float, int, float] | None, new_pets: int) -> float:
    """How long growing by `new_pets` and measuring will take, from the step before:
    (its seeding seconds, the pets it added, its figures' seconds). Seeding scales with what it
    adds (customers and orders are in proportion), and the figures take as long as they did."""
    if previous is None:
        return 0.0
    seed_s, added, figures_s = previous
    return seed_s / max(added, 1) * new_pets + figures_s


def _grow_and_measure(
    stack: Stack,
    api_key: str,
    store: str,
    options: GrowthOptions,
    wrk_binary: str,
    found: StoreResults,
    deadline: float | None,
) -> None:
    stand = _Stand(stack, api_key, options, wrk_binary)
    shop = Shop()
    ids_file = options.results_dir / f"{options.mode}-{store}-pets.txt"
    previous: tuple[float, int, float] | None = None
    for size in options.sizes:
        expected = projected_s(previous, max(0, size - len(shop.pet_ids)))
        if deadline is not None and time.monotonic() + expected > deadline:
            left = max(0.0, deadline - time.monotonic())
            found.skipped = (
                f"{size} pets and up: projected {expected:.0f} s with {left:.0f} s of the budget left"
            )
            runner.log(f"{store}: skipping {found.skipped}")
            break
        runner.log(f"{store}: growing to {size} pets")
        try:
            timing = asyncio.run(growth_data.grow(stack.base_url, api_key, shop, size, deadline))
        except growth_data.OutOfTime as exc:
            found.skipped = f"{size} pets and up: growing to {size} did not fit, {exc}"
            runner.log(f"{store}: skipping {found.skipped}")
            break
        found.seeding.append({"size": size, "seconds": round(timing.seconds, 1), "added": timing.added})
        runner.log(f"{store}: grew to {shop.counts()} in {timing.seconds:.1f}s (added {timing.added})")
        found.counts[size] = shop.counts()
        figures_started = time.monotonic()

        def record(key: str, result: FigureResult, size: int = size) -> None:
            found.figures.setdefault(key, {})[size] = result
            runner.log(
                f"{store} {size}: {key} {result.requests_per_second:.0f} req/s, p99 {result.p99_ms:.1f} ms,"
                f" {result.errors} errors, CPU {result.cpu_ms['total']:.2f} ms/req {result.notes or ''}"
            )

        # The miss: the same reads with the cache turned off by its setting.
        stand.restart_gateway(CACHE_OFF)
        every_pet = {"BENCH_PET_IDS_FILE": str(_write_ids(ids_file, shop.pet_ids))}
        record("get_miss", stand.wrk_figure(BY_KEY["get_miss"], every_pet))
        # A fresh gateway with its cache: the order list and logins touch no pet, so its RSS
        # after them is the cold one; then reading pets once fills the cache (warm).
        stand.restart_gateway({})
        customers = shop.sessions[: options.connections]
        record(
            "list_orders", stand.wrk_figure(BY_KEY["list_orders"], {"BENCH_SESSIONS": ",".join(customers)})
        )
        users = {"BENCH_USERS": ",".join(shop.usernames[: options.connections])}
        record("login", stand.wrk_figure(BY_KEY["login"], {**users, "BENCH_PASSWORD": data.USER_PASSWORD}))
        runner.settle(stand.pids(), limit_s=stand.settle_s)
        gateway_pid = stand.pids()["gateway"]
        cold = procmem.read(gateway_pid)
        # Without the pet service's change stream (FerretDB has none) the cache never serves:
        # filling it would only cost time, and the "hit" figure reads through like the miss.
        live = bool(stand.gauge("gateway_pet_cache_live"))
        filled = random.sample(shop.pet_ids, min(len(shop.pet_ids), CACHE_FILL)) if live else []
        failures = asyncio.run(_read_once(stack.base_url, filled))
        runner.settle(stand.pids(), limit_s=stand.settle_s)
        warm = procmem.read(gateway_pid)
        entries = int(stand.gauge("gateway_pet_cache_entries"))
        cold_kb, warm_kb = (cold.rss_kb if cold else 0), (warm.rss_kb if warm else 0)
        found.cache_memory[size] = {
            "pets_read": len(filled),
            "read_failures": failures,
            "entries": entries,
            "live": live,
            "rss_cold_kib": cold_kb,
            "rss_warm_kib": warm_kb,
            "kib_per_10k_cached": None
            if (per := per_10k_kib(cold_kb, warm_kb, entries)) is None
            else round(per, 1),
        }
        runner.log(f"{store} {size}: cache {found.cache_memory[size]}")
        hit_ids = {"BENCH_PET_IDS_FILE": str(_write_ids(ids_file, filled or shop.pet_ids))}
        record("get_hit", stand.wrk_figure(BY_KEY["get_hit"], hit_ids))
        record("post_order", stand.order_figure(shop))
        post = stand.wrk_figure(BY_KEY["post_pet"], {"BENCH_API_KEY": api_key})
        shop.other_pets += max(0, post.requests - post.errors)
        record("post_pet", post)
        previous = (timing.seconds, timing.added["pets"], time.monotonic() - figures_started)
