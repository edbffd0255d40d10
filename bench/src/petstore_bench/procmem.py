"""Memory of processes from /proc/<pid>/status (VmRSS now, VmHWM the peak), sampled in a thread,
and the CPU time they used from /proc/<pid>/stat."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
SAMPLE_INTERVAL_S = 0.25


@dataclass(frozen=True, slots=True)
class MemoryReading:
    """Kilobytes (the kernel's "kB", i.e. KiB)."""

    rss_kb: int
    hwm_kb: int


def parse_status(text: str) -> MemoryReading | None:
    """VmRSS and VmHWM of a /proc/<pid>/status text; None when absent (a zombie, a kernel thread)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            number, _, unit = rest.strip().partition(" ")
            if unit.strip() != "kB" or not number.isdigit():
                return None
            values[name] = int(number)
    if "VmRSS" not in values:
        return None
    return MemoryReading(rss_kb=values["VmRSS"], hwm_kb=values.get("VmHWM", values["VmRSS"]))


def read(pid: int, proc: Path = PROC) -> MemoryReading | None:
    try:
        return parse_status((proc / str(pid) / "status").read_text())
    except OSError:  # gone
        return None


def parent_pid(stat: str) -> int:
    """The ppid field of a /proc/<pid>/stat text (the command name may hold spaces and parens)."""
    return int(stat.rsplit(")", 1)[1].split()[1])


def cpu_ticks(stat: str) -> int:
    """utime + stime of a /proc/<pid>/stat text, in clock ticks (user and system CPU time)."""
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Mapping[str, int], proc: Path = PROC) -> dict[str, float]:
    """CPU seconds each process has used so far; processes that are gone are left out."""
    used: dict[str, float] = {}
    for name, pid in pids.items():
        try:
            used[name] = cpu_ticks((proc / str(pid) / "stat").read_text()) / CLOCK_TICKS_PER_S
        except (OSError, ValueError, IndexError):
            continue
    return used


def children_of(parent: int, proc: Path = PROC) -> list[int]:
    """Pids of every process whose parent is `parent`."""
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if parent_pid((entry / "stat").read_text()) == parent:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return sorted(found)


def children_named(name: str, parent: int | None = None, proc: Path = PROC) -> list[int]:
    """Pids of the processes whose parent is `parent` (default: us) and whose command is `name`."""
    parent = os.getpid() if parent is None else parent
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (
                parent_pid((entry / "stat").read_text()) == parent
                and (entry / "comm").read_text().strip() == name
            ):
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return sorted(found)


@dataclass
class ProcessMemory:
    """What we saw of one process: the highest RSS sampled, its VmHWM, its RSS at the end."""

    pid: int
    peak_rss_kb: int = 0
    last_rss_kb: int = 0

    def update(self, reading: MemoryReading) -> None:
        self.peak_rss_kb = max(self.peak_rss_kb, reading.rss_kb, reading.hwm_kb)
        self.last_rss_kb = reading.rss_kb


class Sampler:
    """Samples the given processes every SAMPLE_INTERVAL_S until stopped (a context manager)."""

    def __init__(self, pids: Mapping[str, int], interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.processes = {name: ProcessMemory(pid) for name, pid in pids.items()}
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._lock = threading.Lock()

    def sample(self, names: Iterable[str] | None = None) -> None:
        with self._lock:
            for name in self.processes if names is None else names:
                memory = self.processes[name]
                reading = read(memory.pid)
                if reading is not None:
                    memory.update(reading)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()

    def __enter__(self) -> Sampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # the readings "after the benchmark"
