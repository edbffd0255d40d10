"""Pod Security `restricted` is enforced by the API server, and every pod of ours was admitted."""

from __future__ import annotations

import json

from tests.k8s.cluster import NAMESPACE, PET_IMAGE, kubectl, kubectl_json


def test_the_namespace_enforces_restricted() -> None:
    labels = kubectl_json("get", "namespace", NAMESPACE, namespace=None)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_every_pod_was_admitted() -> None:
    # A pod the admission refuses shows only as a FailedCreate event of its ReplicaSet or
    # StatefulSet, and as fewer pods than asked for.
    events = kubectl_json("get", "events", "--field-selector", "reason=FailedCreate")["items"]
    assert not events, [e["message"] for e in events]
    for kind in ("replicasets", "statefulsets"):
        for owner in kubectl_json("get", kind)["items"]:
            wanted = owner["spec"].get("replicas", 1)
            name = owner["metadata"]["name"]
            assert owner["status"].get("replicas", 0) == wanted, (kind, name, owner["status"])


def test_a_privileged_pod_is_refused() -> None:
    # The control: the API server does refuse what `restricted` forbids (server-side dry run).
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pss-probe"},
        "spec": {"containers": [{"name": "c", "image": PET_IMAGE, "securityContext": {"privileged": True}}]},
    }
    answer = kubectl("apply", "--dry-run=server", "-f", "-", stdin=json.dumps(pod), check=False)
    assert "violates PodSecurity" in answer, answer
    assert '"restricted' in answer, answer
