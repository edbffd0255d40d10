"""Ratios to the baseline, the targets' PASS/MISS, and the table, JSON and chart of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from petstore_bench import report
from petstore_bench.procmem import ProcessMemory
from petstore_bench.wrk import Errors, Latency, WrkResult


def result(rps: float, *, p99_ms: float = 5.0, status_errors: int = 0, timeouts: int = 0) -> WrkResult:
    """`rps` requests per second over 10 s."""
    return WrkResult(
        requests=round(rps * 10),
        duration_s=10.0,
        bytes=1000,
        errors=Errors(status=status_errors, timeout=timeouts),
        latency_us=Latency(100, p99_ms * 2000, 1000, 500, 900, 1000, 1500, p99_ms * 1000, p99_ms * 1500),
    )


def memory(mb: float) -> ProcessMemory:
    kib = round(mb * 1024)
    return ProcessMemory(pid=123, peak_rss_kb=kib + 1024, last_rss_kb=kib)


BASELINE = result(10_000)
ALL_PASS = {"get_pet_json": result(2_600, p99_ms=20), "post_order": result(1_300)}
LEAN = {name: memory(60) for name in ("gateway", "pet", "order", "user")}


def verdicts(checks: list[report.Check]) -> dict[tuple[str, str], str]:
    return {(check.subject, check.target): check.verdict for check in checks}


def test_ratio_to_the_baseline() -> None:
    assert report.ratio(result(2_500), BASELINE) == pytest.approx(0.25)
    assert report.ratio(result(2_500), None) is None
    assert report.ratio(result(2_500), result(0)) is None


def test_every_target_passes() -> None:
    checks = report.evaluate(ALL_PASS, BASELINE, LEAN)
    assert len(checks) == 3 + 1 + 4
    assert all(check.passed for check in checks)


def test_targets_hold_at_their_exact_thresholds() -> None:
    at_the_line = {"get_pet_json": result(2_500, p99_ms=25), "post_order": result(1_200)}
    assert all(check.passed for check in report.evaluate(at_the_line, BASELINE, {}))


def test_each_target_can_miss() -> None:
    scenarios = {
        "get_pet_json": result(2_400, p99_ms=25.1, status_errors=1),
        "post_order": result(1_100),
    }
    found = verdicts(report.evaluate(scenarios, BASELINE, {"gateway": memory(80), "user": memory(79.9)}))
    assert found == {
        ("get_pet_json", "throughput >= 0.25 x baseline"): "MISS",
        ("get_pet_json", "p99 <= 25 ms"): "MISS",
        ("get_pet_json", "zero errors"): "MISS",
        ("post_order", "throughput >= 0.12 x baseline"): "MISS",
        ("gateway", "RSS after the run < 80 MB"): "MISS",
        ("user", "RSS after the run < 80 MB"): "PASS",
    }


def test_socket_errors_count_as_errors() -> None:
    checks = report.evaluate({"get_pet_json": result(5_000, timeouts=2)}, BASELINE, {})
    assert verdicts(checks)[("get_pet_json", "zero errors")] == "MISS"


def test_without_a_baseline_no_ratio_is_judged() -> None:
    checks = report.evaluate(ALL_PASS, None, {})
    assert [check.target for check in checks] == ["p99 <= 25 ms", "zero errors"]


def test_the_database_and_the_baseline_have_no_memory_target() -> None:
    checks = report.evaluate({}, BASELINE, {"ferretdb": memory(500), "baseline": memory(500)})
    assert checks == []


def test_a_run_is_broken_without_successes_and_strictly_with_errors() -> None:
    fine = {"get_pet_json": result(100)}
    assert report.broken(fine, BASELINE, strict=True) == []
    erring = {"get_pet_json": result(100, status_errors=3)}
    assert report.broken(erring, BASELINE, strict=False) == []
    assert report.broken(erring, BASELINE, strict=True) == [
        "get_pet_json: 3 errors (Errors(connect=0, read=0, write=0, status=3, timeout=0))"
    ]
    all_refused = {"post_pet": result(100, status_errors=1000)}
    assert report.broken(all_refused, BASELINE, strict=False) == ["post_pet: no successful response"]
    assert report.broken({}, result(0), strict=False) == ["baseline: no successful response"]


def run_results() -> report.RunResults:
    return report.RunResults(
        baseline=BASELINE,
        scenarios={**ALL_PASS, "login": result(30, p99_ms=900)},
        memory={**LEAN, "user": memory(91), "ferretdb": memory(50)},
        cpu_ms_per_request={
            "baseline": {"baseline": 0.05, "wrk": 0.01},
            "get_pet_json": {"gateway": 0.4, "pet": 0.35, "ferretdb": 2.5, "wrk": 0.02},
        },
        info={"date": "2026-01-01T00:00:00+00:00", "command": "python -m petstore_bench --smoke"},
    )


def test_table_shows_ratios_and_verdicts() -> None:
    results = run_results()
    checks = report.evaluate(results.scenarios, results.baseline, results.memory)
    lines = report.table(results, checks).splitlines()
    assert lines[0].split() == [
        "scenario",
        "req/s",
        "x",
        "base",
        "p50",
        "ms",
        "p99",
        "ms",
        "errors",
        "target",
    ]
    assert lines[1].split() == ["baseline", "GET", "pet", "JSON", "10000", "1.000", "0.9", "5.0", "0"]
    assert lines[2].split()[-6:] == ["2600", "0.260", "0.9", "20.0", "0", "PASS"]
    assert lines[4].split()[-5:] == ["30", "0.003", "0.9", "900.0", "0"]  # no target for login
    user = next(line for line in lines if line.startswith("user "))
    assert user.split()[-3:] == ["92.0", "91.0", "MISS"]
    ferretdb = next(line for line in lines if line.startswith("ferretdb"))
    assert ferretdb.split()[-2:] == ["51.0", "50.0"]
    assert "  MISS  user process           RSS after the run < 80 MB: 91.0 MB" in lines
    header = lines.index(next(line for line in lines if line.startswith("CPU ms/request")))
    assert lines[header].split() == [
        "CPU",
        "ms/request",
        "baseline",
        "gateway",
        "pet",
        "ferretdb",
        "wrk",
        "total",
    ]
    assert lines[header + 1].split()[-6:] == ["0.05", "-", "-", "-", "0.01", "0.06"]
    assert lines[header + 2].split()[-6:] == ["-", "0.40", "0.35", "2.50", "0.02", "3.27"]


def test_json_document(tmp_path: Path) -> None:
    results = run_results()
    checks = report.evaluate(results.scenarios, results.baseline, results.memory)
    path = tmp_path / "full.json"
    report.write_json(path, report.to_json(results, checks))
    document = json.loads(path.read_text())
    assert document["command"] == "python -m petstore_bench --smoke"
    assert document["baseline"]["throughput_ratio_to_baseline"] == 1.0
    get_pet = document["scenarios"][0]
    assert get_pet["key"] == "get_pet_json"
    assert get_pet["throughput_ratio_to_baseline"] == 0.26
    assert get_pet["target"] == "PASS"
    assert get_pet["latency_ms"]["p99"] == 20.0
    assert document["scenarios"][2]["target"] is None
    assert document["processes"]["user"] == {
        "pid": 123,
        "peak_rss_mb": 92.0,
        "rss_after_mb": 91.0,
        "target": "MISS",
    }
    assert document["processes"]["ferretdb"]["target"] is None
    assert {
        "subject": "user",
        "target": "RSS after the run < 80 MB",
        "measured": "91.0 MB",
        "result": "MISS",
    } in (document["targets"])
    assert document["cpu_ms_per_request"]["get_pet_json"]["ferretdb"] == 2.5
    assert document["all_targets_passed"] is False


def test_chart_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "full.png"
    report.write_chart(path, run_results(), "test run")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
