"""Driving wrk: the command line, the Lua scripts shipped here, and parsing what they print."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LUA_DIR = Path(__file__).resolve().parent / "lua"
RESULT_MARKER = "PETSTORE_BENCH_RESULT "
"""What lua/report.lua's done() prints before its JSON line."""


class WrkError(RuntimeError):
    """wrk is missing, failed, or printed no result."""


@dataclass(frozen=True, slots=True)
class Errors:
    connect: int = 0
    read: int = 0
    write: int = 0
    status: int = 0
    """Responses with a status of 400 or more (wrk counts those itself)."""
    timeout: int = 0
    unexpected: int = 0
    """Responses below 400 other than the status a script expects (report.lua's opt-in
    expect_status, e.g. a 200 where a revalidation must answer 304); 0 when not asked."""
    exhausted: int = 0
    """Requests a script could not make because its pets ran out (post_order.lua orders each
    pet of its pool once): the thread sent a placeholder the gateway answers 404, itself counted
    under status when answered, and stopped. 0 for scripts that draw from no pool."""

    @property
    def socket(self) -> int:
        return self.connect + self.read + self.write + self.timeout

    @property
    def total(self) -> int:
        return self.socket + self.status + self.unexpected + self.exhausted


@dataclass(frozen=True, slots=True)
class Latency:
    """Microseconds."""

    min: float
    max: float
    mean: float
    stdev: float
    p50: float
    p75: float
    p90: float
    p99: float
    p999: float


@dataclass(frozen=True, slots=True)
class WrkResult:
    requests: int
    duration_s: float
    bytes: int
    errors: Errors
    latency_us: Latency
    stale_reads: int | None = None
    """Reads older than the client's own acknowledged write (the mixed scenario only; None
    where the scenario does not check)."""

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def successes(self) -> int:
        return max(self.requests - self.errors.status - self.errors.unexpected, 0)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "requests": self.requests,
            "duration_s": round(self.duration_s, 3),
            "requests_per_second": round(self.requests_per_second, 1),
            "bytes": self.bytes,
            "errors": {
                "connect": self.errors.connect,
                "read": self.errors.read,
                "write": self.errors.write,
                "status": self.errors.status,
                "timeout": self.errors.timeout,
                "unexpected": self.errors.unexpected,
                "exhausted": self.errors.exhausted,
                "total": self.errors.total,
            },
            "latency_ms": {
                name: round(getattr(self.latency_us, name) / 1000, 3)
                for name in ("min", "mean", "stdev", "p50", "p75", "p90", "p99", "p999", "max")
            },
        }
        if self.stale_reads is not None:
            document["stale_reads"] = self.stale_reads
        return document


OPTIONAL = ("unexpected", "exhausted")
"""The result line's error counts that report.lua adds to wrk's own."""


def parse_result(output: str) -> WrkResult:
    """The result line lua/report.lua printed into wrk's output; WrkError when there is none."""
    lines = [line for line in output.splitlines() if line.startswith(RESULT_MARKER)]
    if not lines:
        raise WrkError("wrk printed no result line (did the Lua script fail?):\n" + output[-2000:])
    try:
        data = json.loads(lines[-1].removeprefix(RESULT_MARKER))
        errors, latency = data["errors"], data["latency_us"]
        return WrkResult(
            requests=int(data["requests"]),
            duration_s=int(data["duration_us"]) / 1_000_000,
            bytes=int(data["bytes"]),
            errors=Errors(
                **{name: int(errors[name]) for name in Errors.__dataclass_fields__ if name not in OPTIONAL},
                # absent (a result line of an older report.lua): nothing expected, no pool
                **{name: int(errors.get(name, 0)) for name in OPTIONAL},
            ),
            latency_us=Latency(**{name: float(latency[name]) for name in Latency.__dataclass_fields__}),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise WrkError(f"unreadable result line {lines[-1]!r}: {exc}") from None


def combine(slices: Sequence[WrkResult]) -> WrkResult:
    """One result from runs of the same load (a scenario measured in slices): counts add up;
    each latency percentile, the minimum aside, is the worst slice's (wrk gives no histogram
    to merge, and the worst slice is the honest bound); the mean is weighted by requests."""
    if not slices:
        raise ValueError("nothing to combine")
    if len(slices) == 1:
        return slices[0]
    requests = sum(one.requests for one in slices)
    latencies = [one.latency_us for one in slices]
    mean = (
        sum(one.latency_us.mean * one.requests for one in slices) / requests
        if requests
        else max(latency.mean for latency in latencies)
    )
    stale = [one.stale_reads for one in slices if one.stale_reads is not None]
    return WrkResult(
        requests=requests,
        duration_s=sum(one.duration_s for one in slices),
        bytes=sum(one.bytes for one in slices),
        errors=Errors(
            **{name: sum(getattr(one.errors, name) for one in slices) for name in Errors.__dataclass_fields__}
        ),
        latency_us=Latency(
            min=min(latency.min for latency in latencies),
            mean=mean,
            **{
                name: max(getattr(latency, name) for latency in latencies)
                for name in Latency.__dataclass_fields__
                if name not in ("min", "mean")
            },
        ),
        stale_reads=sum(stale) if stale else None,
    )


def script_path(name: str) -> Path:
    path = LUA_DIR / f"{name}.lua"
    if not path.is_file():
        raise WrkError(f"no Lua script {path}")
    return path


def command(
    wrk: str | Path,
    url: str,
    script: Path,
    *,
    seconds: int,
    connections: int,
    threads: int,
    timeout_s: int,
) -> list[str]:
    return [
        str(wrk),
        f"--threads={threads}",
        f"--connections={connections}",
        f"--duration={seconds}s",
        f"--timeout={timeout_s}s",
        "--latency",
        f"--script={script}",
        url,
    ]


@dataclass(frozen=True, slots=True)
class Load:
    """How hard and how long wrk drives one scenario."""

    seconds: int
    connections: int
    threads: int
    timeout_s: int


def run(wrk: str | Path, url: str, script: Path, load: Load, env: Mapping[str, str]) -> WrkResult:
    """Run wrk once; `env` holds the BENCH_* variables the script reads."""
    argv = command(
        wrk,
        url,
        script,
        seconds=load.seconds,
        connections=load.connections,
        threads=load.threads,
        timeout_s=load.timeout_s,
    )
    completed = subprocess.run(  # noqa: S603 - our own argv, no shell
        argv,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=load.seconds + load.timeout_s + 30,
        check=False,
    )
    if completed.returncode != 0:
        raise WrkError(f"wrk exited with {completed.returncode}: {completed.stderr or completed.stdout}")
    return parse_result(completed.stdout + completed.stderr)


def ensure_wrk() -> str:
    """The wrk binary; installs Debian's package when it is missing and we may (root)."""
    found = shutil.which("wrk")
    if found:
        return found
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise WrkError("wrk is not installed: install it (Debian/Ubuntu: apt-get install -y wrk)")
    print("wrk is missing: apt-get install -y wrk", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "install", "-y", "wrk"]
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL, check=False).returncode != 0:  # noqa: S603
        # A fresh machine may not have the package lists yet.
        subprocess.run([apt, "update"], env=env, stdout=subprocess.DEVNULL, check=True)  # noqa: S603
        subprocess.run(install, env=env, stdout=subprocess.DEVNULL, check=True)  # noqa: S603
    found = shutil.which("wrk")
    if found is None:
        raise WrkError("apt-get installed wrk but it is not on PATH")
    return found
