"""GATEWAY_WORKERS: several gateway processes on one port (SO_REUSEPORT), so a machine's cores
all serve HTTP. The first process serves too and starts the others as `python -m
petstore_gateway` children: each has its own channels, cache and WatchPets stream. SIGTERM or
SIGINT to the first is passed on to every other, and each drains on its own. A child dies with
the first (PR_SET_PDEATHSIG), so none is left holding the port; a child that ends while nobody
asked it to (it could not bind its metrics port, it crashed) stops the first, which then exits
with 1: the supervisor restarts the gateway instead of it serving on fewer cores unnoticed."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

log = logging.getLogger(__name__)

WORKER_ENV = "PETSTORE_GATEWAY_WORKER"
"""Set in the environment of the processes the first one starts: their index (1, 2, ...)."""
_PR_SET_PDEATHSIG = 1


def worker_index() -> int:
    """0 for the process started by the operator, else the index its parent gave it."""
    return int(os.environ.get(WORKER_ENV, "0"))


def metrics_port(base: int, index: int) -> int:
    """Where worker `index` serves its /metrics: METRICS_PORT + index. Each process counts in
    its own registry, so each has its own port to be scraped on (sum over them); one port
    shared by SO_REUSEPORT would answer for a random worker. 0 (no listener) stays 0."""
    return base + index if base else 0


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Workers:
    """The other workers of a gateway, started and stopped by the first."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._stopping = False
        self.processes: list[subprocess.Popen[bytes]] = []
        self.lost = False
        """A worker ended before it was asked to stop (and the first was told to stop)."""

    def start(self) -> None:
        for index in range(1, self._count):
            env = {**os.environ, WORKER_ENV: str(index)}
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "petstore_gateway"], env=env, preexec_fn=_die_with_parent
                )
            )
        if self.processes:
            log.info("workers started", extra={"pids": [p.pid for p in self.processes]})
        for process in self.processes:
            threading.Thread(
                target=self._watch, args=(process,), name=f"watch-{process.pid}", daemon=True
            ).start()

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        if self._stopping:
            return
        self.lost = True
        log.error(
            "a gateway worker ended: stopping the gateway", extra={"pid": process.pid, "exit_code": code}
        )
        os.kill(os.getpid(), signal.SIGTERM)  # the first drains as on the operator's SIGTERM

    def signal_stop(self) -> None:
        """SIGTERM each worker once: a second one could reach a worker after its event loop has
        closed and given SIGTERM back its default action, killing it before it logs its stop."""
        if self._stopping:
            return
        self._stopping = True
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> Sequence[int | None]:
        """Wait for every worker to end (SIGKILL after `timeout`); their exit codes."""
        codes: list[int | None] = []
        for process in self.processes:
            try:
                codes.append(process.wait(timeout=timeout))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        return codes
