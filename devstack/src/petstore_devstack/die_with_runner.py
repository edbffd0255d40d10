"""`python -m petstore_devstack.die_with_runner <runner pid> <module>`: become `python -m
<module>`, set to receive SIGTERM when the runner that started it dies, however it dies
(SIGKILL included), so a stack never outlives its runner holding its ports.

PR_SET_PDEATHSIG is set here, before exec, rather than in a preexec_fn: the runner has threads
(gRPC's), and code run between fork and exec in a threaded process may deadlock. It survives
the exec. It fires when the *thread* that forked the child ends, not the process: the stack
sets it only for children started from the runner's main thread (stack.py). SIGTERM, not
SIGKILL: each process stops as on an operator's stop, a gateway's workers with it."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    runner_pid, module = int(argv[0]), argv[1]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != runner_pid:  # the runner died before the death signal was set: no one to serve
        raise SystemExit(1)
    os.execv(sys.executable, [sys.executable, "-m", module])  # noqa: S606 - our interpreter, our module


if __name__ == "__main__":
    main(sys.argv[1:])
