"""Stopping and starting one service of the stack under test, as local processes or as
compose containers, so fault scenarios run the same way in both modes."""

from __future__ import annotations

import shutil
import subprocess
import time
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
    """Containers of the compose project, through the Docker SDK."""

    base_url: str
    project: str

    def _container(self, name: str) -> Any:  # the Docker SDK ships no type hints
        import docker  # only compose mode needs an engine

        client = docker.from_env()
        found = client.containers.list(
            all=True,
            filters={
                "label": [
                    f"com.docker.compose.project={self.project}",
                    f"com.docker.compose.service={name}-service",
                ]
            },
        )
        assert found, f"no container for {name}-service in compose project {self.project}"
        return found[0]

    def stop_service(self, name: str) -> None:
        self._container(name).stop(timeout=30)

    def start_service(self, name: str) -> None:
        container = self._container(name)
        container.start()
        deadline = time.monotonic() + HEALTHY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            container.reload()
            if container.attrs["State"].get("Health", {}).get("Status") == "healthy":
                return
            time.sleep(0.5)
        raise TimeoutError(f"{name}-service not healthy after {HEALTHY_TIMEOUT_SECONDS}s")


def compose_unavailable_reason() -> str:
    """Why compose mode cannot run here, or "" when a Docker engine with compose answers."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    for argv, what in (
        (["docker", "compose", "version"], "the docker CLI has no compose plugin"),
        (["docker", "info"], "no Docker engine answers"),
    ):
        try:
            done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return what
        if done.returncode != 0:
            return what
    return ""
