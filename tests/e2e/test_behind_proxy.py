"""The stack behind its TLS proxy (deploy/compose/tls.yml, `make e2e-compose`), as its clients
and an attacker see it: public URLs are https on the public host with no port, every client
address has its own rate-limit budget and no client picks its budget with X-Forwarded-For, and
the gateway itself cannot be reached but through the proxy.

Which source address the proxy sees: a host client reaches the proxy through Docker's published
port, so the proxy sees the edge network's bridge address for every host client alike (binding
127.0.0.2 and 127.0.0.3 changes nothing). Two clients with addresses of their own are
therefore two containers on the proxy's network, each with a fixed address; their budgets are
made small by recreating the gateway with SIGNUP_RATE_LIMIT_PER_HOUR=3 for these tests (sign-
ups are counted per address before the body is read, so a refused `{}` spends one), and the
gateway is recreated with the suite's settings afterwards.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import socket
import subprocess
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import yaml
from aiohttp import ClientSession, ClientTimeout

from tests.e2e import tls
from tests.e2e.client import JSON, Api, parse
from tests.e2e.conftest import E2E_MODE, REPO_ROOT
from tests.e2e.control import ComposeControl
from tests.e2e.test_pet_images import GIF, image_url, upload
from tests.e2e.test_pets import a_pet

pytestmark = pytest.mark.skipif(
    not (tls.BEHIND_PROXY and E2E_MODE == "compose"),
    reason="only with the compose stack behind its TLS proxy (`make e2e-compose`)",
)


class _ComposeLoader(yaml.SafeLoader):
    """The safe loader, plus Compose's `!reset` tag."""


_ComposeLoader.add_constructor("!reset", lambda loader, node: None)
TLS_OVERRIDE = yaml.load((REPO_ROOT / "deploy/compose/tls.yml").read_text(), _ComposeLoader)  # noqa: S506
PROXY_ADDRESS = TLS_OVERRIDE["services"]["tls-proxy"]["networks"]["edge"]["ipv4_address"]
GATEWAY_ADDRESS = TLS_OVERRIDE["services"]["gateway"]["networks"]["edge"]["ipv4_address"]
EDGE_SUBNET = ipaddress.ip_network(TLS_OVERRIDE["networks"]["edge"]["ipam"]["config"][0]["subnet"])
CLIENT_A, CLIENT_B = (str(EDGE_SUBNET.network_address + n) for n in (10, 11))
PROXY_PORT = 8443
"""The proxy's port on the edge network (deploy/docker/tls-proxy/nginx.conf)."""


@pytest.fixture(scope="module")
def compose(request: pytest.FixtureRequest) -> ComposeControl:
    control: ComposeControl = request.getfixturevalue("compose_control")
    return control


def compose_command(compose: ComposeControl) -> list[str]:
    command = os.environ.get("PETSTORE_COMPOSE", "") or "docker compose"
    return [*shlex.split(command), "-p", compose.project]  # COMPOSE_FILE names the files


def gateway_image(compose: ComposeControl) -> str:
    (gateway, *_) = compose.containers("gateway")
    return str(gateway.attrs["Config"]["Image"])


def edge_network(compose: ComposeControl) -> str:
    return f"{compose.project}_edge"


def run_container(image: str, docker_args: list[str], script: str, *argv: str) -> str:
    """`docker run --rm` of a Python one-off in the gateway's image; its stdout."""
    done = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "python", *docker_args, image, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def tight_signups(compose: ComposeControl) -> Iterator[None]:
    """The gateway recreated with SIGNUP_RATE_LIMIT_PER_HOUR=3 (fresh buckets), and recreated
    with the suite's settings after the module."""

    def recreate(**env: str) -> None:
        subprocess.run(
            [*compose_command(compose), "up", "-d", "--no-deps", "--wait", "gateway"],
            env={**os.environ, **env},
            check=True,
            timeout=180,
        )

    recreate(SIGNUP_RATE_LIMIT_PER_HOUR=str(tls.SIGNUPS_PER_HOUR))
    try:
        yield
    finally:
        recreate()


def signups_from(compose: ComposeControl, address: str, header_sets: list[dict[str, str]]) -> list[int]:
    """Sign-ups sent by a container with `address` on the proxy's network."""
    docker_args = ["--network", edge_network(compose), "--ip", address]
    docker_args += ["--add-host", f"petstore.test:{PROXY_ADDRESS}"]
    plan = json.dumps(header_sets)
    out = run_container(
        gateway_image(compose),
        docker_args,
        tls.SIGNUP_SCRIPT,
        "petstore.test",
        str(PROXY_PORT),
        tls.ca_pem(),
        plan,
    )
    return tls.signup_statuses(out)


async def test_an_uploaded_image_url_is_https_on_the_public_host_without_a_port(
    api: Api, unique: str
) -> None:
    public = urlsplit(api.base_url)
    assert public.scheme == "https"
    pet = parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)
    reply = await upload(api, int(pet["id"]), GIF)
    url = urlsplit(image_url(reply))
    assert (url.scheme, url.hostname, url.port) == ("https", public.hostname, public.port)
    assert url.netloc == public.netloc  # the proxy's port 443 is nowhere in the URL
    assert url.path.startswith(f"/v2/pet/{pet['id']}/images/")
    stored = (await api.call("GET", f"/pet/{pet['id']}")).json
    assert url.geturl() in stored["photoUrls"]


@pytest.mark.usefixtures("tight_signups")
def test_two_client_addresses_have_two_budgets_and_forwarded_for_chooses_none(
    compose: ComposeControl,
) -> None:
    budget = tls.SIGNUPS_PER_HOUR
    spoofs = tls.spoofed_forwarded_for(CLIENT_B, PROXY_ADDRESS)
    first = signups_from(compose, CLIENT_A, [{}] * (budget + 1) + spoofs)
    # A spends its budget; then, claiming to be B or anyone else, it is still A.
    assert first == [400] * budget + [429] + [429] * len(spoofs), first
    # B, another address behind the same proxy, has its whole budget.
    second = signups_from(compose, CLIENT_B, [{}] * (budget + 1))
    assert second == [400] * budget + [429], second


@pytest.mark.usefixtures("tight_signups")
async def test_host_clients_share_one_budget_whatever_loopback_address_they_bind(api: Api) -> None:
    """Why the test above uses containers: through Docker's published port the proxy sees the
    edge bridge's address for every host client, so 127.0.0.2 and 127.0.0.3 are one client."""

    async def signups(source: str, count: int) -> list[int]:
        connector = tls.connector(local_addr=(source, 0))
        async with ClientSession(connector=connector, timeout=ClientTimeout(total=15)) as session:
            client = Api(session, api.base_url, api.static_key)
            return [
                (await client.call("POST", "/user", body="{}", content_type=JSON)).status
                for _ in range(count)
            ]

    budget = tls.SIGNUPS_PER_HOUR
    assert await signups("127.0.0.2", budget) == [400] * budget
    assert await signups("127.0.0.3", 1) == [429]


def test_the_gateway_is_reached_only_from_the_proxy_network(compose: ComposeControl) -> None:
    (gateway, *_) = compose.containers("gateway")
    gateway.reload()
    published = {
        port: bindings for port, bindings in gateway.attrs["NetworkSettings"]["Ports"].items() if bindings
    }
    assert published == {}, published
    # What the plain stack publishes the gateway on answers nothing here.
    host, port = os.environ.get("GATEWAY_PUBLISH", "127.0.0.1:18080").rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=3).close()
    probe = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('{GATEWAY_ADDRESS}', 8080), timeout=3).close(); print('open')\n"
        "except OSError as exc:\n"
        "    print('closed', type(exc).__name__)\n"
    )
    image = gateway_image(compose)
    # On the proxy's network the gateway answers (the probe works)...
    assert run_container(image, ["--network", edge_network(compose)], probe).split()[0] == "open"
    # ...from a network of its own, as anything outside the stack is, it does not.
    outside = f"petstore-outside-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "network", "create", outside], check=True, capture_output=True, timeout=30)
    try:
        assert run_container(image, ["--network", outside], probe).split()[0] == "closed"
    finally:
        subprocess.run(["docker", "network", "rm", outside], check=False, capture_output=True, timeout=30)
