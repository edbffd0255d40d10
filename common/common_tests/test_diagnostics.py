"""A hung process can be asked for its stacks, and a stop cannot outlast its bound: each in a
child process, as an operator would meet it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from petstore_common.diagnostics import EXIT_STOP_OVERRAN

PRELUDE = """
import asyncio, logging, sys, time
from petstore_common.diagnostics import dump_stacks_on_signal, exit_after
from petstore_common.logging import configure_logging
"""


def _child(body: str) -> subprocess.Popen[str]:
    code = PRELUDE + textwrap.dedent(body)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _ready(child: subprocess.Popen[str]) -> None:
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"


def test_a_blocked_loop_still_dumps_its_threads() -> None:
    child = _child(
        """
        def stuck_in_a_blocking_call():
            time.sleep(30)
        async def main():
            dump_stacks_on_signal(asyncio.get_running_loop())
            print("ready", flush=True)
            stuck_in_a_blocking_call()
        asyncio.run(main())
        """
    )
    try:
        _ready(child)
        time.sleep(0.2)
        child.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
    finally:
        child.kill()
    _, err = child.communicate(timeout=10)
    assert "stuck_in_a_blocking_call" in err
    assert "Current thread" in err or "Thread 0x" in err


def test_a_turning_loop_logs_every_task_stack() -> None:
    child = _child(
        """
        configure_logging("t")
        async def waiting_for_ever(event):
            await event.wait()
        async def main():
            dump_stacks_on_signal(asyncio.get_running_loop())
            task = asyncio.create_task(waiting_for_ever(asyncio.Event()))
            print("ready", flush=True)
            await asyncio.sleep(3)
            task.cancel()
        asyncio.run(main())
        """
    )
    _ready(child)
    time.sleep(0.2)
    child.send_signal(signal.SIGUSR1)
    _, err = child.communicate(timeout=10)
    assert child.returncode == 0, err  # the signal dumps; it does not end the process
    assert '"msg":"task stacks"' in err
    assert "waiting_for_ever" in err


def test_a_stop_that_hangs_ends_hard_at_its_bound() -> None:
    child = _child(
        """
        print("ready", flush=True)
        exit_after(0.5)
        time.sleep(30)  # a drain that never ends
        """
    )
    _ready(child)
    started = time.monotonic()
    _, err = child.communicate(timeout=10)
    assert child.returncode == EXIT_STOP_OVERRAN
    assert time.monotonic() - started < 2
    assert "stop overran 0.5 s" in err
    assert "time.sleep" in err or "<module>" in err  # the stacks at the moment of the exit


def test_a_stop_that_finishes_in_time_is_left_alone() -> None:
    child = _child(
        """
        print("ready", flush=True)
        exit_after(0.3).done()
        time.sleep(0.8)
        print("still here", flush=True)
        """
    )
    _ready(child)
    out, err = child.communicate(timeout=10)
    assert child.returncode == 0, err
    assert "still here" in out
