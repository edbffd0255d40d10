"""`python -m petstore_bench.launcher`: one of the stack's processes, unchanged, with bench-only options.

- PETSTORE_BENCH_MODULE: the module it runs as `python -m` would (petstore_gateway, petstore_pet...).
- PETSTORE_BENCH_UVLOOP=1: on uvloop's event loop (to measure whether that helps).
- PETSTORE_BENCH_PROFILE=<path without suffix>: pyinstrument samples the main thread (wall clock,
  so the event loop's idle wait shows as such) from PROFILE_START to PROFILE_STOP, which the
  bench sends around one scenario's measured run, and writes <path>.html and <path>.txt (at
  exit if PROFILE_STOP never comes); the text holds the call tree, self time by function, and the call
  tree with library frames shown.
"""

from __future__ import annotations

import asyncio
import os
import runpy
import signal
from pathlib import Path
from types import FrameType

from pyinstrument import Profiler

PROFILE_INTERVAL_S = 0.001
# Real-time signals nobody else uses: SIGUSR1 is the processes' own stack dump
# (petstore_common.diagnostics), which would take it over when the process starts.
PROFILE_START = signal.SIGRTMIN + 1
PROFILE_STOP = signal.SIGRTMIN + 2


class SignalledProfiler:
    def __init__(self, output: Path) -> None:
        self._output = output
        self._profiler = Profiler(interval=PROFILE_INTERVAL_S, async_mode="disabled")
        self._written = False

    def start(self, _signum: int | None = None, _frame: FrameType | None = None) -> None:
        if not self._profiler.is_running and not self._written:
            self._profiler.start()

    def stop_and_write(self, _signum: int | None = None, _frame: FrameType | None = None) -> None:
        if self._written or not self._profiler.is_running:
            return
        self._profiler.stop()
        self._written = True
        self._output.parent.mkdir(parents=True, exist_ok=True)
        self._output.with_suffix(".html").write_text(self._profiler.output_html())
        tree = self._profiler.output_text(unicode=True)
        everything = self._profiler.output_text(unicode=True, show_all=True)
        flat = self._profiler.output_text(unicode=True, flat=True)
        sections = (tree, f"SELF TIME BY FUNCTION (flat)\n{flat}", f"THE WHOLE TREE\n{everything}")
        self._output.with_suffix(".txt").write_text("\n\n".join(sections))


def main() -> None:
    module = os.environ["PETSTORE_BENCH_MODULE"]
    if os.environ.get("PETSTORE_BENCH_UVLOOP") == "1":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    output = os.environ.get("PETSTORE_BENCH_PROFILE")
    profiler = SignalledProfiler(Path(output)) if output else None
    if profiler is not None:
        signal.signal(PROFILE_START, profiler.start)
        signal.signal(PROFILE_STOP, profiler.stop_and_write)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        if profiler is not None:
            profiler.stop_and_write()


if __name__ == "__main__":
    main()
