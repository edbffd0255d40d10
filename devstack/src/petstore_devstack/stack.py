"""The whole stack (four services and the gateway) as local processes on loopback ports.

Used by `make run`, the end-to-end and fault tests, and the benchmark, so that all of them
start the product the same way.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from petstore_common.caller_keys import KeyPair
from petstore_devstack.ports import ensure_port_free, free_port, free_port_block
from petstore_devstack.signing import caller_env, new_keys

SERVICES = ("pet", "order", "user", "webhook")
"""Started in this order, stopped in the reverse one (the webhook service reads the pet and
order services' event outboxes; nothing calls it but the gateway, started last)."""
STARTUP_TIMEOUT_SECONDS = 30.0
GATEWAY_METRICS_PORTS = 8
"""Consecutive ports found free for the gateway's metrics when the stack chooses them (worker i
serves on the first + i): room for that many GATEWAY_WORKERS."""
DEFAULT_ENV = {"LOG_LEVEL": "INFO", "GRACE_SECONDS": "5"}
"""Set for every process unless the environment (or extra_env) says otherwise: a local stack
stops in 5 s rather than the 10 s a deployment gives in-flight requests."""
LOCAL_WEBHOOK_ENV = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}
"""The webhook service's defaults here unless the environment (or extra_env) says otherwise: a
local stack delivers to receivers on this host (a deployment refuses loopback targets). A test
trusting its receiver's self-signed certificate passes WEBHOOK_CA_FILE in extra_env."""
INSTANCE_ID_HEADER = "X-Instance-ID"
ANY_ADDRESS = ("0.0.0.0", "::", "")


def command(module: str) -> list[str]:
    """`python -m module`, through die_with_runner when started from the main thread: then the
    process gets SIGTERM when this one dies, however it dies. (PR_SET_PDEATHSIG fires when the
    thread that started the child ends: from another thread, a test's, the child could be
    stopped while still in use.)"""
    if threading.current_thread() is threading.main_thread():
        return [sys.executable, "-m", "petstore_devstack.die_with_runner", str(os.getpid()), module]
    return [sys.executable, "-m", module]


def how_it_ended(returncode: int) -> str:
    """How a process ended, in words: "exited with code 1", or "was killed by SIGKILL" (what
    Popen's negative return codes mean)."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class GatewayNotOurs(RuntimeError):
    """Another server answered on the gateway's port."""


@dataclass
class ProcessSpec:
    name: str
    module: str
    env: dict[str, str]
    port: int
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Stack:
    """Ports and environment of one stack; start() launches it, stop() ends it."""

    mongodb_uri: str = ""
    api_keys: str = ""
    session_secret: str = ""
    database_prefix: str = "petstore"
    gateway_port: int = 0
    gateway_host: str = "127.0.0.1"
    extra_env: Mapping[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    """Where each process's log goes (<name>.log); None lets them share this terminal."""
    processes: dict[str, ProcessSpec] = field(default_factory=dict)
    gateway_metrics_port: int = field(init=False, default=0)
    """Where the gateway serves /metrics (its first worker; worker i on this + i)."""
    instance_id: str = field(default_factory=lambda: secrets.token_hex(8))
    """Given to the gateway (GATEWAY_INSTANCE_ID), which echoes it on /livez: an answer
    without it comes from some other server on the port."""
    caller_keys: dict[str, KeyPair] = field(default_factory=new_keys)
    """Issuer (`gateway`, `order-service`) -> the key pair it signs its gRPC calls with, fresh
    for each stack unless given; the services trust the public keys (petstore_devstack.signing)."""

    def __post_init__(self) -> None:
        self.session_secret = self.session_secret or os.urandom(32).hex()
        ports = {name: free_port() for name in SERVICES}
        self._gateway_port_chosen = not self.gateway_port
        self.gateway_port = self.gateway_port or free_port()
        defaults = {name: value for name, value in DEFAULT_ENV.items() if name not in os.environ}
        common = {**defaults, "PYTHONUNBUFFERED": "1", **self.extra_env}
        metrics_ports = self._metrics_ports({**os.environ, **common})
        self.gateway_metrics_port = metrics_ports["gateway"]
        for name in SERVICES:
            env = {
                **common,
                "GRPC_LISTEN_ADDR": f"127.0.0.1:{ports[name]}",
                "MONGODB_URI": self.mongodb_uri,
                "MONGODB_DATABASE": self.database_name(name),
                "METRICS_PORT": str(metrics_ports[name]),
                **caller_env(name, self.caller_keys),
            }
            if name == "order":
                env["PET_SERVICE_ADDR"] = f"127.0.0.1:{ports['pet']}"
            if name == "user":
                env["PETSTORE_SESSION_SECRET"] = self.session_secret
            if name == "webhook":
                env["PET_SERVICE_ADDR"] = f"127.0.0.1:{ports['pet']}"
                env["ORDER_SERVICE_ADDR"] = f"127.0.0.1:{ports['order']}"
                local = {key: value for key, value in LOCAL_WEBHOOK_ENV.items() if key not in os.environ}
                env = {**local, **env}  # extra_env (in env) wins over the local defaults
            self.processes[name] = ProcessSpec(name, f"petstore_{name}", env, ports[name])
        self.processes["gateway"] = ProcessSpec(
            "gateway",
            "petstore_gateway",
            {
                **common,
                "GATEWAY_HOST": self.gateway_host,
                "GATEWAY_PORT": str(self.gateway_port),
                "GATEWAY_INSTANCE_ID": self.instance_id,
                "METRICS_PORT": str(metrics_ports["gateway"]),
                "PET_SERVICE_ADDR": f"127.0.0.1:{ports['pet']}",
                "ORDER_SERVICE_ADDR": f"127.0.0.1:{ports['order']}",
                "USER_SERVICE_ADDR": f"127.0.0.1:{ports['user']}",
                "WEBHOOK_SERVICE_ADDR": f"127.0.0.1:{ports['webhook']}",
                "PETSTORE_API_KEYS": self.api_keys,
                "PETSTORE_SESSION_SECRET": self.session_secret,
                **caller_env("gateway", self.caller_keys),
            },
            self.gateway_port,
        )

    def database_name(self, service: str) -> str:
        """The database `service` stores its data in (on a MongoDB at mongodb_uri)."""
        return f"{self.database_prefix}_{service}"

    def accept_unsigned_calls(self) -> None:
        """The services accept a call without a caller token (a token present must still be
        valid): for a caller one release behind, which signs none (CALLER_TOKENS=optional)."""
        for name in SERVICES:
            self.processes[name].env["CALLER_TOKENS"] = "optional"

    @staticmethod
    def _metrics_ports(env: Mapping[str, str]) -> dict[str, int]:
        """METRICS_PORT is one port per process: given one, the runner hands out it and the
        next four (pet, order, user, webhook, gateway; gateway worker i takes the gateway's + i), since
        processes cannot share one. Without it the services serve none, and the gateway gets a
        free block of ports all the same: the stack's users (fault tests) read its metrics."""
        base = int(env.get("METRICS_PORT", "0") or "0")
        ports = {name: base + offset if base else 0 for offset, name in enumerate(SERVICES)}
        return {**ports, "gateway": base + len(SERVICES) if base else free_port_block(GATEWAY_METRICS_PORTS)}

    def gateway_metrics_url(self, worker: int = 0) -> str:
        """The /metrics of gateway worker `worker` (0: the first), on its own port."""
        return f"http://{self._url_host}:{self.gateway_metrics_port + worker}/metrics"

    @property
    def gateway_workers(self) -> int:
        """GATEWAY_WORKERS as the gateway reads it (each worker serves its own /metrics)."""
        value = {**os.environ, **self.processes["gateway"].env}.get("GATEWAY_WORKERS", "1").strip()
        return max(int(value), 1) if value.isdigit() else 1

    def gateway_metrics_urls(self) -> list[str]:
        """Every gateway worker's /metrics: each counts its own requests (sum them)."""
        return [self.gateway_metrics_url(worker) for worker in range(self.gateway_workers)]

    @property
    def connect_host(self) -> str:
        """Where to reach the gateway: its listen address, or loopback when it listens on all."""
        return "127.0.0.1" if self.gateway_host in ANY_ADDRESS else self.gateway_host

    @property
    def _url_host(self) -> str:
        return f"[{self.connect_host}]" if ":" in self.connect_host else self.connect_host

    @property
    def base_url(self) -> str:
        return f"http://{self._url_host}:{self.gateway_port}/v2"

    def start(self) -> None:
        """Launch every process and wait until each one reports healthy. Nothing starts when
        the gateway's port is taken (PortTaken)."""
        if not self._gateway_port_chosen:  # a port chosen here gets another if it is taken
            ensure_port_free(self.gateway_host, self.gateway_port)
        try:
            for name in SERVICES:
                self.start_process(name)
            self._start_gateway()
        except BaseException:
            self.stop()
            raise

    def _start_gateway(self, attempts: int = 3) -> None:
        """A port this stack chose itself was free when chosen, not reserved: another program
        may bind it while the services start. Then the gateway starts again on a fresh one."""
        for attempt in range(1, attempts + 1):
            try:
                self.start_process("gateway")
                return
            except (GatewayNotOurs, RuntimeError):
                if not self._gateway_port_chosen or attempt == attempts:
                    raise
                self.stop_process("gateway")
                self.gateway_port = free_port()
                spec = self.processes["gateway"]
                spec.port = self.gateway_port
                spec.env["GATEWAY_PORT"] = str(self.gateway_port)

    def start_process(self, name: str) -> None:
        """(Re)start one process and wait until it is healthy."""
        spec = self.processes[name]
        output: IO[bytes] | None = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            output = (self.log_dir / f"{name}.log").open("ab")
        spec.process = subprocess.Popen(
            command(spec.module),
            env={**os.environ, **spec.env},
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
        )
        if output is not None:
            output.close()  # the child holds its own descriptor
        try:
            self._wait_healthy(spec)
        except BaseException:
            self.stop_process(name)  # never leave a process behind that nobody will stop
            raise

    def _wait_healthy(self, spec: ProcessSpec) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            assert spec.process is not None
            if spec.process.poll() is not None:
                raise RuntimeError(f"{spec.name} {how_it_ended(spec.process.returncode)} at start-up")
            if self._is_healthy(spec):
                return
            time.sleep(0.1)
        raise TimeoutError(f"{spec.name} not healthy after {STARTUP_TIMEOUT_SECONDS}s")

    def _is_healthy(self, spec: ProcessSpec) -> bool:
        if spec.name == "gateway":
            origin = self.base_url.removesuffix("/v2")
            try:
                with urllib.request.urlopen(f"{origin}/livez", timeout=1) as r:
                    answered_by = r.headers.get(INSTANCE_ID_HEADER)
                if answered_by != self.instance_id:
                    raise GatewayNotOurs(
                        f"another server answers on port {spec.port}, not the gateway this run started"
                    )
                with urllib.request.urlopen(f"{origin}/readyz", timeout=1) as r:
                    return bool(r.status == 200)
            except HTTPException:  # not even HTTP/1.1 (a gRPC server, say)
                raise GatewayNotOurs(
                    f"another server answers on port {spec.port}, not the gateway this run started"
                ) from None
            except OSError:
                return False
        with grpc.insecure_channel(f"127.0.0.1:{spec.port}") as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)  # the stubs' types omit Check
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
            except grpc.RpcError:
                return False
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def exited(self) -> list[tuple[str, int]]:
        """(name, exit code) of every started process that is no longer running."""
        return [
            (name, spec.process.returncode)
            for name, spec in self.processes.items()
            if spec.process is not None and spec.process.poll() is not None
        ]

    def pid(self, name: str) -> int | None:
        process = self.processes[name].process
        return None if process is None else process.pid

    def signal(self, name: str, signum: int) -> None:
        process = self.processes[name].process
        if process is not None and process.poll() is None:
            process.send_signal(signum)

    def stop_process(self, name: str, timeout: float = 15.0) -> int | None:
        """SIGTERM one process and wait for it (SIGKILL after `timeout`)."""
        process = self.processes[name].process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def stop(self) -> None:
        """Stop the gateway first, then the services, each gracefully."""
        for name in ("gateway", *reversed(SERVICES)):
            self.stop_process(name)
