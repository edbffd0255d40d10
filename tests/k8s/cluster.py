"""kubectl, the namespace under test and a bounded load through the gateway, for the tests of
deploy/k8s against a running cluster (`make e2e-k8s`, deploy/k8s/e2e.sh)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout

from petstore_devstack.releases import DEPLOYABLES, current_version
from tests.e2e import tls

NAMESPACE = os.environ.get("PETSTORE_K8S_NAMESPACE", "petstore")
PET_IMAGE = f"petstore/pet-service:{current_version(DEPLOYABLES['pet-service'])}"
"""An image the cluster has (make e2e-k8s loads the working tree's, tagged with its version):
for probe pods that need one."""
KUBECTL_TIMEOUT_SECONDS = 240.0


def kubectl(
    *args: str, namespace: str | None = NAMESPACE, stdin: str | None = None, check: bool = True
) -> str:
    """Run kubectl (KUBECONFIG from the environment) and return its stdout."""
    argv = ["kubectl", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_SECONDS, check=False
    )
    if check:
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr.strip()}"
    return done.stdout if done.returncode == 0 else done.stderr


def kubectl_json(*args: str, namespace: str | None = NAMESPACE) -> Any:
    return json.loads(kubectl(*args, "-o", "json", namespace=namespace))


def ready_pods(app: str) -> list[str]:
    """Names of the running, ready, not terminating pods of one app."""
    pods = kubectl_json("get", "pods", "-l", f"app.kubernetes.io/name={app}")["items"]
    names = []
    for pod in pods:
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        if not pod["metadata"].get("deletionTimestamp") and conditions.get("Ready") == "True":
            names.append(pod["metadata"]["name"])
    return sorted(names)


def handled_calls(pod: str) -> int:
    """The RPCs a service pod has completed (grpc_server_handled_total, every method and code
    but the health checks), read from its /metrics on 9090 inside the pod: kubectl exec, so the
    network policies (metrics only from ns monitoring) stay as they are."""
    script = (
        "import urllib.request; "
        "print(urllib.request.urlopen('http://127.0.0.1:9090/metrics', timeout=5).read().decode())"
    )
    text = kubectl("exec", pod, "--", "python3", "-c", script)
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"grpc_server_handled_total\{([^}]*)\} ([0-9.e+]+)$", line)
        if match and "grpc.health" not in match.group(1):
            total += float(match.group(2))
    return int(total)


def client_pod(name: str, app: str, idle_seconds: int) -> dict[str, object]:
    """A pod that idles for idle_seconds (then exits: a pod left behind stops by itself),
    admitted under `restricted`, from which scripts run with kubectl exec (python3 of an image
    the cluster has)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": app}},
        "spec": {
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 10001,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "client",
                    "image": PET_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["python3", "-c", f"import time; time.sleep({idle_seconds})"],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }


@contextmanager
def client_pods(namespace: str, names: list[str], app: str, idle_seconds: int = 900) -> Iterator[list[str]]:
    """Client pods in a namespace of their own (Pod Security `restricted` enforced there, and
    none of our network policies), ready; the namespace is deleted after, whatever happened."""
    kubectl("create", "namespace", namespace, namespace=None)
    try:
        enforce = "pod-security.kubernetes.io/enforce=restricted"
        kubectl("label", "namespace", namespace, enforce, namespace=None)
        for name in names:
            manifest = json.dumps(client_pod(name, app, idle_seconds))
            kubectl("apply", "-f", "-", stdin=manifest, namespace=namespace)
        for name in names:
            kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", namespace=namespace)
        yield names
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false", namespace=None, check=False)


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
    """Whether a TCP connection from `pod` to each host:port opens: {target: "open"|"closed"}."""
    out = kubectl("exec", pod, "--", "python3", "-c", CONNECT, *targets, namespace=namespace)
    return {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip()}


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(interval)


@dataclass
class LoadResult:
    sent: int = 0
    failed: list[str] = field(default_factory=list)


async def bounded_load(
    base_url: str,
    api_key: str,
    pet_tag: str,
    *,
    stop: asyncio.Event,
    workers: int = 4,
    max_requests: int = 20_000,
) -> LoadResult:
    """GET /pet/findByTags (the gateway calls pet-service every time) from a few workers
    until `stop` is set or max_requests were sent; every answer but a 200 is recorded as a failure."""
    result = LoadResult()
    connector = tls.connector()  # through the TLS proxy: the run's certificate
    async with ClientSession(timeout=ClientTimeout(total=10), connector=connector) as session:

        async def worker() -> None:
            while not stop.is_set() and result.sent < max_requests:
                result.sent += 1
                try:
                    async with session.get(
                        f"{base_url}/pet/findByTags",
                        params={"tags": pet_tag},
                        headers={"api_key": api_key, "Accept": "application/json"},
                    ) as reply:
                        body = await reply.text()
                        if reply.status != 200:
                            result.failed.append(f"{reply.status} {body[:200]}")
                except Exception as error:  # a connection error is a failed request too
                    result.failed.append(repr(error))

        await asyncio.gather(*(worker() for _ in range(workers)))
    return result
