"""What an operator can ask of a process that seems hung, and the bound on how long a stop takes.

- `dump_stacks_on_signal(loop)`: SIGUSR1 (`kill -USR1 <pid>`) writes every thread's stack to
  stderr through faulthandler, which works even while the event loop is blocked, then, if the
  loop still turns, logs the stack of every asyncio task as one record (`task stacks`).
- `exit_after(seconds)`: once a stop has begun, a daemon thread ends the process with
  EXIT_STOP_OVERRAN if the stop has not finished (`done()`) `seconds` later, after dumping its
  threads' stacks: a drain that never ends, or a loop that no longer turns, cannot hold a stop
  past its bound.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import logging
import os
import signal
import sys
import threading
import time

DUMP_SIGNAL = signal.SIGUSR1
STOP_MARGIN_SECONDS = 1.0
"""A stop lasts at most the grace period and this: past it the process exits hard, its stacks
in the log, so a hung drain never outlasts the supervisor's patience."""
TASK_STACKS_WAIT_SECONDS = 0.3
"""How long a stop that overran waits for its loop to log the tasks' stacks before exiting."""
EXIT_STOP_OVERRAN = 70
"""The exit status of a process whose graceful stop overran its bound (EX_SOFTWARE)."""

log = logging.getLogger(__name__)


def task_stacks() -> tuple[int, str]:
    """(how many asyncio tasks the running loop has, their stacks as text)."""
    tasks = asyncio.all_tasks()
    text = io.StringIO()
    for task in tasks:
        task.print_stack(file=text)
    return len(tasks), text.getvalue()


def _log_task_stacks() -> None:
    count, stacks = task_stacks()
    log.warning("task stacks", extra={"tasks": count, "stacks": stacks})


def dump_stacks_on_signal(loop: asyncio.AbstractEventLoop) -> None:
    """On DUMP_SIGNAL: the threads' stacks to stderr at once, the tasks' when the loop turns.
    The loop's handler is installed first so that faulthandler chains to it."""
    loop.add_signal_handler(DUMP_SIGNAL, _log_task_stacks)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True, chain=True)


class StopDeadline:
    """The bound on a stop under way: `done()` once the stop finished by itself."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._done = threading.Event()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # called outside a loop: threads' stacks only
            self._loop = None
        threading.Thread(target=self._expire, name="stop-deadline", daemon=True).start()

    def done(self) -> None:
        self._done.set()

    def _expire(self) -> None:
        if self._done.wait(self.seconds):
            return
        line = f'{{"level":"ERROR","msg":"stop overran {self.seconds:g} s: exiting hard"}}\n'
        os.write(sys.stderr.fileno(), line.encode())  # not logging: its lock may be held
        if self._loop is not None and not self._loop.is_closed():
            # The tasks' stacks say what the stop waits for, if the loop still turns to log them.
            self._loop.call_soon_threadsafe(_log_task_stacks)
            time.sleep(TASK_STACKS_WAIT_SECONDS)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(EXIT_STOP_OVERRAN)


def exit_after(seconds: float) -> StopDeadline:
    """End the process `seconds` from now unless the deadline is `done()` by then."""
    return StopDeadline(seconds)
