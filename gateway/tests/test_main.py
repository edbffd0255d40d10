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

from .fakes import SESSION_SECRET


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "petstore_gateway"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_refuses_to_start_without_a_session_secret() -> None:
    process = start({"PETSTORE_SESSION_SECRET": "too-short"})
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert b"PETSTORE_SESSION_SECRET" in stderr
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
