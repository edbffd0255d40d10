"""`python -m petstore_gateway` as a process: refuses a bad secret, serves, stops on a signal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from petstore_common.caller_keys import generate
from petstore_devstack.ports import free_port, free_port_block

from .backend import SESSION_SECRET

SIGNING_KEY = generate().seed
"""The gateway's caller-token key: it does not start without one."""


def start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "petstore_gateway"],
        env={**os.environ, "CALLER_SIGNING_KEY": SIGNING_KEY, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_refuses_to_start_without_a_session_secret() -> None:
    process = start({"PETSTORE_SESSION_SECRET": "too-short"})
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert b"PETSTORE_SESSION_SECRET" in stderr
    assert b"Traceback" not in stderr


def test_refuses_to_start_without_a_caller_signing_key() -> None:
    # The services refuse every unsigned call: a gateway without a key would answer only errors.
    process = start({"PETSTORE_SESSION_SECRET": SESSION_SECRET, "CALLER_SIGNING_KEY": ""})
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert b"CALLER_SIGNING_KEY must be set" in stderr
    assert b"Traceback" not in stderr


def get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - a local test URL
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serves_and_stops_gracefully_on_a_signal(signum: signal.Signals) -> None:
    port = free_port()
    dead = f"127.0.0.1:{free_port()}"
    process = start(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "PETSTORE_API_KEYS": "very-secret-static-key",
            "GATEWAY_PORT": str(port),
            "PET_SERVICE_ADDR": dead,
            "ORDER_SERVICE_ADDR": dead,
            "USER_SERVICE_ADDR": dead,
            "WEBHOOK_SERVICE_ADDR": dead,
        }
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _ = get(f"http://127.0.0.1:{port}/livez")
                break
            except OSError:
                assert time.monotonic() < deadline, "the gateway did not start"
                time.sleep(0.1)
        assert status == 200
        ready_status, ready = get(f"http://127.0.0.1:{port}/readyz")
        assert (ready_status, ready["code"]) == (503, 503)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert b"very-secret-static-key" not in stderr
    assert b'"msg":"stopped"' in stderr
    assert b"metrics served" not in stderr  # METRICS_PORT unset: no metrics listener


def children_of(pid: int) -> list[int]:
    """The pids whose parent is `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def test_workers_share_the_port_and_stop_with_the_first() -> None:
    """...and each serves its own metrics on METRICS_PORT + its index, none on the API port."""
    port = free_port()
    metrics_port = free_port_block(3)
    dead = f"127.0.0.1:{free_port()}"
    process = start(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "GATEWAY_PORT": str(port),
            "GATEWAY_WORKERS": "3",
            "METRICS_PORT": str(metrics_port),
            "PET_SERVICE_ADDR": dead,
            "ORDER_SERVICE_ADDR": dead,
            "USER_SERVICE_ADDR": dead,
            "WEBHOOK_SERVICE_ADDR": dead,
        }
    )
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while len(workers) < 2 or not all(listening(pid, port) for pid in [process.pid, *workers]):
            assert time.monotonic() < deadline, "the workers did not all listen"
            time.sleep(0.1)
            workers = children_of(process.pid)
        assert len(workers) == 2
        assert get(f"http://127.0.0.1:{port}/livez")[0] == 200
        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 404
        pids = [process.pid, *workers]
        for offset in range(3):
            assert any(listening(pid, metrics_port + offset) for pid in pids), offset
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port + offset}/metrics", timeout=2) as r:
                assert b"gateway_http_requests_total" in r.read()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert stderr.count(b'"msg":"stopped"') == 3
    assert all(not os.path.exists(f"/proc/{pid}/stat") or is_zombie(pid) for pid in workers)


def listening(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on `port` (by its inode in /proc/net/tcp)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return False
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].split(":")[1], 16)
            if local_port == port and fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                return True
    return False


def is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_worker_that_cannot_start_stops_the_gateway_with_an_error() -> None:
    """Worker 1's metrics port is taken: the gateway must not go on serving with one worker
    fewer, unnoticed."""
    metrics_port = free_port_block(2)
    dead = f"127.0.0.1:{free_port()}"
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", metrics_port + 1))
        squatter.listen()
        process = start(
            {
                "PETSTORE_SESSION_SECRET": SESSION_SECRET,
                "GATEWAY_PORT": str(free_port()),
                "GATEWAY_WORKERS": "2",
                "METRICS_PORT": str(metrics_port),
                "PET_SERVICE_ADDR": dead,
                "ORDER_SERVICE_ADDR": dead,
                "USER_SERVICE_ADDR": dead,
                "WEBHOOK_SERVICE_ADDR": dead,
            }
        )
        try:
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 1
    assert b'"msg":"a gateway worker ended: stopping the gateway"' in stderr
    assert b'"msg":"stopped","worker":0' in stderr  # drained, not killed
