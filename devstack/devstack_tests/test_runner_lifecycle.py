"""`python -m petstore_devstack` (make run) as a user meets it: killed however it is killed, it
leaves no process of its stack behind; a port held by another program is named with that
program's pid and command; its own lines never run into its processes' lines; with several
gateway workers the banner names every worker's metrics."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from petstore_devstack.__main__ import say
from petstore_devstack.ports import free_port, wait_for_port
from petstore_devstack.stack import how_it_ended

STARTUP_SECONDS = 60.0
GONE_WITHIN_SECONDS = 2.0


def children_of(pid: int) -> set[int]:
    """Every live descendant of `pid`, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z":
                parents[int(entry.name)] = int(stat[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Runner:
    """The runner as a process, its stderr collected line by line as it comes."""

    def __init__(self, port: int, **env: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "petstore_devstack", "--port", str(port)],
            env={**os.environ, "LOG_FORMAT": "text", "METRICS_PORT": "", **env},
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = STARTUP_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None, "the runner ended:\n" + "".join(self.lines)
            assert time.monotonic() < deadline, f"no {text!r} from the runner:\n" + "".join(self.lines)
            time.sleep(0.05)

    def output(self) -> str:
        """Everything it wrote, once it has ended."""
        self.close()
        return "".join(self.lines)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=20)  # until every process holding its stderr has ended
        assert self.process.stderr is not None
        if not self._reader.is_alive():
            self.process.stderr.close()


@pytest.fixture
def leftovers() -> Iterator[set[int]]:
    """PIDs a test learned; whatever of them still runs at its end is killed (by PID)."""
    pids: set[int] = set()
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_runner_killed_with_sigkill_leaves_no_process_of_its_stack(leftovers: set[int]) -> None:
    """Two gateway workers, so the gateway's own child is covered too."""
    port = free_port()
    runner = Runner(port, GATEWAY_WORKERS="2")
    try:
        runner.wait_for("Ctrl-C here")
        stack = children_of(runner.process.pid)
        leftovers.update(stack)
        assert len(stack) >= 6, stack  # four services, the gateway and its second worker
        # The banner names every worker's metrics, each on its own port.
        banner = "".join(runner.lines)
        assert "worker 0: http://127.0.0.1:" in banner
        assert "worker 1: http://127.0.0.1:" in banner
        runner.process.kill()
        runner.process.wait()
        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while {pid for pid in stack if alive(pid)} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert {pid for pid in stack if alive(pid)} == set(), "outlived the runner"
    finally:
        for pid in leftovers:  # a failure leaves none running either (they hold its stderr)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        runner.close()


def test_ready_is_a_line_of_its_own(leftovers: set[int]) -> None:
    runner = Runner(free_port())
    try:
        runner.wait_for("Ctrl-C here")
        leftovers.update(children_of(runner.process.pid))
        [ready] = [line for line in runner.lines if "ready in" in line]
        assert ready.startswith("petstore: ready in ")
        assert ready.rstrip("\n").endswith(" s")
        runner.process.send_signal(signal.SIGTERM)
        assert runner.process.wait(timeout=30) == 0
    finally:
        runner.close()
    assert "petstore: stopping..." in runner.output()


def test_a_port_held_by_another_program_is_named_with_its_pid_and_command(leftovers: set[int]) -> None:
    port = free_port()
    holder = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    leftovers.add(holder.pid)
    try:
        wait_for_port(port, timeout=20)
        result = subprocess.run(
            [sys.executable, "-m", "petstore_devstack", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        holder.terminate()
        holder.wait()
    assert result.returncode == 2
    assert (
        f"port {port} is already in use on 127.0.0.1:{port} by pid {holder.pid} "
        f"(python -m http.server --bind 127.0.0.1 {port})"
    ) in result.stderr


class _Writes(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def test_a_runner_line_is_one_write_so_no_process_line_lands_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stack's processes write to the same stderr: a line written in two parts (print's
    text, then its newline) let theirs run into it ("ready in 7.7 s18:00:01 INFO ...")."""
    stderr = _Writes()
    monkeypatch.setattr(sys, "stderr", stderr)
    say("ready in 7.7 s")
    assert stderr.writes == ["petstore: ready in 7.7 s\n"]


def test_a_signal_is_named_and_an_exit_code_given() -> None:
    assert how_it_ended(-signal.SIGKILL) == "was killed by SIGKILL"
    assert how_it_ended(-signal.SIGSEGV) == "was killed by SIGSEGV"
    assert how_it_ended(1) == "exited with code 1"
