"""Ratios to the baseline, the targets' PASS/MISS, and the table, JSON and chart of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from petstore_bench import report
from petstore_bench.procmem import ProcessMemory
from petstore_bench.wrk import Errors, Latency, WrkResult


def result(
    rps: float,
    *,
    p99_ms: float = 5.0,
    status_errors: int = 0,
    timeouts: int = 0,
    unexpected: int = 0,
    exhausted: int = 0,
    stale_reads: int | None = None,
) -> WrkResult:
    """`rps` requests per second over 10 s."""
    return WrkResult(
        requests=round(rps * 10),
        duration_s=10.0,
        bytes=1000,
        errors=Errors(status=status_errors, timeout=timeouts, unexpected=unexpected, exhausted=exhausted),
        latency_us=Latency(100, p99_ms * 2000, 1000, 500, 900, 1000, 1500, p99_ms * 1000, p99_ms * 1500),
        stale_reads=stale_reads,
    )


def memory(mb: float) -> ProcessMemory:
    kib = round(mb * 1024)
    return ProcessMemory(pid=123, peak_rss_kb=kib + 1024, last_rss_kb=kib)


BASELINE = result(10_000)
ALL_PASS = {
    "get_pet_random": result(6_200, p99_ms=9),
    "get_pet_304": result(6_000),
    "post_order": result(1_500, p99_ms=20),
    "get_pet_mixed": result(3_000, stale_reads=0),
}
LEAN = {name: memory(60) for name in ("gateway", "pet", "order", "user")}


def verdicts(checks: list[report.Check]) -> dict[tuple[str, str], str]:
    return {(check.subject, check.target): check.verdict for check in checks}


def test_ratio_to_the_baseline() -> None:
    assert report.ratio(result(2_500), BASELINE) == pytest.approx(0.25)
    assert report.ratio(result(2_500), None) is None
    assert report.ratio(result(2_500), result(0)) is None


def test_every_target_passes() -> None:
    checks = report.evaluate({**ALL_PASS, "get_pet_hot": result(7_100)}, BASELINE, LEAN)
    assert len(checks) == 3 + 2 + 1 + 3 + 2 + 4
    assert all(check.passed for check in checks)


def test_targets_hold_at_their_exact_thresholds() -> None:
    at_the_line = {
        "get_pet_random": result(6_000, p99_ms=10),
        "get_pet_hot": result(7_000),
        "post_order": result(1_400, p99_ms=25),
    }
    assert all(check.passed for check in report.evaluate(at_the_line, BASELINE, {}))


def test_each_target_can_miss() -> None:
    scenarios = {
        "get_pet_random": result(5_990, p99_ms=10.1, status_errors=1),
        "get_pet_hot": result(6_990),
        "get_pet_304": result(6_000, unexpected=1),
        "post_order": result(1_390, p99_ms=25.1),
        "get_pet_mixed": result(3_000, stale_reads=1, timeouts=1),
    }
    workers = {"gateway": memory(80), "gateway.1": memory(81), "user": memory(79.9)}
    found = verdicts(report.evaluate(scenarios, BASELINE, workers))
    assert found == {
        ("get_pet_random", "throughput >= 0.6 x baseline"): "MISS",
        ("get_pet_random", "p99 <= 10 ms"): "MISS",
        ("get_pet_random", "zero errors"): "MISS",
        ("get_pet_hot", "throughput >= 0.7 x baseline"): "MISS",
        ("get_pet_hot", "zero errors"): "PASS",
        ("get_pet_304", "zero errors"): "MISS",
        ("get_pet_mixed", "zero stale reads"): "MISS",
        ("get_pet_mixed", "zero errors"): "MISS",
        ("post_order", "throughput >= 0.14 x baseline"): "MISS",
        ("post_order", "p99 <= 25 ms"): "MISS",
        ("post_order", "zero errors"): "PASS",
        ("gateway", "RSS after the run < 80 MB"): "MISS",
        ("gateway.1", "RSS after the run < 80 MB"): "MISS",
        ("user", "RSS after the run < 80 MB"): "PASS",
    }


def test_socket_errors_count_as_errors() -> None:
    checks = report.evaluate({"get_pet_random": result(6_000, timeouts=2)}, BASELINE, {})
    assert verdicts(checks)[("get_pet_random", "zero errors")] == "MISS"


def test_unexpected_statuses_are_errors_not_successes() -> None:
    found = result(100, unexpected=400)
    assert found.errors.total == 400
    assert found.successes == 600
    assert report.broken({"get_pet_304": result(100, unexpected=1000)}, BASELINE, strict=False) == [
        "get_pet_304: no successful response"
    ]


def test_without_a_baseline_no_ratio_is_judged() -> None:
    checks = report.evaluate({"get_pet_random": ALL_PASS["get_pet_random"]}, None, {})
    assert [check.target for check in checks] == ["p99 <= 10 ms", "zero errors"]


def test_the_database_and_the_baseline_have_no_memory_target() -> None:
    checks = report.evaluate({}, BASELINE, {"ferretdb": memory(500), "baseline": memory(500)})
    assert checks == []


def test_a_run_is_broken_without_successes_and_strictly_with_errors() -> None:
    fine = {"get_pet_json": result(100)}
    assert report.broken(fine, BASELINE, strict=True) == []
    erring = {"get_pet_json": result(100, status_errors=3)}
    assert report.broken(erring, BASELINE, strict=False) == []
    assert report.broken(erring, BASELINE, strict=True) == [
        "get_pet_json: 3 errors (Errors(connect=0, read=0, write=0, status=3, timeout=0, unexpected=0,"
        " exhausted=0))"
    ]
    revalidated_with_200 = {"get_pet_304": result(100, unexpected=2)}
    assert report.broken(revalidated_with_200, BASELINE, strict=True) == [
        "get_pet_304: 2 errors (Errors(connect=0, read=0, write=0, status=0, timeout=0, unexpected=2,"
        " exhausted=0))"
    ]
    stale = {"get_pet_mixed": result(100, stale_reads=1)}
    assert report.broken(stale, BASELINE, strict=False) == []
    assert report.broken(stale, BASELINE, strict=True) == ["get_pet_mixed: 1 stale reads"]
    all_refused = {"post_pet": result(100, status_errors=1000)}
    assert report.broken(all_refused, BASELINE, strict=False) == ["post_pet: no successful response"]
    assert report.broken({}, result(0), strict=False) == ["baseline: no successful response"]


def test_a_pool_that_ran_out_breaks_even_a_full_run() -> None:
    # post_order's threads stopped early, having ordered every pet they were given: the figures
    # are of less load than asked for, whatever the mode.
    ran_out = {"post_order": result(1_000, status_errors=2, exhausted=2)}
    for strict in (False, True):
        problems = report.broken(ran_out, BASELINE, strict=strict)
        assert problems[0].startswith("post_order: its pool of pets ran out (2 requests could not be made")
    assert len(report.broken(ran_out, BASELINE, strict=True)) == 2  # and its errors
    assert result(1_000, exhausted=2).errors.total == 2


def run_results() -> report.RunResults:
    return report.RunResults(
        baseline=BASELINE,
        scenarios={**ALL_PASS, "login": result(30, p99_ms=900)},
        memory={**LEAN, "gateway.1": memory(62), "user": memory(91), "ferretdb": memory(50)},
        cpu_ms_per_request={
            "baseline": {"baseline": 0.05, "wrk": 0.01},
            "get_pet_random": {
                "baseline": 0.04,
                "gateway": 0.2,
                "gateway.1": 0.25,
                "pet": 0.05,
                "ferretdb": 2.5,
                "wrk": 0.02,
            },
            "get_pet_mixed": {"gateway": 0.3, "gateway.1": 0.3, "pet": 0.1, "client": 0.4},
        },
        paired_baselines={"get_pet_mixed": result(6_000)},
        cache_lookups={"get_pet_random": {"hit": 61_990, "miss": 10}},
        info={"date": "2026-01-01T00:00:00+00:00", "command": "python -m petstore_bench --smoke"},
    )


def test_table_shows_ratios_and_verdicts() -> None:
    results = run_results()
    checks = report.evaluate(results.scenarios, results.baseline, results.memory)
    lines = report.table(results, checks).splitlines()
    assert lines[0].split() == [
        "scenario",
        "req/s",
        "base",
        "req/s",
        "x",
        "base",
        "p50",
        "ms",
        "p99",
        "ms",
        "errors",
        "stale",
        "target",
    ]
    assert lines[1].split() == [
        "baseline",
        "GET",
        "pet",
        "JSON",
        "10000",
        "10000",
        "1.000",
        "0.9",
        "5.0",
        "0",
        "-",
    ]
    assert lines[2].split()[-8:] == ["6200", "10000", "0.620", "0.9", "9.0", "0", "-", "PASS"]
    # The mixed scenario is compared with the baseline that took turns with it, not the first one.
    assert lines[5].split()[-8:] == ["3000", "6000", "0.500", "0.9", "5.0", "0", "0", "PASS"]
    assert lines[6].split()[-7:] == ["30", "10000", "0.003", "0.9", "900.0", "0", "-"]  # no target for login
    cache = lines.index(next(line for line in lines if line.startswith("pet cache (gateway)")))
    assert lines[cache + 1].split()[-2:] == ["61990", "10"]
    user = next(line for line in lines if line.startswith("user "))
    assert user.split()[-3:] == ["92.0", "91.0", "MISS"]
    worker = next(line for line in lines if line.startswith("gateway.1 "))
    assert worker.split()[-3:] == ["63.0", "62.0", "PASS"]
    ferretdb = next(line for line in lines if line.startswith("ferretdb"))
    assert ferretdb.split()[-2:] == ["51.0", "50.0"]
    assert ["MISS", "user", "process", "RSS", "after", "the", "run", "<", "80", "MB:", "91.0", "MB"] in [
        line.split() for line in lines
    ]
    header = lines.index(next(line for line in lines if line.startswith("CPU ms/request")))
    assert lines[header].split() == [
        "CPU",
        "ms/request",
        "baseline",
        "gateway",
        "gateway.1",
        "gateway",
        "total",
        "pet",
        "ferretdb",
        "wrk",
        "client",
        "total",
    ]
    assert lines[header + 1].split()[-9:] == ["0.05", "-", "-", "-", "-", "-", "0.01", "-", "0.06"]
    assert lines[header + 2].split()[-9:] == [  # the paired baseline's 0.04 is not in the total
        "0.04",
        "0.20",
        "0.25",
        "0.45",
        "0.05",
        "2.50",
        "0.02",
        "-",
        "3.02",
    ]
    assert lines[header + 3].split()[-9:] == ["-", "0.30", "0.30", "0.60", "0.10", "-", "-", "0.40", "1.10"]


def test_json_document(tmp_path: Path) -> None:
    results = run_results()
    checks = report.evaluate(results.scenarios, results.baseline, results.memory)
    path = tmp_path / "full.json"
    report.write_json(path, report.to_json(results, checks))
    document = json.loads(path.read_text())
    assert document["command"] == "python -m petstore_bench --smoke"
    assert document["baseline"]["throughput_ratio_to_baseline"] == 1.0
    get_pet = document["scenarios"][0]
    assert get_pet["key"] == "get_pet_random"
    assert get_pet["throughput_ratio_to_baseline"] == 0.62
    assert get_pet["target"] == "PASS"
    assert get_pet["latency_ms"]["p99"] == 9.0
    assert get_pet["errors"]["unexpected"] == 0
    assert "stale_reads" not in get_pet
    assert get_pet["gateway_pet_cache_lookups"] == {"hit": 61_990, "miss": 10}
    mixed = document["scenarios"][3]
    assert (mixed["key"], mixed["stale_reads"], mixed["target"]) == ("get_pet_mixed", 0, "PASS")
    assert document["scenarios"][4]["target"] is None
    assert document["processes"]["user"] == {
        "pid": 123,
        "peak_rss_mb": 92.0,
        "rss_after_mb": 91.0,
        "target": "MISS",
    }
    assert list(document["processes"])[:2] == ["gateway", "gateway.1"]
    assert document["processes"]["ferretdb"]["target"] is None
    assert {
        "subject": "user",
        "target": "RSS after the run < 80 MB",
        "measured": "91.0 MB",
        "result": "MISS",
    } in (document["targets"])
    assert document["cpu_ms_per_request"]["get_pet_random"]["ferretdb"] == 2.5
    assert document["all_targets_passed"] is False


def test_chart_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "full.png"
    report.write_chart(path, run_results(), "test run")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_speed_target_is_judged_against_the_baseline_paired_with_it() -> None:
    # 6,000 req/s is 0.6x the first baseline but 0.5x the one measured taking turns with it.
    scenarios = {"get_pet_random": result(6_000, p99_ms=9)}
    alone = verdicts(report.evaluate(scenarios, BASELINE, {}))
    paired = verdicts(report.evaluate(scenarios, BASELINE, {}, {"get_pet_random": result(12_000)}))
    assert alone[("get_pet_random", "throughput >= 0.6 x baseline")] == "PASS"
    assert paired[("get_pet_random", "throughput >= 0.6 x baseline")] == "MISS"
