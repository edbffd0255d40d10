"""Loopback ports for processes started by the tooling."""

from __future__ import annotations

import errno
import secrets
import socket
import time
from pathlib import Path

from petstore_devstack.port_owner import port_owner

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10_000
"""The ports handed out lie between this and the kernel's ephemeral range."""


class PortTaken(Exception):
    """Something already listens on the port a process was asked to serve on."""


def ensure_port_free(host: str, port: int, *, hint: str = "") -> None:
    """Raise PortTaken naming the port, the process listening on it when this user may see it,
    and `hint` (how to choose another) when something listens on host:port. SO_REUSEADDR as
    the gateway sets it, so a closed connection still in TIME_WAIT does not count, while any
    listener (SO_REUSEPORT ones included) does."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
            owner = port_owner(port)
            by = f" by {owner}" if owner is not None else ""
            raise PortTaken(
                f"port {port} is already in use on {where}{by}{'; ' + hint if hint else ''}"
            ) from None


def _ephemeral_low() -> int:
    """Where the kernel's ephemeral ports (the local ports of outgoing connections) start."""
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def bindable(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener could bind host:port now: nothing listens on it and no connection
    uses it as its local port (SO_REUSEADDR does not let a listener share a port with an
    outgoing connection, so a port the kernel hands to connections can be lost that way)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


_handed_out: set[int] = set()


def free_port_block(count: int) -> int:
    """The first of `count` consecutive TCP ports on 127.0.0.1 that nothing uses right now.

    Chosen at random below the kernel's ephemeral range, never twice by one process: a port
    from bind(0) lies inside it, and until its process binds it the kernel may give it to any
    outgoing connection (the test clients open hundreds), which then holds it. Free when
    chosen, not reserved: a caller that loses the port to another program tries again."""
    high = _ephemeral_low() - count
    if high <= LOWEST_PORT:  # an unusual ephemeral range: let the kernel choose
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    for _ in range(1000):
        base = LOWEST_PORT + secrets.randbelow(high - LOWEST_PORT)
        block = range(base, base + count)
        if _handed_out.isdisjoint(block) and all(bindable(port) for port in block):
            if len(_handed_out) > (high - LOWEST_PORT) // 2:
                _handed_out.clear()  # a long run: start again rather than run out
            _handed_out.update(block)
            return base
    raise OSError(errno.EADDRINUSE, f"no {count} free consecutive ports below {high + count}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now (see free_port_block)."""
    return free_port_block(1)


def wait_for_port(port: int, timeout: float, host: str = "127.0.0.1") -> None:
    """Block until something accepts connections on host:port, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s") from None
            time.sleep(0.05)
