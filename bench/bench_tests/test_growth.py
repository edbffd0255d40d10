"""The growth mode: its command line, its table and flags, and a real small run on the embedded store."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from petstore_bench import growth_cli, growth_data, growth_report
from petstore_bench.growth import FIGURES, PROCESSES, FigureResult, StoreResults, per_10k_kib, per_request

MEASURES = ("req/s", "p99 ms", "errors", *(f"cpu ms/req {name}" for name in (*PROCESSES, "total")))


def result(rps: float, p99_ms: float = 10.0, gateway_ms: float = 1.0, requests: int = 5000) -> FigureResult:
    return FigureResult(
        requests=requests,
        seconds=requests / rps,
        errors=0,
        p50_ms=p99_ms / 2,
        p99_ms=p99_ms,
        cpu_ms=per_request({"gateway": gateway_ms * requests / 1000}, requests),
    )


def store(**figures: tuple[FigureResult, FigureResult]) -> StoreResults:
    found = StoreResults("memory", "embedded in-memory store")
    for figure in FIGURES:
        first, last = figures.get(figure.key, (result(1000), result(1000)))
        found.figures[figure.key] = {1000: first, 100_000: last}
    found.counts = {1000: {"pets": 1000}, 100_000: {"pets": 100_000}}
    found.cache_memory = {1000: {"kib_per_10k_cached": 9000.0}, 100_000: {"kib_per_10k_cached": 9100.0}}
    found.seeding = [{"size": 1000, "seconds": 2.0}, {"size": 100_000, "seconds": 200.0}]
    return found


def test_the_table_has_every_figure_and_measure_at_every_size_with_its_ratio() -> None:
    text = growth_report.table([store()], (1000, 100_000))
    header, *lines = text.splitlines()
    assert header.split() == ["store", "figure", "measure", "1k", "100k", "100k/1k", "flag"]
    for figure in FIGURES:
        measures = [line for line in lines if line.split()[1:2] == [figure.key]]
        assert len(measures) == len(MEASURES), figure.key
        for line, measure in zip(measures, MEASURES, strict=True):
            assert f"  {measure}  " in line
    assert any(line.split()[1:3] == ["pet", "cache"] for line in lines)
    assert not growth_report.flags([store()], (1000, 100_000))


def test_a_figure_worse_by_more_than_the_factor_is_flagged_and_a_lesser_change_is_not() -> None:
    slower = store(
        post_order=(result(1000), result(600)),  # 1.67x fewer requests/s
        list_orders=(result(1000, p99_ms=10), result(1000, p99_ms=14)),  # 1.4x: not flagged
        get_miss=(result(1000, gateway_ms=1.0), result(1000, gateway_ms=2.0)),  # CPU doubled
    )
    flagged = growth_report.flags([slower], (1000, 100_000))
    assert flagged == [
        "memory get_miss cpu ms/req gateway: 2.00x (100k/1k)",
        "memory get_miss cpu ms/req total: 2.00x (100k/1k)",
        "memory post_order req/s: 0.60x (100k/1k)",
    ]
    lines = growth_report.table([slower], (1000, 100_000)).splitlines()

    def line(figure: str, measure: str) -> str:
        return next(text for text in lines if text.split()[1:2] == [figure] and f"  {measure}  " in text)

    assert line("post_order", "req/s").endswith(growth_report.FLAG)
    assert not line("list_orders", "p99 ms").endswith(growth_report.FLAG)


def test_cpu_of_a_few_clock_ticks_over_few_requests_is_noise_not_growth() -> None:
    logins = store(login=(result(15, gateway_ms=0.0, requests=15), result(15, gateway_ms=0.67, requests=15)))
    assert not growth_report.flags([logins], (1000, 100_000))


def test_memory_per_10k_cached_pets() -> None:
    assert per_10k_kib(70_000, 80_000, 20_000) == 5_000
    assert per_10k_kib(70_000, 70_100, 0) is None  # nothing cached (FerretDB: no change stream)


def test_proportions_keep_each_customers_order_list_the_same_length() -> None:
    for size in (1000, 10_000, 100_000):
        users = growth_data.users_for(size)
        assert users * growth_data.PETS_PER_USER == size
        assert users * growth_data.ORDERS_PER_USER == size // 10


def test_command_line() -> None:
    full = growth_cli.parse_args(["--growth"])
    assert (full.sizes, full.window_s, full.stores) == ((1000, 10_000, 100_000), 5, ("memory", "mongo"))
    smoke = growth_cli.parse_args(["--growth", "--smoke", "--memory-store"])
    assert (smoke.sizes, smoke.window_s, smoke.stores, smoke.mode) == (
        (100, 1000),
        1,
        ("memory",),
        "growth-smoke",
    )
    assert growth_cli.parse_args(["--growth", "--growth-sizes", "10,20"]).sizes == (10, 20)


@pytest.mark.parametrize(
    "argv",
    [
        ["--growth", "--growth-sizes", "1000,100"],  # the shop only grows
        ["--growth", "--growth-sizes", "0,10"],
        ["--growth", "--growth-sizes", "a,b"],
        ["--growth", "--growth-stores", "sqlite"],
        ["--growth", "--growth-window", "0"],
        ["--growth", "--growth-budget", "0"],
    ],
)
def test_command_line_refuses_nonsense(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        growth_cli.parse_args(argv)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_the_smoke_run_prints_the_table_and_writes_its_json(tmp_path: Path) -> None:
    """The real thing, small: the stack on the embedded store grown to 100 then 1,000 pets
    through the gateway, every figure for 1 s (about 40 s). Structure, not timings."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "petstore_bench",
            "--growth",
            "--smoke",
            "--memory-store",
            "--results-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("store "))
    assert lines[header].split() == ["store", "figure", "measure", "100", "1k", "1k/100", "flag"]
    rows = [line.split() for line in lines[header + 1 :] if line.startswith("memory  ")]
    for figure in FIGURES:
        assert sum(row[1] == figure.key for row in rows) == len(MEASURES)
    document = json.loads((tmp_path / "growth-smoke.json").read_text())
    (memory,) = document["stores"]
    assert memory["error"] == ""
    assert memory["counts"]["1000"]["seeded_pets"] == 1000
    assert memory["counts"]["1000"]["users"] == growth_data.users_for(1000)
    for figure in FIGURES:
        for size in ("100", "1000"):
            measured = memory["figures"][figure.key][size]
            assert set(measured["cpu_ms_per_request"]) >= {*PROCESSES, "total"}
            assert measured["errors"] == 0, (figure.key, size, measured)
    assert memory["figures"]["get_hit"]["1000"]["notes"]["cache_hits"] > 0  # a cached read, indeed
    assert "cache_hits" not in memory["figures"]["get_miss"]["1000"].get("notes", {})  # cache off
    assert memory["cache_memory"]["1000"]["entries"] > 0
    assert {row["measure"] for row in document["table"]} >= set(MEASURES)
