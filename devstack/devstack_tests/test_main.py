"""The runner behind `make run`: it refuses a taken port before starting anything, knows its
own gateway from another server on the port, and stops the stack naming a process that died."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from petstore_devstack.__main__ import banner, watch
from petstore_devstack.demo import DEMO_PASSWORD, USERS, DemoData
from petstore_devstack.ports import free_port
from petstore_devstack.stack import SERVICES, GatewayNotOurs, Stack


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_a_taken_port_stops_the_runner_before_anything_starts(taken_port: int) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "petstore_devstack", "--port", str(taken_port)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "LOG_FORMAT": "json"},
    )
    assert result.returncode == 2
    assert f"port {taken_port} is already in use" in result.stderr
    assert f"GATEWAY_PORT={taken_port + 1} make run" in result.stderr
    assert "starting" not in result.stderr  # no process was launched


def test_stack_start_refuses_a_taken_port_too(taken_port: int, tmp_path: Path) -> None:
    stack = Stack(gateway_port=taken_port, log_dir=tmp_path)
    with pytest.raises(Exception, match=f"port {taken_port} is already in use"):
        stack.start()
    assert stack.exited() == []  # nothing was started


class _OtherServer(http.server.BaseHTTPRequestHandler):
    """Answers /livez and /readyz 200 as any gateway would, without this run's instance id."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_gateway_that_is_not_this_runs_own_is_never_taken_for_healthy(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OtherServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stack = Stack(gateway_port=server.server_address[1], log_dir=tmp_path)
        with pytest.raises(GatewayNotOurs, match="another server answers"):
            stack._is_healthy(stack.processes["gateway"])
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_the_stack_chose_and_another_server_took_meanwhile_is_left_for_a_fresh_one(
    tmp_path: Path,
) -> None:
    stack = Stack(log_dir=tmp_path)
    chosen = stack.gateway_port
    server = http.server.ThreadingHTTPServer(("127.0.0.1", chosen), _OtherServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stack.start()
        try:
            assert stack.gateway_port != chosen
            assert stack._is_healthy(stack.processes["gateway"])
        finally:
            stack.stop()
    finally:
        server.shutdown()
        server.server_close()


def test_a_process_that_dies_is_named_and_the_watch_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = Stack(gateway_port=free_port(), log_dir=tmp_path)
    stack.start()
    try:
        assert stack._is_healthy(stack.processes["gateway"])  # its own instance id: accepted
        stopped = threading.Event()
        stack.signal("order", signal.SIGKILL)
        assert watch(stack, stopped) == 1
        assert "the order service was killed by SIGKILL; stopping the others" in capsys.readouterr().err
    finally:
        stack.stop()
    assert {name for name, _ in stack.exited()} == {"pet", "order", "user", "webhook", "gateway"}


def test_the_watch_ends_quietly_when_asked_to_stop(tmp_path: Path) -> None:
    stack = Stack(gateway_port=free_port(), log_dir=tmp_path)  # nothing started: nothing dies
    stopped = threading.Event()
    stopped.set()
    assert watch(stack, stopped) == 0


def test_the_banner_says_where_the_docs_are_how_to_get_a_key_and_how_to_stop(tmp_path: Path) -> None:
    stack = Stack(gateway_port=free_port(), log_dir=tmp_path)  # nothing started
    text = banner(stack, store="embedded store", key_hint="the first of PETSTORE_API_KEYS", demo=None)
    assert f"{stack.base_url}/docs" in text
    assert "staff key:  the first of PETSTORE_API_KEYS" in text
    assert f"GET {stack.base_url}/user/login?username=" in text
    assert f"Ctrl-C here (or kill -TERM {os.getpid()})" in text
    assert "demo:" not in text

    demo = banner(stack, store="embedded store", key_hint="", demo=DemoData(pet_ids=[1], order_ids=[2]))
    assert f"curl '{stack.base_url}/user/login?username={USERS[0]}&password={DEMO_PASSWORD}'" in demo


def test_settings_from_the_environment_reach_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the runner sets by default (LOG_LEVEL, GRACE_SECONDS) yields to the environment."""
    monkeypatch.setenv("LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("GRACE_SECONDS", "7")
    stack = Stack(gateway_port=free_port(), log_dir=tmp_path)
    for spec in stack.processes.values():
        effective = {**os.environ, **spec.env}  # as start_process hands it over
        assert (spec.name, effective["LOG_LEVEL"], effective["GRACE_SECONDS"]) == (spec.name, "DEBUG", "7")


def test_the_webhook_service_reads_both_outboxes_is_called_by_the_gateway_and_delivers_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own database, the pet and order services' addresses, loopback receivers allowed
    unless the run says otherwise, a test's CA file passed through."""
    monkeypatch.delenv("WEBHOOK_ALLOWED_NETWORKS", raising=False)
    stack = Stack(log_dir=tmp_path, extra_env={"WEBHOOK_CA_FILE": "/tmp/receiver-ca.pem"})
    webhook = stack.processes["webhook"]
    assert webhook.module == "petstore_webhook"
    assert webhook.env["MONGODB_DATABASE"] == "petstore_webhook"
    assert webhook.env["PET_SERVICE_ADDR"] == f"127.0.0.1:{stack.processes['pet'].port}"
    assert webhook.env["ORDER_SERVICE_ADDR"] == f"127.0.0.1:{stack.processes['order'].port}"
    assert webhook.env["WEBHOOK_ALLOWED_NETWORKS"] == "127.0.0.0/8"
    assert webhook.env["WEBHOOK_CA_FILE"] == "/tmp/receiver-ca.pem"
    assert "WEBHOOK_ALLOWED_NETWORKS" not in stack.processes["order"].env
    assert stack.processes["gateway"].env["WEBHOOK_SERVICE_ADDR"] == f"127.0.0.1:{webhook.port}"
    assert len({spec.port for spec in stack.processes.values()}) == len(stack.processes)

    narrowed = Stack(log_dir=tmp_path, extra_env={"WEBHOOK_ALLOWED_NETWORKS": ""})
    assert narrowed.processes["webhook"].env["WEBHOOK_ALLOWED_NETWORKS"] == ""
    monkeypatch.setenv("WEBHOOK_ALLOWED_NETWORKS", "10.0.0.0/8")
    from_environment = Stack(log_dir=tmp_path)
    assert "WEBHOOK_ALLOWED_NETWORKS" not in from_environment.processes["webhook"].env  # os.environ's


def test_the_gateway_gets_a_metrics_port_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METRICS_PORT", raising=False)
    given = Stack(log_dir=tmp_path, extra_env={"METRICS_PORT": "20000"})
    ports = {name: spec.env["METRICS_PORT"] for name, spec in given.processes.items()}
    assert ports == {
        "pet": "20000",
        "order": "20001",
        "user": "20002",
        "webhook": "20003",
        "gateway": "20004",
    }
    assert given.gateway_metrics_url(1) == "http://127.0.0.1:20005/metrics"
    unset = Stack(log_dir=tmp_path)  # the services serve none; the gateway's are still read
    gateway_port = int(unset.processes["gateway"].env["METRICS_PORT"])
    assert gateway_port not in (0, unset.gateway_port)
    assert {unset.processes[name].env["METRICS_PORT"] for name in SERVICES} == {"0"}
    assert unset.gateway_metrics_url() == f"http://127.0.0.1:{gateway_port}/metrics"
