"""One benchmark run: the baseline, then the stack on FerretDB (or MONGODB_URI), scenario by scenario."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import platform
import re
import resource
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from petstore_bench import data, mixed, orderpool, procmem, wrk
from petstore_bench.launcher import PROFILE_START, PROFILE_STOP
from petstore_bench.report import RunResults
from petstore_bench.scenarios import BASELINE, BY_KEY, Scenario
from petstore_devstack.ferretdb import running_ferretdb
from petstore_devstack.ports import free_port, wait_for_port
from petstore_devstack.stack import Stack

REPO_ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
PROFILE_WAIT_S = 15.0
SETTLE_LIMIT_S = 6.0
"""Longer than the gateway's 5 s gRPC deadline: by then every request left in flight has ended."""
SETTLE_WINDOW_S = 0.2
SETTLE_IDLE_CORES = 0.1
DEFAULT_SLICES = 5
WORKERS_WAIT_S = 30.0
"""How long the first gateway process may take to start its GATEWAY_WORKERS - 1 others."""
OUT_OF_REACH = str(10**9)
RATE_LIMITS_OUT_OF_REACH = {
    "RATE_LIMIT_PER_SECOND": OUT_OF_REACH,
    "RATE_LIMIT_BURST": OUT_OF_REACH,
    "LOGIN_RATE_LIMIT_PER_MINUTE": OUT_OF_REACH,
}
"""The gateway's per-client (50/s) and per-address login (10/min) limits would answer 429 within
a second of load from one address: the bench measures capacity, so it sets them out of reach
(not off: the limiter's bookkeeping stays on the measured path)."""


@dataclass(frozen=True, slots=True)
class Options:
    mode: str
    """"full", "smoke" or "profile": names the result files."""
    scenarios: tuple[str, ...]
    load: wrk.Load
    warmup_s: int
    results_dir: Path
    memory_store: bool = False
    gateway_uvloop: bool = False
    log_level: str = "INFO"
    profile: bool = False
    profile_process: str = "gateway"
    """Which of the stack's processes --profile samples."""
    process_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Extra environment per process of the stack (experiments)."""
    settle_s: float = SETTLE_LIMIT_S
    """How long to wait at most for one scenario's leftover requests before the next."""
    pets: int = 100
    users: int = 4
    gateway_workers: int = 1
    """GATEWAY_WORKERS: the first gateway process starts the others (gateway.1, ...)."""
    command: str = ""
    slices: int = DEFAULT_SLICES
    """Each scenario's measured seconds are cut into this many slices, each followed by as long
    a slice of the baseline's (at most one slice a second)."""


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(options: Options) -> RunResults:
    wrk_binary = wrk.ensure_wrk()
    options.results_dir.mkdir(parents=True, exist_ok=True)
    info = _info(options, wrk_binary)
    measured: dict[str, Measured] = {}
    with _baseline_server(options) as (baseline, baseline_sampler):
        if baseline is not None:
            measured[BASELINE.key] = _drive(wrk_binary, baseline, BASELINE, options)
        scenarios, memory = _run_stack(options, wrk_binary, info, baseline)
    measured.update(scenarios)
    info["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    first_baseline = measured.get(BASELINE.key)
    return RunResults(
        baseline=None if first_baseline is None else first_baseline.result,
        scenarios={key: found.result for key, found in scenarios.items()},
        memory={**memory, **({} if baseline_sampler is None else baseline_sampler.processes)},
        cpu_ms_per_request={key: found.cpu_ms_per_request for key, found in measured.items()},
        paired_baselines={
            key: found.baseline for key, found in scenarios.items() if found.baseline is not None
        },
        info=info,
    )


def _info(options: Options, wrk_binary: str) -> dict[str, Any]:
    version = subprocess.run([wrk_binary, "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    version_lines = (version.stdout or version.stderr).splitlines()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": options.command,
        "mode": options.mode,
        "settings": {
            "duration_s": options.load.seconds,
            "warmup_s": options.warmup_s,
            "connections": options.load.connections,
            "wrk_threads": options.load.threads,
            "wrk_timeout_s": options.load.timeout_s,
            "settle_limit_s": options.settle_s,
            "log_level": options.log_level,
            "gateway_event_loop": "uvloop" if options.gateway_uvloop else "asyncio",
            "process_env": {name: dict(extra) for name, extra in options.process_env.items()},
            "pets": options.pets,
            "users": options.users,
            "gateway_workers": options.gateway_workers,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(value, 2) for value in os.getloadavg()],
            "python": platform.python_version(),
            "wrk": version_lines[0].strip() if version_lines else "",
            "note": "one run; stack, baseline and wrk share this machine",
        },
    }


@dataclass(frozen=True, slots=True)
class Measured:
    result: wrk.WrkResult
    cpu_ms_per_request: dict[str, float]
    """CPU time (user + system) each process used during the measured run, per request; for a
    scenario, "baseline" is its paired baseline's."""
    baseline: wrk.WrkResult | None = None
    """The baseline measured in slices taking turns with this scenario's (None without one)."""
    cache_lookups: dict[str, int] = field(default_factory=dict)
    """The gateway's pet cache lookups during the measured slices, by result (first worker)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A server wrk drives: its URL, the BENCH_* variables its scripts read, the pids to watch."""

    url: str
    env: Mapping[str, str]
    pids: Mapping[str, int]
    metrics_url: str | None = None
    """The first gateway worker's /metrics, whose pet cache counters each scenario reports."""


CACHE_LOOKUP = re.compile(
    r'^gateway_pet_cache_lookups_total\{result="(hit|miss)"\} ([0-9.e+]+)$', re.MULTILINE
)


def cache_lookups(metrics_text: str) -> dict[str, int]:
    """The gateway's pet cache lookups so far, by result ("hit", "miss")."""
    return {result: int(float(count)) for result, count in CACHE_LOOKUP.findall(metrics_text)}


def _cache_lookups(target: Target) -> dict[str, int]:
    if target.metrics_url is None:
        return {}
    with urllib.request.urlopen(target.metrics_url, timeout=5) as response:  # noqa: S310 - our loopback URL
        return cache_lookups(response.read().decode())


@dataclass
class _Slices:
    """What the slices of one measurement add up to."""

    results: list[wrk.WrkResult] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)

    def add(self, result: wrk.WrkResult, cpu_s: Mapping[str, float]) -> None:
        self.results.append(result)
        for name, seconds in cpu_s.items():
            self.cpu_s[name] = self.cpu_s.get(name, 0.0) + seconds

    def total(self) -> tuple[wrk.WrkResult, dict[str, float]]:
        result = wrk.combine(self.results)
        requests = max(result.requests, 1)
        return result, {name: seconds * 1000 / requests for name, seconds in self.cpu_s.items()}


def settle(pids: Mapping[str, int], *, limit_s: float = SETTLE_LIMIT_S) -> float:
    """Wait until the processes are nearly idle (requests wrk left in flight are done), at most
    `limit_s`, so that one scenario's leftovers are not counted against the next; returns the
    seconds waited."""
    started = time.monotonic()
    before = procmem.cpu_seconds(pids)
    while time.monotonic() - started < limit_s:
        time.sleep(SETTLE_WINDOW_S)
        after = procmem.cpu_seconds(pids)
        busy = sum(after[name] - before[name] for name in after if name in before) / SETTLE_WINDOW_S
        if busy < SETTLE_IDLE_CORES:
            break
        before = after
    return time.monotonic() - started


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True, slots=True)
class MixedTarget:
    """What the mixed scenario's clients need: the stack's URL, key and pets (id -> name)."""

    url: str
    api_key: str
    pets: Mapping[int, str]


def _drive_mixed(
    target: MixedTarget,
    scenario: Scenario,
    options: Options,
    pids: Mapping[str, int],
    baseline: Target | None,
    wrk_binary: str,
    *,
    around_measure: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
) -> Measured:
    """The mixed scenario: mixed.run_mixed's aiohttp clients (one per connection) in this process,
    warmed up and measured like a wrk scenario, in one piece (its checker follows each pet's
    writes), then the baseline for as long; its CPU is this process's ("client")."""
    waited = settle(pids, limit_s=options.settle_s)
    if waited > 1:
        log(f"{scenario.key}: waited {waited:.1f}s for the previous scenario's requests to end")
    clients, pets = options.load.connections, dict(target.pets)
    base_url = target.url + "/v2"
    if options.warmup_s > 0:
        log(f"{scenario.key}: warm-up {options.warmup_s}s")
        asyncio.run(
            mixed.run_mixed(base_url, target.api_key, pets, clients=clients, seconds=options.warmup_s)
        )
    log(f"{scenario.key}: {options.load.seconds}s at {clients} clients (one connection each)")
    with around_measure():
        cpu_before, own_before = procmem.cpu_seconds(pids), _own_cpu_s()
        outcome = asyncio.run(
            mixed.run_mixed(base_url, target.api_key, pets, clients=clients, seconds=options.load.seconds)
        )
        cpu_after, own_after = procmem.cpu_seconds(pids), _own_cpu_s()
    for example in outcome.stale_examples:
        log(f"{scenario.key}: stale read: {example}")
    result = outcome.to_wrk_result()
    used = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    used["client"] = own_after - own_before  # the bench's own process (its RSS sampler included)
    requests = max(result.requests, 1)
    cpu_ms = {name: seconds * 1000 / requests for name, seconds in used.items()}
    paired = None
    if baseline is not None:
        theirs = _Slices()
        theirs.add(*_measure(wrk_binary, baseline, wrk.script_path(BASELINE.script), options.load))
        paired, baseline_cpu_ms = theirs.total()
        cpu_ms["baseline"] = baseline_cpu_ms["baseline"]  # its server's, not its wrk's
    log(
        f"{scenario.key}: {result.requests_per_second:.0f} req/s ({outcome.writes} writes),"
        f" p99 {result.latency_us.p99 / 1000:.1f} ms, {result.errors.total} errors,"
        f" {outcome.stale_reads} stale reads"
    )
    return Measured(result, cpu_ms, paired)


def slicing(options: Options) -> tuple[int, int]:
    """How a scenario's measured seconds are cut: (slices, seconds per slice)."""
    slices = max(1, min(options.slices, options.load.seconds))
    return slices, max(1, options.load.seconds // slices)


def wrk_runs(options: Options) -> list[int]:
    """The seconds of each wrk run of one scenario: the warm-up (if any), then each slice."""
    slices, seconds = slicing(options)
    return ([options.warmup_s] if options.warmup_s > 0 else []) + [seconds] * slices


def gateway_workers(first: int, expected: int, *, limit_s: float = WORKERS_WAIT_S) -> dict[str, int]:
    """The other gateway processes the first (`first`) started: gateway.1, gateway.2, ... by pid
    order, once all `expected` are there (RuntimeError after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while True:
        found = procmem.children_of(first)
        if len(found) >= expected:
            return {f"gateway.{index}": pid for index, pid in enumerate(found[:expected], start=1)}
        if time.monotonic() >= deadline:
            raise RuntimeError(f"the gateway started {len(found)} of its {expected} other workers")
        time.sleep(0.1)


def _drive(
    wrk_binary: str,
    target: Target,
    scenario: Scenario,
    options: Options,
    *,
    baseline: Target | None = None,
    pool: orderpool.OrderPool | None = None,
    around_measure: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
) -> Measured:
    """Warm up, then measure `scenario` in `options.slices` slices; with a `baseline`, each slice
    is followed by one of the baseline's of the same length, so that both see the same machine
    (a shared host's speed drifts by half over a minute: a baseline measured once, minutes
    apart, would make every ratio a guess). With a `pool` (orders), each wrk run of the scenario
    gets its own unused pets."""
    script = wrk.script_path(scenario.script)

    def own_pets(seconds: int) -> Target:
        return (
            target if pool is None else dataclasses.replace(target, env={**target.env, **pool.take(seconds)})
        )

    waited = settle(target.pids, limit_s=options.settle_s)
    if waited > 1:
        log(f"{scenario.key}: waited {waited:.1f}s for the previous scenario's requests to end")
    if options.warmup_s > 0:
        log(f"{scenario.key}: warm-up {options.warmup_s}s")
        warmup = dataclasses.replace(options.load, seconds=options.warmup_s)
        wrk.run(wrk_binary, target.url, script, warmup, own_pets(warmup.seconds).env)
    slices, slice_seconds = slicing(options)
    load = dataclasses.replace(options.load, seconds=slice_seconds)
    paired = "" if baseline is None else f", taking turns with the baseline in {slices} slices"
    log(f"{scenario.key}: {load.seconds * slices}s at {options.load.connections} connections{paired}")
    mine, theirs = _Slices(), _Slices()
    lookups_before = _cache_lookups(target)
    with around_measure():
        for _ in range(slices):
            mine.add(*_measure(wrk_binary, own_pets(load.seconds), script, load))
            if baseline is not None:
                theirs.add(*_measure(wrk_binary, baseline, wrk.script_path(BASELINE.script), load))
    lookups = {
        result: count - lookups_before.get(result, 0) for result, count in _cache_lookups(target).items()
    }
    result, cpu_ms = mine.total()
    paired_result = None
    if baseline is not None:
        paired_result, baseline_cpu_ms = theirs.total()
        cpu_ms["baseline"] = baseline_cpu_ms["baseline"]  # its server's, not its wrk's
    log(
        f"{scenario.key}: {result.requests_per_second:.0f} req/s, p99 {result.latency_us.p99 / 1000:.1f} ms,"
        f" {result.errors.total} errors"
        + ("" if paired_result is None else f"; baseline {paired_result.requests_per_second:.0f} req/s")
        + (
            ""
            if not lookups
            else f"; pet cache {lookups.get('hit', 0)} hits, {lookups.get('miss', 0)} misses"
        )
    )
    return Measured(result, cpu_ms, paired_result, lookups)


def _measure(
    wrk_binary: str, target: Target, script: Path, load: wrk.Load
) -> tuple[wrk.WrkResult, dict[str, float]]:
    """One wrk run and the CPU seconds each watched process (and wrk) used meanwhile."""
    cpu_before, wrk_before = procmem.cpu_seconds(target.pids), _children_cpu_s()
    result = wrk.run(wrk_binary, target.url, script, load, target.env)
    cpu_after, wrk_after = procmem.cpu_seconds(target.pids), _children_cpu_s()
    used = {name: cpu_after[name] - cpu_before[name] for name in cpu_after if name in cpu_before}
    used["wrk"] = wrk_after - wrk_before  # the only child that ended meanwhile
    return result, used


# ---------------------------------------------------------------------------------------
# The baseline


@contextlib.contextmanager
def _baseline_server(
    options: Options,
) -> Iterator[tuple[Target | None, procmem.Sampler | None]]:
    """The bare aiohttp baseline, up for the whole run (none when profiling), its RSS sampled."""
    if options.profile:
        yield None, None
        return
    port = free_port()
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "petstore_bench.baseline", "--port", str(port), "--pets", str(options.pets)]
    )
    try:
        wait_for_port(port, timeout=30)
        env = {"BENCH_PET_IDS": ",".join(str(pet_id) for pet_id in range(1, options.pets + 1))}
        pids = {"baseline": process.pid}
        with procmem.Sampler(pids) as sampler:
            yield Target(f"http://127.0.0.1:{port}", env, pids), sampler
    finally:
        _terminate(process)


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---------------------------------------------------------------------------------------
# The stack


@contextlib.contextmanager
def _database(options: Options, info: dict[str, Any]) -> Iterator[tuple[str, dict[str, int]]]:
    """The MongoDB URI the services get ("" = in-memory) and the database's pids to watch."""
    if options.memory_store:
        info["store"] = "embedded in-memory store"
        yield "", {}
        return
    given = os.environ.get("MONGODB_URI", "")
    if given:
        info["store"] = "MongoDB at MONGODB_URI"
        yield given, {}
        return
    info["store"] = "FerretDB (PostgreSQL) started for the run"
    with running_ferretdb() as uri:
        pids = procmem.children_named("ferretdb")
        yield uri, ({"ferretdb": pids[0]} if len(pids) == 1 else {})


def _run_stack(
    options: Options, wrk_binary: str, info: dict[str, Any], baseline: Target | None
) -> tuple[dict[str, Measured], dict[str, procmem.ProcessMemory]]:
    api_key = secrets.token_urlsafe(24)
    prefix = f"bench{secrets.token_hex(4)}"
    profile_output = (
        options.results_dir / f"profile-{options.profile_process}-{options.scenarios[0]}"
        if options.profile
        else None
    )
    launched: dict[str, dict[str, str]] = {}
    if options.gateway_uvloop:
        launched.setdefault("gateway", {})["PETSTORE_BENCH_UVLOOP"] = "1"
    if profile_output is not None:
        launched.setdefault(options.profile_process, {})["PETSTORE_BENCH_PROFILE"] = str(profile_output)
        for stale in (profile_output.with_suffix(".html"), profile_output.with_suffix(".txt")):
            stale.unlink(missing_ok=True)
    log_dir = options.results_dir / "logs" / options.mode
    for stale_log in log_dir.glob("*.log"):
        stale_log.unlink()  # the stack appends: keep one run's lines only
    with _database(options, info) as (uri, database_pids):
        stack = Stack(
            mongodb_uri=uri,
            api_keys=api_key,
            database_prefix=prefix,
            extra_env={"LOG_LEVEL": options.log_level, **RATE_LIMITS_OUT_OF_REACH},
            log_dir=log_dir,
        )
        stack.processes["gateway"].env["GATEWAY_WORKERS"] = str(options.gateway_workers)
        for name, extra in options.process_env.items():
            stack.processes[name].env.update(extra)
        for name, env in launched.items():
            spec = stack.processes[name]
            spec.env.update(env, PETSTORE_BENCH_MODULE=spec.module)
            spec.module = "petstore_bench.launcher"
        log(f"starting the stack on {info['store']} (logs in {stack.log_dir})")
        stack.start()
        try:
            pids = {
                name: spec.process.pid for name, spec in stack.processes.items() if spec.process is not None
            }
            if options.gateway_workers > 1:
                workers = gateway_workers(pids["gateway"], options.gateway_workers - 1)
                log(f"gateway workers: {', '.join(f'{name} pid {pid}' for name, pid in workers.items())}")
                pids.update(workers)
            loaded = asyncio.run(data.load(stack.base_url, api_key, pets=options.pets, users=options.users))
            log(f"loaded {len(loaded.pet_ids)} pets and {len(loaded.usernames)} users")
            etags_file = options.results_dir / f"pet-etags-{options.mode}.txt"
            etags_file.write_text(loaded.etags_lines())
            env = {
                "BENCH_API_KEY": api_key,
                "BENCH_PET_IDS": ",".join(map(str, loaded.pet_ids)),
                "BENCH_PET_ETAGS_FILE": str(etags_file),
                "BENCH_USERS": ",".join(loaded.usernames),
                "BENCH_PASSWORD": data.USER_PASSWORD,
            }
            url = f"http://127.0.0.1:{stack.gateway_port}"
            mixed_target = MixedTarget(url, api_key, loaded.pet_names())
            results: dict[str, Measured] = {}
            watched = {**pids, **database_pids}
            target = Target(url, env, watched, stack.gateway_metrics_url())
            with procmem.Sampler(watched) as sampler:
                for key in options.scenarios:
                    profiled = (
                        _profiling(stack, options.profile_process)
                        if profile_output is not None
                        else contextlib.nullcontext
                    )
                    scenario = BY_KEY[key]
                    if scenario.driver == "mixed":
                        results[key] = _drive_mixed(
                            mixed_target,
                            scenario,
                            options,
                            watched,
                            baseline,
                            wrk_binary,
                            around_measure=profiled,
                        )
                    else:
                        pool = (
                            _load_order_pool(stack.base_url, api_key, options, info)
                            if scenario.orders_pets
                            else None
                        )
                        results[key] = _drive(
                            wrk_binary,
                            target,
                            scenario,
                            options,
                            baseline=baseline,
                            pool=pool,
                            around_measure=profiled,
                        )
                # "After the benchmark" means once the requests wrk left queued are answered
                # (logins wait for a hashing thread), not while they still hold memory.
                settle(watched)
        finally:
            stack.stop()
            if uri and not options.memory_store and os.environ.get("MONGODB_URI"):
                _drop_databases(uri, prefix)
    if profile_output is not None:
        _wait_for(profile_output.with_suffix(".txt"), log_dir / f"{options.profile_process}.log")
        info["profile"] = {
            "html": str(profile_output.with_suffix(".html")),
            "text": str(profile_output.with_suffix(".txt")),
        }
    return results, sampler.processes


def order_rate_bound(options: Options) -> int:
    """The orders/s the order scenario's pool is sized for, by store (as _database picks it)."""
    if options.memory_store or os.environ.get("MONGODB_URI"):
        return orderpool.ORDER_RATE_BOUND
    return orderpool.FERRETDB_ORDER_RATE_BOUND


def _load_order_pool(
    base_url: str, api_key: str, options: Options, info: dict[str, Any]
) -> orderpool.OrderPool:
    """Available pets for the order scenario, enough for its warm-up and slices at the store's
    rate bound (an order reserves its pet: none can be ordered twice)."""
    runs, rate = wrk_runs(options), order_rate_bound(options)
    size = orderpool.pool_size(runs, rate=rate)
    log(
        f"loading {size} available pets to order ({'+'.join(map(str, runs))}s of wrk runs"
        f" at {rate} orders/s at most)"
    )
    started = time.monotonic()
    pet_ids = asyncio.run(data.load_orderable_pets(base_url, api_key, size))
    ids_file = options.results_dir / f"order-pets-{options.mode}.txt"
    orderpool.write_ids(ids_file, pet_ids)
    log(f"loaded {len(pet_ids)} pets to order in {time.monotonic() - started:.1f}s")
    info["order_pool"] = {"pets": size, "orders_per_second_bound": rate}
    return orderpool.OrderPool(ids_file, size, threads=options.load.threads, rate=rate)


def _profiling(stack: Stack, name: str) -> Callable[[], contextlib.AbstractContextManager[None]]:
    @contextlib.contextmanager
    def around() -> Iterator[None]:
        stack.signal(name, PROFILE_START)
        try:
            yield
        finally:
            stack.signal(name, PROFILE_STOP)

    return around


def _wait_for(path: Path, process_log: Path) -> None:
    deadline = time.monotonic() + PROFILE_WAIT_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not path.exists():
        log(f"the profile {path} was not written (see {process_log})")


def _drop_databases(uri: str, prefix: str) -> None:
    """On a MongoDB the caller gave us, leave nothing behind (a failure here is only reported)."""
    from pymongo import MongoClient
    from pymongo.errors import PyMongoError

    client: MongoClient[dict[str, Any]] = MongoClient(uri, serverSelectionTimeoutMS=3000)
    try:
        for name in client.list_database_names():
            if name.startswith(prefix + "_"):
                client.drop_database(name)
    except PyMongoError as exc:
        log(f"could not drop the bench databases {prefix}_*: {exc}")
    finally:
        client.close()
