"""The network policies are enforced (k3s's network-policy controller, kube-router): a pod
outside the allowed set cannot open pet-service's gRPC port, while the gateway can."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.k8s.cluster import client_pods, connect_from_pod, kubectl_json, ready_pods

PROBE_NAMESPACE = "petstore-netpol-probe"


@pytest.fixture(scope="module")
def probe_pod() -> Iterator[str]:
    """A pod with none of the allowed labels, in a namespace of its own (no policies of ours
    there, so only pet-service's ingress policy can stop it), admitted under `restricted`."""
    if os.environ.get("PETSTORE_K8S_NETWORK_POLICY", "on") != "on":
        pytest.fail("the network-policy controller is off: this run cannot prove the policies")
    name = f"probe-{uuid.uuid4().hex[:6]}"
    with client_pods(PROBE_NAMESPACE, [name], app="netpol-probe", idle_seconds=600):
        yield name


def test_only_allowed_pods_reach_pet_service_grpc(probe_pod: str) -> None:
    pet_ips = [
        pod["status"]["podIP"]
        for pod in kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=pet-service")["items"]
        if pod["metadata"]["name"] in ready_pods("pet-service")
    ]
    assert pet_ips
    dns_pods = kubectl_json("get", "pods", "-l", "k8s-app=kube-dns", namespace="kube-system")["items"]
    dns = dns_pods[0]["status"]["podIP"]
    targets = [f"{ip}:50051" for ip in pet_ips]
    # The control: the probe does reach a pod no policy guards (CoreDNS's TCP port).
    seen = connect_from_pod(probe_pod, PROBE_NAMESPACE, [*targets, f"{dns}:53"])
    assert seen[f"{dns}:53"] == "open", seen
    assert all(seen[target] == "closed" for target in targets), seen
    gateway = ready_pods("gateway")[0]
    from_gateway = connect_from_pod(gateway, "petstore", targets)
    assert all(state == "open" for state in from_gateway.values()), from_gateway
