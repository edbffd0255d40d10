"""The gateway behind its TLS proxy in the cluster (deploy/k8s/components/tls-proxy, the e2e
overlay), as clients in other pods see it: each client pod has a budget of its own, none picks
its budget with X-Forwarded-For, and the gateway's own port admits no pod, while the proxy's
admits any.

Which source address the proxy sees: the suite's own requests come through `kubectl
port-forward`, which enters the pod on its loopback, so they all look alike. Two clients with
addresses of their own are two pods (each its pod IP, kept through the Service's DNAT); their
budgets are made small by setting SIGNUP_RATE_LIMIT_PER_HOUR=3 on the gateway for these tests
(one gateway pod: the e2e overlay's HPA keeps one, and budgets are per pod), and unset again
after. That replaces the gateway's pod, which ends the suite's port-forward: deploy/k8s/e2e.sh
runs this module last, on its own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e import tls
from tests.k8s.cluster import NAMESPACE, client_pods, connect_from_pod, kubectl, kubectl_json, ready_pods

pytestmark = pytest.mark.skipif(not tls.BEHIND_PROXY, reason="only with the gateway behind its TLS proxy")

CLIENT_NAMESPACE = "petstore-proxy-clients"
PROXY_HOST = f"gateway.{NAMESPACE}.svc"
"""The gateway Service, whose port 443 is the proxy (the run's certificate names it)."""
ROLLOUT_TIMEOUT = "180s"


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[str, str]]:
    """Two client pods (two pod IPs) in a namespace of their own."""
    names = [f"client-a-{uuid.uuid4().hex[:6]}", f"client-b-{uuid.uuid4().hex[:6]}"]
    with client_pods(CLIENT_NAMESPACE, names, app="proxy-client"):
        yield names[0], names[1]


@pytest.fixture(scope="module")
def tight_signups() -> Iterator[None]:
    """The gateway with SIGNUP_RATE_LIMIT_PER_HOUR=3 (its pod replaced: fresh buckets); unset
    after (the ConfigMap's value again)."""

    def roll(setting: str) -> None:
        kubectl("set", "env", "deployment/gateway", "-c", "gateway", setting)
        kubectl("rollout", "status", "deployment/gateway", f"--timeout={ROLLOUT_TIMEOUT}")

    roll(f"SIGNUP_RATE_LIMIT_PER_HOUR={tls.SIGNUPS_PER_HOUR}")
    try:
        yield
    finally:
        roll("SIGNUP_RATE_LIMIT_PER_HOUR-")


def pod_ip(name: str, namespace: str) -> str:
    return str(kubectl_json("get", "pod", name, namespace=namespace)["status"]["podIP"])


def signups_from(pod: str, header_sets: list[dict[str, str]]) -> list[int]:
    out = kubectl(
        "exec",
        pod,
        "--",
        "python3",
        "-c",
        tls.SIGNUP_SCRIPT,
        PROXY_HOST,
        "443",
        tls.ca_pem(),
        json.dumps(header_sets),
        namespace=CLIENT_NAMESPACE,
    )
    return tls.signup_statuses(out)


@pytest.mark.usefixtures("tight_signups")
def test_two_client_pods_have_two_budgets_and_forwarded_for_chooses_none(clients: tuple[str, str]) -> None:
    assert len(ready_pods("gateway")) == 1, "budgets are per gateway pod: this needs exactly one"
    a, b = clients
    budget = tls.SIGNUPS_PER_HOUR
    spoofs = tls.spoofed_forwarded_for(pod_ip(b, CLIENT_NAMESPACE), "127.0.0.1")
    first = signups_from(a, [{}] * (budget + 1) + spoofs)
    # A spends its budget; then, claiming to be B, anyone, or the trusted proxy, it is still A.
    assert first == [400] * budget + [429] + [429] * len(spoofs), first
    second = signups_from(b, [{}] * (budget + 1))
    assert second == [400] * budget + [429], second


def test_the_gateway_port_admits_no_pod_and_the_proxy_port_any(clients: tuple[str, str]) -> None:
    gateway = ready_pods("gateway")[0]
    ip = pod_ip(gateway, NAMESPACE)
    targets = [f"{ip}:8080", f"{ip}:8443"]
    seen = connect_from_pod(clients[0], CLIENT_NAMESPACE, targets)
    assert seen == {f"{ip}:8080": "closed", f"{ip}:8443": "open"}, seen
