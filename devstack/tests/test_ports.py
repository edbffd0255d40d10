from __future__ import annotations

import socket

import pytest

from petstore_devstack.ports import free_port, wait_for_port


def test_wait_for_port_returns_once_something_listens() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        wait_for_port(server.getsockname()[1], timeout=1)


def test_wait_for_port_gives_up_after_its_timeout() -> None:
    with pytest.raises(TimeoutError, match="nothing listens"):
        wait_for_port(free_port(), timeout=0.2)
