from __future__ import annotations

import socket
from pathlib import Path

import pytest

from petstore_devstack import ports
from petstore_devstack.ports import (
    EPHEMERAL_RANGE_FILE,
    LOWEST_PORT,
    PortTaken,
    bindable,
    ensure_port_free,
    free_port,
    free_port_block,
    wait_for_port,
)


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


def test_a_port_an_outgoing_connection_holds_is_not_bindable() -> None:
    """The failure free_port avoids: a listener cannot take a connection's local port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname()) as client:
            assert not bindable(client.getsockname()[1])
    assert bindable(free_port())


def test_free_ports_lie_below_the_ephemeral_range_and_are_never_handed_out_twice() -> None:
    ephemeral_low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(LOWEST_PORT <= port < ephemeral_low for port in ports)


def test_a_block_is_consecutive_free_ports_none_handed_out_before() -> None:
    single = free_port()
    base = free_port_block(8)
    block = range(base, base + 8)
    assert single not in block
    assert all(bindable(port) for port in block)
    assert free_port() not in block


def test_an_ephemeral_range_too_low_to_leave_room_falls_back_to_the_kernels_choice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kernels_low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text(f"{LOWEST_PORT}\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", range_file)
    port = free_port()
    assert port >= kernels_low  # the kernel's, from its real range
    assert bindable(port)
