"""Parsing what wrk and lua/report.lua print, and the command line we give wrk."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from petstore_bench import wrk
from petstore_bench.scenarios import BASELINE, SCENARIOS, Scenario
from petstore_devstack.ports import free_port, wait_for_port

# What `wrk --latency -s get_pet_json.lua` printed against the baseline (trimmed only of the
# trailing spaces wrk pads its lines with).
WRK_OUTPUT = """\
Running 2s test @ http://127.0.0.1:18181
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.26ms  182.60us   4.31ms   93.70%
    Req/Sec    25.57k     1.79k   27.32k    60.00%
  Latency Distribution
     50%    1.21ms
     75%    1.26ms
     90%    1.35ms
     99%    2.15ms
  78862 requests in 3.10s, 22.91MB read
Requests/sec:  25446.56
Transfer/sec:      7.39MB
PETSTORE_BENCH_RESULT {"requests":78862,"duration_us":3099122,"bytes":24026624,\
"errors":{"connect":0,"read":0,"write":0,"status":0,"timeout":0},\
"latency_us":{"min":217,"max":4312,"mean":1255.9,"stdev":182.6,\
"p50":1214,"p75":1261,"p90":1346,"p99":2147,"p999":2895}}
"""

WITH_ERRORS = """\
Running 1s test @ http://127.0.0.1:8080
  6336 requests in 2.00s, 1.18MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 40
Requests/sec:   3166.11
PETSTORE_BENCH_RESULT {"requests":6336,"duration_us":2000000,"bytes":1235520,\
"errors":{"connect":1,"read":2,"write":0,"status":40,"timeout":3},\
"latency_us":{"min":3487,"max":34617,"mean":10202.8,"stdev":3366.4,\
"p50":9075,"p75":10755,"p90":12442,"p99":27488,"p999":34507}}
"""


def test_parses_the_result_line() -> None:
    result = wrk.parse_result(WRK_OUTPUT)
    assert result.requests == 78862
    assert result.duration_s == pytest.approx(3.099122)
    assert result.requests_per_second == pytest.approx(78862 / 3.099122)
    assert result.bytes == 24026624
    assert result.errors == wrk.Errors()
    assert result.latency_us.p50 == 1214
    assert result.latency_us.p99 == 2147
    assert result.latency_us.mean == pytest.approx(1255.9)


def test_counts_status_and_socket_errors() -> None:
    result = wrk.parse_result(WITH_ERRORS)
    assert result.errors.status == 40
    assert result.errors.socket == 1 + 2 + 3
    assert result.errors.total == 46
    assert result.successes == 6336 - 40
    assert result.to_json()["errors"]["total"] == 46


WITH_UNEXPECTED = WITH_ERRORS.replace('"timeout":3}', '"timeout":3,"unexpected":100}')


def test_counts_unexpected_statuses_as_errors_not_successes() -> None:
    result = wrk.parse_result(WITH_UNEXPECTED)
    assert result.errors.unexpected == 100
    assert result.errors.total == 146
    assert result.successes == 6336 - 40 - 100
    assert result.to_json()["errors"]["unexpected"] == 100
    assert wrk.parse_result(WITH_ERRORS).errors.unexpected == 0  # absent: nothing expected


def test_counts_requests_a_spent_pool_could_not_make_as_errors() -> None:
    result = wrk.parse_result(WITH_ERRORS.replace('"timeout":3}', '"timeout":3,"exhausted":7}'))
    assert result.errors.exhausted == 7
    assert result.errors.total == 46 + 7
    assert result.successes == 6336 - 40  # the placeholders answered are among the status errors
    assert result.to_json()["errors"]["exhausted"] == 7
    assert wrk.parse_result(WITH_ERRORS).errors.exhausted == 0  # absent: no pool


def test_to_json_reports_milliseconds() -> None:
    document = wrk.parse_result(WRK_OUTPUT).to_json()
    assert document["requests_per_second"] == pytest.approx(25446.6, abs=0.1)
    assert document["latency_ms"]["p99"] == pytest.approx(2.147)
    assert list(document["latency_ms"]) == ["min", "mean", "stdev", "p50", "p75", "p90", "p99", "p999", "max"]


def test_the_last_result_line_wins() -> None:
    later = WRK_OUTPUT.replace('"requests":78862', '"requests":5')
    assert wrk.parse_result(WRK_OUTPUT + later).requests == 5


def test_no_result_line_is_an_error() -> None:
    # What wrk prints when the script failed to load: its own summary, no result line.
    output = "Running 1s test @ http://127.0.0.1:8080\nget_pet_json.lua: report.lua:14: BENCH_PET_IDS ...\n"
    with pytest.raises(wrk.WrkError, match="no result line"):
        wrk.parse_result(output)


@pytest.mark.parametrize(
    "line",
    [
        "PETSTORE_BENCH_RESULT {not json",
        'PETSTORE_BENCH_RESULT {"requests": 1}',
        'PETSTORE_BENCH_RESULT {"requests":1,"duration_us":1,"bytes":1,"errors":[],"latency_us":{}}',
    ],
)
def test_an_unreadable_result_line_is_an_error(line: str) -> None:
    with pytest.raises(wrk.WrkError, match="unreadable"):
        wrk.parse_result(line + "\n")


def test_no_requests_means_zero_throughput() -> None:
    result = wrk.WrkResult(0, 0.0, 0, wrk.Errors(), wrk.Latency(0, 0, 0, 0, 0, 0, 0, 0, 0))
    assert result.requests_per_second == 0.0
    assert result.successes == 0


def test_command_line() -> None:
    argv = wrk.command(
        "/usr/bin/wrk",
        "http://127.0.0.1:8080",
        Path("/x/get_pet_json.lua"),
        seconds=15,
        connections=32,
        threads=1,
        timeout_s=10,
    )
    assert argv == [
        "/usr/bin/wrk",
        "--threads=1",
        "--connections=32",
        "--duration=15s",
        "--timeout=10s",
        "--latency",
        "--script=/x/get_pet_json.lua",
        "http://127.0.0.1:8080",
    ]


@pytest.mark.parametrize(
    "scenario", [BASELINE, *(s for s in SCENARIOS if s.driver == "wrk")], ids=lambda s: s.key
)
def test_every_wrk_scenario_ships_its_script(scenario: Scenario) -> None:
    script = wrk.script_path(scenario.script)
    text = script.read_text()
    assert "report.lua" in text  # its done() prints the result line
    assert "done = report.done" in text


def test_the_report_script_prints_the_marker_we_parse() -> None:
    assert f'M.RESULT_MARKER = "{wrk.RESULT_MARKER}"' in (wrk.LUA_DIR / "report.lua").read_text()


def test_an_unknown_script_is_an_error() -> None:
    with pytest.raises(wrk.WrkError, match="no Lua script"):
        wrk.script_path("no_such_scenario")


@pytest.fixture(scope="module")
def baseline_url() -> Iterator[str]:
    """The baseline server: it answers 200 to every GET of pets 1..10, If-None-Match or not."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "petstore_bench.baseline", "--port", str(port), "--pets", "10"]
    )
    try:
        wait_for_port(port, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


ONE_SECOND = wrk.Load(seconds=1, connections=2, threads=1, timeout_s=2)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_a_200_where_a_304_is_due_counts_as_unexpected(baseline_url: str, tmp_path: Path) -> None:
    etags = tmp_path / "etags.txt"
    etags.write_text('1 "1-0123456789abcdef"\n2 "1-0123456789abcdef"\n')
    result = wrk.run(
        "wrk", baseline_url, wrk.script_path("get_pet_304"), ONE_SECOND, {"BENCH_PET_ETAGS_FILE": str(etags)}
    )
    assert result.requests > 0
    assert result.errors.unexpected == result.requests
    assert result.successes == 0


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_scripts_that_expect_nothing_count_no_unexpected(baseline_url: str) -> None:
    result = wrk.run(
        "wrk", baseline_url, wrk.script_path("get_pet_random"), ONE_SECOND, {"BENCH_PET_IDS": "1,2,3"}
    )
    assert result.requests > 0
    assert result.errors.total == 0


def _slice(requests: int, *, p50: float, p99: float, timeouts: int = 0) -> wrk.WrkResult:
    return wrk.WrkResult(
        requests=requests,
        duration_s=2.0,
        bytes=requests * 100,
        errors=wrk.Errors(timeout=timeouts),
        latency_us=wrk.Latency(100, p99 * 2, p50, 10, p50, p50, p99, p99, p99),
    )


def test_slices_add_up_and_keep_the_worst_percentiles() -> None:
    combined = wrk.combine([_slice(1000, p50=1000, p99=4000), _slice(3000, p50=800, p99=9000, timeouts=2)])
    assert (combined.requests, combined.duration_s, combined.bytes) == (4000, 4.0, 400_000)
    assert combined.requests_per_second == 1000
    assert combined.errors.timeout == 2
    assert (combined.latency_us.p50, combined.latency_us.p99, combined.latency_us.max) == (1000, 9000, 18000)
    assert combined.latency_us.mean == (1000 * 1000 + 800 * 3000) / 4000
    assert combined.stale_reads is None


def test_nothing_to_combine_is_an_error() -> None:
    with pytest.raises(ValueError, match="nothing"):
        wrk.combine([])
