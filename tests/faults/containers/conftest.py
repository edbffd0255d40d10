"""The compose stack of `make e2e-compose`, shared with tests/e2e (one stack per run), and
what the container fault tests add: containers by service, their rpc log lines, load."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest

from tests.e2e import conftest as e2e
from tests.e2e.control import ComposeControl

GRPC_TIMEOUT_SECONDS = 5.0
"""The gateway's deadline on every gRPC call in docker-compose.yml."""
SERVICES = ("pet-service", "order-service", "user-service")

# The compose-mode fixtures of tests/e2e. pytest-docker's docker_services (one stack per
# session) is shared, so with tests/e2e in the same run this starts no second stack.
compose_control = e2e.compose_control
docker_cleanup = e2e.docker_cleanup
docker_compose_command = e2e.docker_compose_command
docker_compose_file = e2e.docker_compose_file
docker_compose_project_name = e2e.docker_compose_project_name
docker_setup = e2e.docker_setup
unique = e2e.unique


@pytest.fixture
def compose(compose_control: ComposeControl) -> ComposeControl:
    return compose_control


@pytest.fixture
def base(compose_control: ComposeControl) -> str:
    return compose_control.base_url


@pytest.fixture
def static_key(compose_control: ComposeControl) -> str:
    """A static key the stack accepts (compose_control set PETSTORE_API_KEYS for it)."""
    return os.environ["PETSTORE_API_KEYS"].split(",")[0]


def rpc_calls(container: Any, since: float) -> Counter[str]:
    """The calls a service container logged since `since` (time.time()), by gRPC method:
    its own log (one JSON line per call), so nothing but the container says who served."""
    calls: Counter[str] = Counter()
    logs = container.logs(stdout=True, stderr=True, since=int(since)).decode(errors="replace")
    for line in logs.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == "rpc" and record.get("ts", "") >= _iso(since):
            calls[str(record.get("grpc_method"))] += 1
    return calls


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment))
