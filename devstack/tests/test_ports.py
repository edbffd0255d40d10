from __future__ import annotations

import socket

import pytest

from petstore_devstack.ports import PortTaken, ensure_port_free, free_port, wait_for_port


def test_wait_for_port_returns_once_something_listens() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        wait_for_port(server.getsockname()[1], timeout=1)


def test_wait_for_port_gives_up_after_its_timeout() -> None:
    with pytest.raises(TimeoutError, match="nothing listens"):
        wait_for_port(free_port(), timeout=0.2)


def test_a_free_port_passes_the_check() -> None:
    ensure_port_free("127.0.0.1", free_port())


def test_a_port_something_listens_on_is_named_with_the_hint() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(PortTaken, match=rf"port {port} is already in use .*; choose another"):
            ensure_port_free("127.0.0.1", port, hint="choose another")


def test_a_listener_that_shares_its_port_still_counts() -> None:
    """Gateway workers listen with SO_REUSEPORT: another stack's must still be seen."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        with pytest.raises(PortTaken):
            ensure_port_free("127.0.0.1", server.getsockname()[1])
