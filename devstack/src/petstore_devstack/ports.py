"""Loopback ports for processes started by the tooling."""

from __future__ import annotations

import errno
import socket
import time


class PortTaken(Exception):
    """Something already listens on the port a process was asked to serve on."""


def ensure_port_free(host: str, port: int, *, hint: str = "") -> None:
    """Raise PortTaken naming the port (and `hint`: how to choose another) when something
    listens on host:port. SO_REUSEADDR as the gateway sets it, so a closed connection still in
    TIME_WAIT does not count, while any listener (SO_REUSEPORT ones included) does."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
            raise PortTaken(f"port {port} is already in use ({where}){'; ' + hint if hint else ''}") from None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
