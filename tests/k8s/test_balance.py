"""Three pet-service pods: the gateway's calls spread over all of them (headless Service,
round_robin channels), read from each pod's own metrics."""

from __future__ import annotations

import json
import time

from tests.e2e.client import Api
from tests.k8s.cluster import handled_calls, kubectl, ready_pods, wait_until

REPLICAS = 3
CALLS = 300


async def test_calls_spread_over_three_pet_pods(api: Api, pet_tag: str) -> None:
    # The HPA owns the replica count (the Deployment sets none): three is set there.
    patch = {"spec": {"minReplicas": REPLICAS, "maxReplicas": REPLICAS}}
    kubectl("patch", "hpa", "pet-service", "--type=merge", "-p", json.dumps(patch))
    wait_until(lambda: len(ready_pods("pet-service")) == REPLICAS, 180, "three ready pet-service pods")
    pods = ready_pods("pet-service")

    # The gateway's channel sees new pods when it re-resolves (its connections age out every
    # GRPC_MAX_CONNECTION_AGE_SECONDS, 5 s here): call until every pod has served some.
    start = {pod: handled_calls(pod) for pod in pods}
    deadline = time.monotonic() + 90
    while True:
        for _ in range(30):
            reply = await api.call("GET", "/pet/findByTags", params={"tags": pet_tag}, api_key=api.static_key)
            assert reply.status == 200, reply.text
        if all(handled_calls(pod) > start[pod] for pod in pods):
            break
        assert time.monotonic() < deadline, f"some pet pod got no calls in 90 s: {pods}"

    # Then the measured share: CALLS calls, each pod serving a fair part of them.
    before = {pod: handled_calls(pod) for pod in pods}
    for _ in range(CALLS):
        reply = await api.call("GET", "/pet/findByTags", params={"tags": pet_tag}, api_key=api.static_key)
        assert reply.status == 200, reply.text
    served = {pod: handled_calls(pod) - before[pod] for pod in pods}
    print(f"calls per pet-service pod out of {CALLS} (plus health checks excluded): {served}")
    assert sum(served.values()) >= CALLS
    for pod, count in served.items():
        assert count >= CALLS / REPLICAS / 2, f"{pod} served {count} of {CALLS}: {served}"
