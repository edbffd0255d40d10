"""The stack under test: real processes talking real gRPC, driven over HTTP.

Three modes, chosen by PETSTORE_E2E_MODE:
- `process` (default, what `make test` runs): the stack as local processes, on MONGODB_URI
  when one is given (`make test` starts FerretDB), else on the embedded store;
- `compose` (`make e2e-compose`): docker-compose.yml built and started through pytest-docker,
  with MongoDB (or FerretDB where no MongoDB image exists), two replicas of each gRPC
  service; run by hand without a Docker engine and compose it is skipped with the reason,
  under CI it fails;
- `k8s` (`make e2e-k8s`): a gateway already running in a Kubernetes cluster, reached at
  PETSTORE_E2E_BASE_URL (a `kubectl port-forward` on 127.0.0.1), its static key the first of
  PETSTORE_API_KEYS; services stopped and started with kubectl in PETSTORE_K8S_NAMESPACE.
Both container modes may put the stack behind its TLS proxy: PETSTORE_E2E_BASE_URL is then
https and PETSTORE_E2E_CA the run's certificate (tests/e2e/tls.py); `make e2e-compose` and
`make e2e-k8s` do, and tests/e2e/test_behind_proxy.py runs only then.
The same tests run in all; `control` stops and starts one service in either. In process mode the
webhook tests' receivers (tests/e2e/webhooks.py) start on loopback before the stack, which trusts
their certificates. In the container modes they listen where the run's script placed them
(PETSTORE_E2E_WEBHOOK_HOST/_PORTS/_TLS_DIR: an address the containers reach, a certificate whose
CA the webhook service was given); run by hand without those, the delivery tests are skipped
saying so (under CI they fail).

Version skew (`make e2e-skew`): in process mode, PETSTORE_E2E_PREVIOUS names one deployable
(`pet-service`, `order-service`, `user-service`, `gateway`) that runs its previous release
(deploy/releases.toml) while the others run the working tree. A test of something newer than
that release says so with `@pytest.mark.since("pet-service", "1.1.0")`, and is skipped, with
that reason, in the runs where that deployable is older. When that deployable is a caller whose
release signs no caller tokens yet (the gateway, the order service before 1.1.0), the services
run with CALLER_TOKENS=optional, as they do during that upgrade (deploy/k8s/README.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import ClientSession, ClientTimeout
from packaging.version import Version

from petstore_common.caller_keys import generate
from petstore_devstack.releases import DEPLOYABLES, Deployable, export, previous_release
from petstore_devstack.signing import sends_unsigned_calls
from petstore_devstack.stack import Stack
from tests.e2e import tls
from tests.e2e.callers import Cast, make_cast
from tests.e2e.client import Api
from tests.e2e.control import (
    ComposeControl,
    KubernetesControl,
    ProcessControl,
    StackControl,
    compose_unavailable_reason,
)
from tests.e2e.webhooks import (
    RECEIVER_HOST_ENV,
    ReceiverPlacement,
    WebhookReceivers,
    threaded_receivers,
)

STATIC_KEY = "e2e-static-key-0123456789"
E2E_ENV = {
    "RATE_LIMIT_PER_SECOND": "1000",
    "RATE_LIMIT_BURST": "2000",
    "LOGIN_RATE_LIMIT_PER_MINUTE": "1000",
    "SIGNUP_RATE_LIMIT_PER_HOUR": "100000",
}
"""The suite comes from one address with one key: rate limits roomy enough not to get in its way."""
REPO_ROOT = Path(__file__).resolve().parents[2]
E2E_MODE = os.environ.get("PETSTORE_E2E_MODE", "process")
PREVIOUS = os.environ.get("PETSTORE_E2E_PREVIOUS", "")
WEBHOOK_PLACEMENT = None if E2E_MODE == "process" else ReceiverPlacement.from_env()
"""Where the container modes' receivers listen (None in process mode: loopback)."""
RECEIVERS_REACHABLE = E2E_MODE == "process" or WEBHOOK_PLACEMENT is not None
"""Whether the webhook service can deliver to the suite's receivers."""


def pytest_configure(config: pytest.Config) -> None:
    if PREVIOUS and (PREVIOUS not in DEPLOYABLES or E2E_MODE != "process"):
        raise pytest.UsageError(
            f"PETSTORE_E2E_PREVIOUS={PREVIOUS!r}: one of {', '.join(DEPLOYABLES)}, in process mode"
        )
    if tls.CA_FILE:
        # The clients the suite does not build itself (urllib in petstore_devstack.demo, requests
        # under schemathesis) trust the run's certificate too, and only it: they reach only the
        # stack on 127.0.0.0/8.
        os.environ["SSL_CERT_FILE"] = tls.CA_FILE
        os.environ["REQUESTS_CA_BUNDLE"] = tls.CA_FILE


def runs_before(name: str, version: str) -> bool:
    """Whether the deployable `name` runs a release older than `version` in this run: its
    previous release, in the version-skew run where it is the one behind."""
    return name == PREVIOUS and Version(previous_release(DEPLOYABLES[name]).version) < Version(version)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip, saying why, the tests of what the deployable running its previous release lacks."""
    if not PREVIOUS:
        return
    previous = previous_release(DEPLOYABLES[PREVIOUS])
    for item in items:
        for marker in item.iter_markers("since"):
            name, version = marker.args
            if runs_before(name, version):
                reason = f"{name} {previous.version} (its previous release) predates {version}"
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def control(request: pytest.FixtureRequest) -> StackControl:
    if E2E_MODE == "compose":
        fixture: StackControl = request.getfixturevalue("compose_control")
    elif E2E_MODE == "process":
        fixture = request.getfixturevalue("process_control")
    elif E2E_MODE == "k8s":
        fixture = request.getfixturevalue("k8s_control")
    else:
        pytest.fail(f"PETSTORE_E2E_MODE must be 'process', 'compose' or 'k8s', not {E2E_MODE!r}")
    return fixture


@pytest.fixture(scope="session")
def webhook_receivers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookReceivers]:
    """The receivers of the webhook tests, on this host. Process mode: on loopback, started
    before the stack, whose webhook service trusts their certificates (WEBHOOK_CA_FILE, read at
    start-up). Container modes: at the run's placement, whose CA the stack was given."""
    if not RECEIVERS_REACHABLE:
        reason = (
            f"{E2E_MODE} mode without {RECEIVER_HOST_ENV}: the webhook service in its container "
            "can reach no receiver here (make e2e-compose / make e2e-k8s place them)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"webhook deliveries cannot be tested under CI: {reason}")
        pytest.skip(reason)
    bundle = tmp_path_factory.mktemp("webhook-ca") / "receivers-ca.pem"
    with threaded_receivers(bundle, WEBHOOK_PLACEMENT) as receivers:
        yield receivers


@pytest.fixture(scope="session")
def process_control(
    tmp_path_factory: pytest.TempPathFactory, webhook_receivers: WebhookReceivers
) -> Iterator[ProcessControl]:
    stack = Stack(
        mongodb_uri=os.environ.get("MONGODB_URI", ""),
        api_keys=STATIC_KEY,
        database_prefix=f"e2e_{uuid.uuid4().hex[:8]}",
        log_dir=tmp_path_factory.mktemp("stack-logs"),
        extra_env={**E2E_ENV, "WEBHOOK_CA_FILE": webhook_receivers.ca_file},
    )
    if PREVIOUS:
        run_previous_release(stack, DEPLOYABLES[PREVIOUS], tmp_path_factory.mktemp("previous-release"))
    stack.start()
    try:
        yield ProcessControl(stack)
    finally:
        stack.stop()


def run_previous_release(stack: Stack, deployable: Deployable, where: Path) -> None:
    """That deployable's process runs its previous release's code (with this environment's
    packages); checked, since a path that did not take would test the working tree twice. A
    caller that signs no tokens yet gets services that accept calls without one."""
    release = previous_release(deployable)
    python_path = os.pathsep.join(str(path) for path in export(release, deployable, where))
    spec = stack.processes[deployable.process]
    spec.env["PYTHONPATH"] = python_path
    imported = subprocess.run(
        [sys.executable, "-c", f"import {spec.module}; print({spec.module}.__file__)"],
        env={**os.environ, "PYTHONPATH": python_path},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert imported.startswith(str(where)), f"{spec.module} came from {imported}, not the previous release"
    print(f"e2e: {deployable.name} runs its previous release {release.version} ({release.commit[:12]})")
    if sends_unsigned_calls(deployable.name, release.version):
        stack.accept_unsigned_calls()
        print(f"e2e: {deployable.name} {release.version} signs no caller tokens: CALLER_TOKENS=optional")


# --- compose mode: pytest-docker's fixtures, pointed at the repository's compose file ------
# `make e2e-compose` (deploy/compose/e2e.sh) sets PETSTORE_COMPOSE (the compose command),
# COMPOSE_FILE (docker-compose.yml, plus the FerretDB override where no MongoDB image exists)
# and PETSTORE_COMPOSE_PROJECT; run by hand, the defaults are `docker compose` and the file.


@pytest.fixture(scope="session")
def docker_compose_command() -> str:
    return os.environ.get("PETSTORE_COMPOSE", "") or "docker compose"


@pytest.fixture(scope="session")
def docker_compose_file() -> list[str]:
    files = [name for name in os.environ.get("COMPOSE_FILE", "").split(os.pathsep) if name]
    return files or [str(REPO_ROOT / "docker-compose.yml")]


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    return os.environ.get("PETSTORE_COMPOSE_PROJECT", "") or f"petstore-e2e-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def docker_setup() -> list[str]:
    # --wait: returns once every container's health check passes (depends_on chains them).
    return ["up --build --wait"]


@pytest.fixture(scope="session")
def docker_cleanup() -> list[str]:
    return ["down -v"]


@pytest.fixture(scope="session")
def compose_control(
    request: pytest.FixtureRequest, docker_compose_command: str, docker_compose_project_name: str
) -> ComposeControl:
    reason = compose_unavailable_reason(docker_compose_command)
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"compose mode cannot run under CI: {reason} (`make e2e-compose` provides both)")
        pytest.skip(f"compose mode skipped: {reason} (`make e2e-compose` provides an engine and compose)")
    # The compose file refuses to start without its secrets; these exist for this run only.
    os.environ.setdefault("PETSTORE_API_KEYS", STATIC_KEY)
    os.environ.setdefault("PETSTORE_SESSION_SECRET", uuid.uuid4().hex + uuid.uuid4().hex)
    for prefix in ("GATEWAY", "ORDER_SERVICE", "WEBHOOK_SERVICE"):  # each issuer's own pair
        pair = generate()
        if not os.environ.get(f"{prefix}_CALLER_SIGNING_KEY"):  # deploy/compose/e2e.sh sets them
            os.environ[f"{prefix}_CALLER_SIGNING_KEY"] = pair.seed
            os.environ[f"{prefix}_CALLER_PUBLIC_KEY"] = pair.public
    os.environ.setdefault("GATEWAY_PUBLISH", "127.0.0.1:18080")
    for name, value in E2E_ENV.items():
        os.environ.setdefault(name, value)
    request.getfixturevalue("docker_services")  # builds, starts and, at the end, removes the stack
    host, port = os.environ["GATEWAY_PUBLISH"].rsplit(":", 1)
    # Behind the TLS proxy (deploy/compose/tls.yml) the suite goes through it: the gateway's
    # own port is then published nowhere.
    base_url = os.environ.get("PETSTORE_E2E_BASE_URL", "") or f"http://{host}:{port}/v2"
    assert (urlsplit(base_url).hostname or "").startswith("127."), (
        "the tests send traffic only to 127.0.0.0/8"
    )
    return ComposeControl(base_url, docker_compose_project_name)


# --- k8s mode: a gateway already running in a cluster (deploy/k8s/e2e.sh starts it) ----------


@pytest.fixture(scope="session")
def k8s_control() -> KubernetesControl:
    base_url = os.environ.get("PETSTORE_E2E_BASE_URL", "")
    if not base_url:
        pytest.fail("k8s mode needs PETSTORE_E2E_BASE_URL (`make e2e-k8s` sets it)")
    host = base_url.split("//", 1)[-1].split(":", 1)[0]
    assert host.startswith("127."), "the tests send traffic only to 127.0.0.0/8"
    namespace = os.environ.get("PETSTORE_K8S_NAMESPACE", "petstore")
    return KubernetesControl(
        base_url, namespace, os.environ.get("PETSTORE_API_KEYS", STATIC_KEY).split(",")[0]
    )


# --- what the tests use ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def base_url(control: StackControl) -> str:
    return control.base_url


@pytest.fixture
async def api(base_url: str) -> AsyncIterator[Api]:
    in_containers = E2E_MODE in ("compose", "k8s")
    api_key = os.environ.get("PETSTORE_API_KEYS", STATIC_KEY).split(",")[0] if in_containers else STATIC_KEY
    connector = tls.connector()  # the run's certificate when behind the proxy
    async with ClientSession(timeout=ClientTimeout(total=15), connector=connector) as session:
        yield Api(session, base_url, api_key)


@pytest.fixture
def unique() -> str:
    """A suffix that keeps each test's data apart from every other test's."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
async def cast(api: Api, unique: str) -> Cast:
    """Two customers, logged in, and a pet in the catalogue; staff is the static key."""
    return await make_cast(api, unique)
