"""Reading memory from /proc-style text, and finding a child by name."""

from __future__ import annotations

import os
from pathlib import Path

from petstore_bench import procmem

STATUS = """\
Name:\tpython
Umask:\t0022
State:\tS (sleeping)
Pid:\t22593
PPid:\t22500
VmPeak:\t  812344 kB
VmSize:\t  745112 kB
VmHWM:\t   55036 kB
VmRSS:\t   53760 kB
RssAnon:\t   30000 kB
Threads:\t7
"""

KERNEL_THREAD = """\
Name:\tkthreadd
State:\tS (sleeping)
Pid:\t2
PPid:\t0
Threads:\t1
"""


def test_parses_rss_and_high_water_mark() -> None:
    assert procmem.parse_status(STATUS) == procmem.MemoryReading(rss_kb=53760, hwm_kb=55036)


def test_without_a_high_water_mark_the_rss_stands_in() -> None:
    text = "\n".join(line for line in STATUS.splitlines() if not line.startswith("VmHWM"))
    assert procmem.parse_status(text) == procmem.MemoryReading(rss_kb=53760, hwm_kb=53760)


def test_a_process_without_memory_reads_as_none() -> None:
    assert procmem.parse_status(KERNEL_THREAD) is None


def test_an_unexpected_unit_reads_as_none() -> None:
    assert procmem.parse_status(STATUS.replace("53760 kB", "53760 MB")) is None


def test_parent_pid_survives_odd_command_names() -> None:
    stat = "4242 (a (weird) name) S 4200 4242 4200 0 -1 4194560 120 0 0 0"
    assert procmem.parent_pid(stat) == 4200


def test_process_memory_keeps_the_peak_and_the_last() -> None:
    memory = procmem.ProcessMemory(pid=1)
    memory.update(procmem.MemoryReading(rss_kb=100, hwm_kb=100))
    memory.update(procmem.MemoryReading(rss_kb=300, hwm_kb=300))
    memory.update(procmem.MemoryReading(rss_kb=200, hwm_kb=250))
    assert memory.peak_rss_kb == 300
    assert memory.last_rss_kb == 200
    memory.update(procmem.MemoryReading(rss_kb=150, hwm_kb=400))  # a peak between two samples
    assert memory.peak_rss_kb == 400


def _fake_process(proc: Path, pid: int, ppid: int, comm: str, status: str = STATUS) -> None:
    directory = proc / str(pid)
    directory.mkdir()
    (directory / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {ppid} 0 -1 0 0 0 0 0\n")
    (directory / "comm").write_text(comm + "\n")
    (directory / "status").write_text(status)


def test_reads_a_process_status_file(tmp_path: Path) -> None:
    _fake_process(tmp_path, 10, 1, "python")
    assert procmem.read(10, proc=tmp_path) == procmem.MemoryReading(rss_kb=53760, hwm_kb=55036)
    assert procmem.read(11, proc=tmp_path) is None  # gone


def test_finds_children_by_name(tmp_path: Path) -> None:
    _fake_process(tmp_path, 10, 1, "python")
    _fake_process(tmp_path, 20, 10, "ferretdb")
    _fake_process(tmp_path, 21, 10, "python")
    _fake_process(tmp_path, 30, 99, "ferretdb")  # someone else's
    (tmp_path / "self").mkdir()
    (tmp_path / "meminfo").write_text("")
    assert procmem.children_named("ferretdb", parent=10, proc=tmp_path) == [20]
    assert procmem.children_named("wrk", parent=10, proc=tmp_path) == []


def test_samples_a_live_process() -> None:
    with procmem.Sampler({"me": os.getpid()}, interval_s=0.01) as sampler:
        pass
    memory = sampler.processes["me"]
    assert memory.last_rss_kb > 0
    assert memory.peak_rss_kb >= memory.last_rss_kb


def test_cpu_ticks_add_user_and_system_time() -> None:
    # Fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime ...
    stat = "4242 (python) S 4200 4242 4200 0 -1 4194560 1200 0 3 0 731 95 0 0 20 0 7 0"
    assert procmem.cpu_ticks(stat) == 731 + 95


def test_cpu_seconds_of_fake_processes(tmp_path: Path) -> None:
    directory = tmp_path / "10"
    directory.mkdir()
    ticks = procmem.CLOCK_TICKS_PER_S
    (directory / "stat").write_text(f"10 (py thon) R 1 10 1 0 -1 0 0 0 0 0 {3 * ticks} {ticks} 0 0\n")
    assert procmem.cpu_seconds({"gateway": 10, "gone": 11}, proc=tmp_path) == {"gateway": 4.0}


def test_cpu_seconds_of_this_process_grow() -> None:
    before = procmem.cpu_seconds({"me": os.getpid()})["me"]
    sum(range(3_000_000))
    assert procmem.cpu_seconds({"me": os.getpid()})["me"] >= before
