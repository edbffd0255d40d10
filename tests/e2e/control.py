"""Stopping and starting one service of the stack under test, as local processes or as
compose containers, so fault scenarios run the same way in both modes."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from petstore_devstack.stack import Stack

SERVICES = ("pet", "order", "user")
HEALTHY_TIMEOUT_SECONDS = 60.0


class StackControl(Protocol):
    @property
    def base_url(self) -> str:
        """The API's base URL, ending in /v2."""

    def stop_service(self, name: str) -> None:
        """Stop the pet, order or user service gracefully."""

    def start_service(self, name: str) -> None:
        """Start it again; returns once it reports healthy."""


@dataclass
class ProcessControl:
    stack: Stack

    @property
    def base_url(self) -> str:
        return self.stack.base_url

    def stop_service(self, name: str) -> None:
        self.stack.stop_process(name)

    def start_service(self, name: str) -> None:
        self.stack.start_process(name)


@dataclass
class ComposeControl:
    """Containers of the compose project, through the Docker SDK. A service may run several
    replicas: stopping the service stops all of them."""

    base_url: str
    project: str

    def containers(self, service: str) -> list[Any]:  # the Docker SDK ships no type hints
        """Every container (running or not) of a compose service ("pet-service", "mongo"),
        in replica order."""
        import docker  # only compose mode needs an engine

        client = docker.from_env()
        found = client.containers.list(
            all=True,
            filters={
                "label": [
                    f"com.docker.compose.project={self.project}",
                    f"com.docker.compose.service={service}",
                ]
            },
        )
        assert found, f"no container for {service} in compose project {self.project}"
        return sorted(found, key=lambda c: int(c.labels.get("com.docker.compose.container-number", "0")))

    def stop_service(self, name: str) -> None:
        for container in self.containers(f"{name}-service"):
            container.stop(timeout=30)

    def start_service(self, name: str) -> None:
        for container in self.containers(f"{name}-service"):
            container.start()
            wait_until_serving(container)


def wait_until_serving(container: Any, timeout: float = HEALTHY_TIMEOUT_SECONDS) -> None:
    """Return once the container's own health check command passes, run now rather than at
    Docker's next interval (gRPC health SERVING for a service, /livez for the gateway)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        container.reload()
        if container.status == "running":
            command = container.attrs["Config"].get("Healthcheck", {}).get("Test", [])
            if command[:1] == ["CMD"] and container.exec_run(command[1:]).exit_code == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"{container.name} not serving after {timeout}s")


def compose_unavailable_reason(compose_command: str = "docker compose") -> str:
    """Why compose mode cannot run here, or "" when a Docker engine and compose answer."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    for argv, what in (
        ([*shlex.split(compose_command), "version"], f"`{compose_command}` does not work"),
        (["docker", "info"], "no Docker engine answers"),
    ):
        try:
            done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return what
        if done.returncode != 0:
            return what
    return ""


@dataclass
class KubernetesControl:
    """Deployments in a namespace of a running cluster, through kubectl (KUBECONFIG). Stopping
    a service scales its Deployment to zero (an HPA leaves a Deployment at zero alone)."""

    base_url: str
    namespace: str
    api_key: str

    def kubectl(self, *args: str, timeout: float = HEALTHY_TIMEOUT_SECONDS) -> str:
        argv = ["kubectl", "-n", self.namespace, *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr.strip()}"
        return done.stdout

    def stop_service(self, name: str) -> None:
        deployment = f"deployment/{name}-service"
        self.kubectl("scale", deployment, "--replicas=0")
        pods = f"app.kubernetes.io/name={name}-service"
        self.kubectl("wait", "--for=delete", "pod", "-l", pods, "--timeout=60s", timeout=90)

    def start_service(self, name: str) -> None:
        self.kubectl("scale", f"deployment/{name}-service", "--replicas=1")
        self.kubectl("rollout", "status", f"deployment/{name}-service", "--timeout=90s", timeout=120)
        # The new pod has a new address, which its callers find by resolving the headless name
        # again: healthy here means both reach it. The gateway's /readyz says it does (every
        # service SERVING through its own channels); for pet, an order for a pet that does not
        # exist says order-service does (404, not 503, and nothing stored).
        wait_until_ready(self.base_url.removesuffix("/v2") + "/readyz")
        if name == "pet":
            wait_until_ready(
                self.base_url + "/store/order",
                body=b'{"petId": 987654321987}',
                headers={"api_key": self.api_key, "Content-Type": "application/json"},
                ready=lambda status: status != 503,
            )


def wait_until_ready(
    url: str,
    timeout: float = HEALTHY_TIMEOUT_SECONDS,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    ready: Callable[[int], bool] = lambda status: status == 200,
) -> None:
    """Return once `url` (http or https, on 127.0.0.0/8) answers a status `ready` accepts (a GET, or a
    POST of `body`)."""
    assert url.startswith(("http://127.", "https://127.")), url
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        request = urllib.request.Request(url, data=body, headers=headers or {})  # noqa: S310 (http, checked above)
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310
                status = reply.status
        except urllib.error.HTTPError as error:
            status = error.code
        except (urllib.error.URLError, OSError):
            status = 0
        if ready(status):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready after {timeout}s")
