"""Results of one run: ratios to the baseline, the targets, the table, the JSON and the chart."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petstore_bench.procmem import ProcessMemory
from petstore_bench.scenarios import BASELINE, BY_KEY
from petstore_bench.wrk import WrkResult

SERVICE_PROCESSES = ("gateway", "pet", "order", "user")
"""The processes the memory target is about (not the database, not the baseline)."""

CPU_COLUMNS = ("baseline", "gateway", "pet", "order", "user", "ferretdb", "wrk", "client")
"""The order of the CPU table's columns (gateway.1, ... and the gateway's total follow gateway;
"client" is the bench's own process, which drives the mixed scenario)."""
PROCESS_ORDER = ("gateway", "pet", "order", "user", "ferretdb", "baseline")
"""The order of the memory table's rows."""
GATEWAY_TOTAL = "gateway total"
"""The CPU table's sum over every gateway process (with --gateway-workers above 1)."""

# The targets: embedded store, a 2-core host, one run.


@dataclass(frozen=True, slots=True)
class SpeedTarget:
    """What one scenario must reach against the bare aiohttp baseline of the same run."""

    min_ratio: float
    """Its requests/s over the baseline's: a ratio, so the baseline absorbs the machine's mood."""
    max_p99_ms: float | None = None
    why: str = ""


SPEED_TARGETS: dict[str, SpeedTarget] = {
    "get_pet_random": SpeedTarget(0.6, 10.0, "random reads over 1,000 and 10,000 ids (--pets)"),
    "get_pet_hot": SpeedTarget(0.7, None, "one hot id"),
    "post_order": SpeedTarget(
        0.14, 25.0, "twice the 0.069x measured with wrk against `make run` before the order work"
    ),
}
MAX_SERVICE_RSS_MB = 80.0

KIB_PER_MB = 1024  # the kernel's kB are KiB; "MB" here are MiB


@dataclass(frozen=True, slots=True)
class Check:
    """One target: what it asks, what was measured, and whether it held."""

    subject: str
    """A scenario key, or a process name for memory."""
    target: str
    measured: str
    passed: bool

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "MISS"

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "target": self.target,
            "measured": self.measured,
            "result": self.verdict,
        }


@dataclass
class RunResults:
    """Everything one run measured (what the JSON holds, minus the bookkeeping)."""

    baseline: WrkResult | None
    scenarios: dict[str, WrkResult]
    memory: dict[str, ProcessMemory]
    cpu_ms_per_request: dict[str, dict[str, float]] = field(default_factory=dict)
    """Scenario key (baseline included) -> process -> CPU milliseconds per request."""
    paired_baselines: dict[str, WrkResult] = field(default_factory=dict)
    """Scenario key -> the baseline measured taking turns with it: its ratio's denominator."""
    cache_lookups: dict[str, dict[str, int]] = field(default_factory=dict)
    """Scenario key -> the gateway's pet cache lookups while it was measured ("hit", "miss")."""
    info: dict[str, Any] = field(default_factory=dict)
    """Date, command, settings, machine: copied into the JSON as they are."""

    def baseline_for(self, key: str) -> WrkResult | None:
        """What `key` is compared with: the baseline paired with it, else the one measured first."""
        return self.baseline if key == BASELINE.key else self.paired_baselines.get(key, self.baseline)


def ratio(result: WrkResult, baseline: WrkResult | None) -> float | None:
    if baseline is None or baseline.requests_per_second <= 0:
        return None
    return result.requests_per_second / baseline.requests_per_second


def mb(kib: int) -> float:
    return kib / KIB_PER_MB


def is_service_process(name: str) -> bool:
    """The gateway (each of its workers: gateway.1, ...) and the three services."""
    return name in SERVICE_PROCESSES or name.startswith("gateway.")


def _zero_errors(key: str, result: WrkResult) -> Check:
    return Check(key, "zero errors", str(result.errors.total), result.errors.total == 0)


def _speed_checks(
    key: str, target: SpeedTarget, result: WrkResult, baseline: WrkResult | None
) -> list[Check]:
    checks: list[Check] = []
    found = ratio(result, baseline)
    if found is not None:
        checks.append(
            Check(
                key,
                f"throughput >= {target.min_ratio:g} x baseline",
                f"{found:.3f} x",
                found >= target.min_ratio,
            )
        )
    if target.max_p99_ms is not None:
        p99_ms = result.latency_us.p99 / 1000
        checks.append(
            Check(key, f"p99 <= {target.max_p99_ms:g} ms", f"{p99_ms:.1f} ms", p99_ms <= target.max_p99_ms)
        )
    checks.append(_zero_errors(key, result))
    return checks


def evaluate(
    scenarios: Mapping[str, WrkResult],
    baseline: WrkResult | None,
    memory: Mapping[str, ProcessMemory],
    paired: Mapping[str, WrkResult] | None = None,
) -> list[Check]:
    """The issue's targets, for whatever this run measured (a target whose input is missing is
    left out); a scenario's ratio is to its `paired` baseline when it has one."""
    checks: list[Check] = []
    for key, target in SPEED_TARGETS.items():
        result = scenarios.get(key)
        if result is not None:
            checks.extend(_speed_checks(key, target, result, (paired or {}).get(key, baseline)))
    mixed = scenarios.get("get_pet_mixed")
    if mixed is not None:
        stale = mixed.stale_reads or 0
        checks.append(Check("get_pet_mixed", "zero stale reads", str(stale), stale == 0))
        checks.append(_zero_errors("get_pet_mixed", mixed))
    revalidated = scenarios.get("get_pet_304")
    if revalidated is not None:
        checks.append(_zero_errors("get_pet_304", revalidated))  # a status other than 304 included
    for name in _in_order(memory):
        process = memory[name]
        if is_service_process(name) and process.last_rss_kb > 0:
            rss = mb(process.last_rss_kb)
            checks.append(
                Check(
                    name,
                    f"RSS after the run < {MAX_SERVICE_RSS_MB:g} MB",
                    f"{rss:.1f} MB",
                    rss < MAX_SERVICE_RSS_MB,
                )
            )
    return checks


def broken(scenarios: Mapping[str, WrkResult], baseline: WrkResult | None, *, strict: bool) -> list[str]:
    """Why the run itself failed: a scenario with no successful response, or whose pool of pets
    ran out (its threads stopped early: the figures are not of the load asked for), or (strict)
    any error, an unexpected status among them, or a stale read."""
    problems: list[str] = []
    measured = {**({BASELINE.key: baseline} if baseline is not None else {}), **scenarios}
    for key, result in measured.items():
        if result.errors.exhausted:
            problems.append(
                f"{key}: its pool of pets ran out ({result.errors.exhausted} requests could not be made"
                " and its wrk threads stopped early): raise the rate it is sized for"
                " (petstore_bench.orderpool)"
            )
        if result.successes == 0:
            problems.append(f"{key}: no successful response")
        elif strict and result.errors.total:
            problems.append(f"{key}: {result.errors.total} errors ({result.errors})")
        if strict and result.stale_reads:
            problems.append(f"{key}: {result.stale_reads} stale reads")
    return problems


# ---------------------------------------------------------------------------------------
# The table


def _title(key: str) -> str:
    return BASELINE.title if key == BASELINE.key else BY_KEY[key].title


def _verdicts(checks: Sequence[Check], subject: str) -> str:
    mine = [check for check in checks if check.subject == subject]
    if not mine:
        return ""
    return "PASS" if all(check.passed for check in mine) else "MISS"


def table(results: RunResults, checks: Sequence[Check]) -> str:
    rows: list[tuple[str, ...]] = [
        ("scenario", "req/s", "base req/s", "x base", "p50 ms", "p99 ms", "errors", "stale", "target")
    ]
    measured: list[tuple[str, WrkResult]] = []
    if results.baseline is not None:
        measured.append((BASELINE.key, results.baseline))
    measured.extend(results.scenarios.items())
    for key, result in measured:
        base = results.baseline_for(key)
        found = ratio(result, base)
        rows.append(
            (
                _title(key),
                f"{result.requests_per_second:.0f}",
                "-" if base is None else f"{base.requests_per_second:.0f}",
                "-" if found is None else f"{found:.3f}",
                f"{result.latency_us.p50 / 1000:.1f}",
                f"{result.latency_us.p99 / 1000:.1f}",
                str(result.errors.total),
                "-" if result.stale_reads is None else str(result.stale_reads),
                _verdicts(checks, key),
            )
        )
    lines = _columns(rows, right=(1, 2, 3, 4, 5, 6, 7))
    if results.memory:
        lines.append("")
        memory_rows: list[tuple[str, ...]] = [("process", "pid", "peak RSS MB", "RSS after MB", "target")]
        for name, process in _in_order(results.memory).items():
            memory_rows.append(
                (
                    name,
                    str(process.pid),
                    f"{mb(process.peak_rss_kb):.1f}",
                    f"{mb(process.last_rss_kb):.1f}",
                    _verdicts(checks, name),
                )
            )
        lines.extend(_columns(memory_rows, right=(1, 2, 3)))
    if results.cpu_ms_per_request:
        lines.append("")
        lines.extend(_cpu_table(results.cpu_ms_per_request))
    if results.cache_lookups:
        lines.append("")
        cache_rows: list[tuple[str, ...]] = [("pet cache (gateway)", "hits", "misses")]
        for key, counts in results.cache_lookups.items():
            cache_rows.append((_title(key), str(counts.get("hit", 0)), str(counts.get("miss", 0))))
        lines.extend(_columns(cache_rows, right=(1, 2)))
    if checks:
        lines.append("")
        lines.append("targets:")
        width = max(len(_subject_title(check.subject)) for check in checks)
        for check in checks:
            subject = _subject_title(check.subject).ljust(width)
            lines.append(f"  {check.verdict}  {subject}  {check.target}: {check.measured}")
    return "\n".join(lines)


def _cpu_table(cpu: Mapping[str, Mapping[str, float]]) -> list[str]:
    """CPU ms per request by process: where the machine's two cores go, scenario by scenario."""
    seen = {name for used in cpu.values() for name in used}
    workers = sorted((name for name in seen if name.startswith("gateway.")), key=_worker_index)
    columns: list[str] = []
    for name in CPU_COLUMNS:
        if name == "gateway" and workers:
            columns += ["gateway", *workers, GATEWAY_TOTAL]
        elif name in seen:
            columns.append(name)
    columns += sorted(seen - set(columns))
    rows: list[tuple[str, ...]] = [("CPU ms/request", *columns, "total")]
    for key, used in cpu.items():
        cells = []
        for name in columns:
            if name == GATEWAY_TOTAL:
                gateway = [ms for process, ms in used.items() if process == "gateway" or process in workers]
                cells.append(f"{sum(gateway):.2f}" if gateway else "-")
            else:
                cells.append(f"{used[name]:.2f}" if name in used else "-")
        # A scenario's "baseline" cell is its paired baseline's cost, beside it, not part of it.
        total = sum(ms for process, ms in used.items() if key == BASELINE.key or process != "baseline")
        rows.append((_title(key), *cells, f"{total:.2f}"))
    return _columns(rows, right=tuple(range(1, len(columns) + 2)))


def _worker_index(name: str) -> int:
    index = name.removeprefix("gateway.")
    return int(index) if index.isdigit() else 0


def _in_order(memory: Mapping[str, ProcessMemory]) -> dict[str, ProcessMemory]:
    order: list[str] = []
    for name in PROCESS_ORDER:
        order.append(name)
        if name == "gateway":
            order += sorted((found for found in memory if found.startswith("gateway.")), key=_worker_index)
    known = {name: memory[name] for name in order if name in memory}
    return {**known, **{name: found for name, found in memory.items() if name not in known}}


def _subject_title(subject: str) -> str:
    return BY_KEY[subject].title if subject in BY_KEY else f"{subject} process"


def _columns(rows: Sequence[tuple[str, ...]], right: tuple[int, ...]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(widths[column]) if column in right else cell.ljust(widths[column])
            for column, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


# ---------------------------------------------------------------------------------------
# JSON and chart


def to_json(results: RunResults, checks: Sequence[Check]) -> dict[str, Any]:
    def scenario_json(key: str, result: WrkResult) -> dict[str, Any]:
        base = results.baseline_for(key)
        found = ratio(result, base)
        return {
            "key": key,
            "title": _title(key),
            "baseline_requests_per_second": None if base is None else round(base.requests_per_second, 1),
            "throughput_ratio_to_baseline": None if found is None else round(found, 4),
            "target": _verdicts(checks, key) or None,
            **result.to_json(),
            **(
                {"gateway_pet_cache_lookups": results.cache_lookups[key]}
                if key in results.cache_lookups
                else {}
            ),
        }

    return {
        **results.info,
        "baseline": None if results.baseline is None else scenario_json(BASELINE.key, results.baseline),
        "scenarios": [scenario_json(key, result) for key, result in results.scenarios.items()],
        "processes": {
            name: {
                "pid": process.pid,
                "peak_rss_mb": round(mb(process.peak_rss_kb), 1),
                "rss_after_mb": round(mb(process.last_rss_kb), 1),
                "target": _verdicts(checks, name) or None,
            }
            for name, process in _in_order(results.memory).items()
        },
        "cpu_ms_per_request": {
            key: {name: round(ms, 3) for name, ms in used.items()}
            for key, used in results.cpu_ms_per_request.items()
        },
        "targets": [check.to_json() for check in checks],
        "all_targets_passed": all(check.passed for check in checks),
    }


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n")


def write_chart(path: Path, results: RunResults, title: str) -> None:
    """Throughput and p99 per scenario, the baseline first (matplotlib's Agg backend: no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured: list[tuple[str, WrkResult]] = []
    if results.baseline is not None:
        measured.append((BASELINE.key, results.baseline))
    measured.extend(results.scenarios.items())
    labels = [_title(key).replace(" /v2", "\n/v2") for key, _ in measured]
    colours = ["#9e9e9e" if key == BASELINE.key else "#1f77b4" for key, _ in measured]
    throughput = [result.requests_per_second for _, result in measured]
    p99 = [result.latency_us.p99 / 1000 for _, result in measured]

    figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), layout="constrained")
    bars = left.bar(labels, throughput, color=colours)
    left.set_yscale("log")  # the baseline's tens of thousands and login's tens on one chart
    left.set_ylabel("requests/s (log scale)")
    left.set_title("throughput (and its ratio to the baseline)")
    for bar, (key, result) in zip(bars, measured, strict=True):
        found = ratio(result, results.baseline_for(key))
        text = f"{result.requests_per_second:.0f}" + ("" if found is None else f"\n{found:.3g}x")
        left.annotate(
            text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8
        )
    bars = right.bar(labels, p99, color=colours)
    right.set_yscale("log")  # login's seconds and a GET's milliseconds on one chart
    right.set_ylabel("ms (log scale)")
    right.set_title("p99 latency")
    read_p99_ms = SPEED_TARGETS["get_pet_random"].max_p99_ms
    right.axhline(read_p99_ms, color="#d62728", linestyle="--", linewidth=1)
    right.annotate(
        f"{read_p99_ms:g} ms (GET pet random ids target)",
        (0, read_p99_ms),
        fontsize=8,
        color="#d62728",
    )
    for bar, value in zip(bars, p99, strict=True):
        right.annotate(
            f"{value:.1f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    for axes in (left, right):
        axes.margins(y=0.12)
        axes.tick_params(axis="x", labelsize=8, labelrotation=30)
        axes.grid(axis="y", alpha=0.3)
    figure.suptitle(title, fontsize=10)
    figure.savefig(path, dpi=110)
    plt.close(figure)
