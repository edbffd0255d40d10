"""The network policies are enforced (k3s's network-policy controller, kube-router): a pod
outside the allowed set cannot open pet-service's gRPC port, while the gateway can."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.k8s.cluster import PET_IMAGE, kubectl, kubectl_json, ready_pods

PROBE_NAMESPACE = "petstore-netpol-probe"
CONNECT = (
    "import socket, sys\n"
    "for target in sys.argv[1:]:\n"
    "    host, port = target.rsplit(':', 1)\n"
    "    try:\n"
    "        socket.create_connection((host, int(port)), timeout=3).close(); print(target, 'open')\n"
    "    except OSError as error:\n"
    "        print(target, 'closed', type(error).__name__)\n"
)


def connect_from_pod(pod: str, namespace: str, targets: list[str]) -> dict[str, str]:
    out = kubectl("exec", pod, "--", "python3", "-c", CONNECT, *targets, namespace=namespace)
    return {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def probe_pod() -> str:
    """A pod with none of the allowed labels, in a namespace of its own (no policies of ours
    there, so only pet-service's ingress policy can stop it), admitted under `restricted`."""
    if os.environ.get("PETSTORE_K8S_NETWORK_POLICY", "on") != "on":
        pytest.fail("the network-policy controller is off: this run cannot prove the policies")
    kubectl("create", "namespace", PROBE_NAMESPACE, namespace=None)
    enforce = "pod-security.kubernetes.io/enforce=restricted"
    kubectl("label", "namespace", PROBE_NAMESPACE, enforce, namespace=None)
    name = f"probe-{uuid.uuid4().hex[:6]}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "netpol-probe"}},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 10001,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "probe",
                    "image": PET_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["python3", "-c", "import time; time.sleep(600)"],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(pod), namespace=PROBE_NAMESPACE)
    kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", namespace=PROBE_NAMESPACE)
    return name


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
    try:
        # The control: the probe does reach a pod no policy guards (CoreDNS's TCP port).
        seen = connect_from_pod(probe_pod, PROBE_NAMESPACE, [*targets, f"{dns}:53"])
        assert seen[f"{dns}:53"] == "open", seen
        assert all(seen[target] == "closed" for target in targets), seen
        gateway = ready_pods("gateway")[0]
        from_gateway = connect_from_pod(gateway, "petstore", targets)
        assert all(state == "open" for state in from_gateway.values()), from_gateway
    finally:
        kubectl("delete", "namespace", PROBE_NAMESPACE, "--wait=false", namespace=None, check=False)
