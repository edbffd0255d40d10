"""The session secret's rotation (docs/rotating-secrets.md, "Session secret", "On Kubernetes")
done on the running cluster with the runbook's own commands, while logged-in customers use the
gateway from inside the cluster:

- before: the user service at two replicas (user_service_replicas says why); a few users log
  in; their tokens are signed with the current secret S1;
- steps 1 (announce S2) and 2 (switch to S2), each the runbook's `session_secret` (the Secret
  replaced, `kubectl rollout restart` of the user service and the gateway, `rollout status`),
  under load from a client pod (tests/k8s/session_client.py): those tokens read their user
  again and again, and new logins are made and used at once and after. Not one request fails
  (each a connection of its own, none retried: no reset, no timeout, no 5xx) and nobody is
  logged out (no 401 for any token issued before or during the rotation). New logins carry
  S2's kid once the switch reached the user service;
- step 3 (drop S1): done EARLY on purpose (the runbook waits SESSION_TTL_SECONDS first, so
  that no token S1 signed is still alive): every token S1 signed, before or during the
  rotation, is refused 401 `invalid api_key`, every token S2 signed still works, and a new
  login gets an S2 token that works.

The Secret is put back as it was, and both Deployments rolled out with it, whatever happened.
Replacing the gateway's pods ends the suite's `kubectl port-forward`, so every request here
comes from the client pod and deploy/k8s/e2e.sh runs this module last, on its own.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest

from petstore_common.session_tokens import key_id
from tests.e2e import tls
from tests.e2e.test_users import PASSWORD, a_user
from tests.k8s.cluster import NAMESPACE, client_pods, kubectl, kubectl_json, ready_pods, wait_until

pytestmark = [
    pytest.mark.skipif(not tls.BEHIND_PROXY, reason="only with the gateway behind its TLS proxy"),
    pytest.mark.since("gateway", "1.1.0"),  # PETSTORE_SESSION_SECRETS_PREVIOUS, kids
    pytest.mark.since("user-service", "1.1.0"),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = REPO_ROOT / "docs" / "rotating-secrets.md"
CLIENT_SOURCE = (Path(__file__).parent / "session_client.py").read_text()
CLIENT_NAMESPACE_PREFIX = "petstore-rotation-"
"""Each run's client pod in a namespace of its own (the one of a run before may still be going)."""
GATEWAY = {"host": f"gateway.{NAMESPACE}.svc", "port": 443}
"""The gateway Service's port 443: the TLS proxy in each gateway pod (the run's certificate names it)."""
SECRET = "petstore-session"
READERS = ("user-service", "gateway")
"""The Deployments that read the Secret, each rolled out by every step."""
USERS = 6
USER_SERVICE_REPLICAS = 2
"""The base's minimum (deploy/k8s/base/user-service/hpa.yaml); see user_service_replicas."""
RE_RESOLVED_SECONDS = 12
"""Long enough for the gateway to have re-resolved the user service's name: its connections
age out every GRPC_MAX_CONNECTION_AGE_SECONDS (5 s in the e2e overlay), and CoreDNS answers
may be 5 s old."""
STEP_SECONDS_MAX = 420
"""One step: the Secret replaced, then two rollouts (pods started, ready, the old ones gone)."""
LOAD = {"workers": 4, "login_interval": 0.25, "seconds_max": 1200, "requests_max": 300_000}
"""The client pod's load: three readers and one login loop (at most 4 logins a second, well
under the e2e overlay's LOGIN_RATE_LIMIT_PER_MINUTE); it stops by itself after seconds_max
or requests_max if the test does not stop it first."""
SETTLE_SECONDS = 20
"""Load kept on after the last rollout: old pods leave after their preStop and grace."""


def runbook_function() -> str:
    """The runbook's `session_secret` shell function, read from docs/rotating-secrets.md: the
    test runs the commands an operator pastes, not a copy of them."""
    section = RUNBOOK.read_text().split("### On Kubernetes", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    match = re.search(r"^session_secret\(\) \{.*?^\}$", block, re.MULTILINE | re.DOTALL)
    assert match, f"{RUNBOOK}: no session_secret() function in the Kubernetes block"
    return match.group(0)


def session_secret(current: str, previous: str) -> None:
    """One step of the runbook: its function with these arguments, in bash."""
    script = f'{runbook_function()}\nsession_secret "$1" "$2"\n'
    argv = ["bash", "-euo", "pipefail", "-c", script, "session_secret", current, previous]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_SECONDS_MAX, check=False)
    assert done.returncode == 0, f"session_secret: {done.stderr.strip()}"


def nothing_terminating() -> bool:
    """No pod of the readers is still leaving: each one serving started after the last step."""
    for app in READERS:
        for pod in kubectl_json("get", "pods", "-l", f"app.kubernetes.io/name={app}")["items"]:
            if pod["metadata"].get("deletionTimestamp"):
                return False
    return True


def kid_of(token: str) -> str:
    """Which secret signed a session token (its kid header), read without verifying it."""
    return str(jwt.get_unverified_header(token)["kid"])


def diagnose() -> None:
    """What the cluster says about the failures: events, and the serving pods' logs."""
    print(kubectl("get", "events", "--sort-by=.lastTimestamp", check=False)[-6000:])
    for app in READERS:
        for pod in kubectl_json("get", "pods", "-l", f"app.kubernetes.io/name={app}")["items"]:
            name = pod["metadata"]["name"]
            logs = kubectl("logs", name, "-c", app, "--timestamps", check=False)
            interesting = [
                line
                for line in logs.splitlines()
                if '"status":5' in line or "WARN" in line or "ERROR" in line or "navailable" in line
            ]
            print(f"--- {name} ({len(logs.splitlines())} lines)\n" + "\n".join(interesting[-40:]))


def roll_out_readers() -> None:
    for app in READERS:
        kubectl("rollout", "restart", f"deployment/{app}")
    for app in READERS:
        kubectl("rollout", "status", f"deployment/{app}", "--timeout=300s")


@pytest.fixture
def session_secret_kept() -> Iterator[dict[str, str]]:
    """The Secret's keys as they are; after the test, the Secret exactly as it was (replaced
    with its own data, labels and annotations) and both readers rolled out with it."""
    before = kubectl_json("get", "secret", SECRET)
    try:
        yield {key: base64.b64decode(value).decode() for key, value in before["data"].items()}
    finally:
        kept = {
            key: before["metadata"][key] for key in ("labels", "annotations") if key in before["metadata"]
        }
        manifest = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": before["type"],
            "metadata": {"name": SECRET, "namespace": NAMESPACE, **kept},
            "data": before["data"],
        }
        kubectl("replace", "-f", "-", stdin=json.dumps(manifest))
        roll_out_readers()
        wait_until(nothing_terminating, 120, "the pods of the last rollout gone")
        assert kubectl_json("get", "secret", SECRET)["data"] == before["data"]


@pytest.fixture
def user_service_replicas() -> Iterator[None]:
    """The user service at USER_SERVICE_REPLICAS (through its HPA, which owns the count), as
    it was after. With the dev overlay's single replica, replacing it can fail the gateway's
    calls for up to half a second, rotation or not: the gateway learns of the new pod only when
    it next re-resolves the headless name (a connection ageing out), so when the one pod it
    knows turns NOT_SERVING at SIGTERM it has no pod to call. With two, one it knows serves."""
    hpa = kubectl_json("get", "hpa", "user-service")["spec"]
    bounds = {"minReplicas": hpa["minReplicas"], "maxReplicas": hpa["maxReplicas"]}
    wanted = {
        "minReplicas": USER_SERVICE_REPLICAS,
        "maxReplicas": max(USER_SERVICE_REPLICAS, bounds["maxReplicas"]),
    }
    kubectl("patch", "hpa", "user-service", "--type=merge", "-p", json.dumps({"spec": wanted}))
    try:
        wait_until(lambda: len(ready_pods("user-service")) >= USER_SERVICE_REPLICAS, 180, "user-service pods")
        wait_until(nothing_terminating, 120, "no pod of an earlier rollout left")
        time.sleep(RE_RESOLVED_SECONDS)  # the gateway knows every pod
        yield
    finally:
        kubectl("patch", "hpa", "user-service", "--type=merge", "-p", json.dumps({"spec": bounds}))


@dataclass(frozen=True)
class ClientPod:
    namespace: str
    name: str


@pytest.fixture
def client() -> Iterator[ClientPod]:
    """A client pod in a namespace of its own, from which the requests come."""
    pod = ClientPod(f"{CLIENT_NAMESPACE_PREFIX}{uuid.uuid4().hex[:6]}", "rotation-client")
    with client_pods(pod.namespace, [pod.name], app="rotation-client", idle_seconds=1800):
        yield pod


def client_argv(pod: ClientPod, mode: str, config: dict[str, Any]) -> list[str]:
    document = json.dumps({**GATEWAY, "ca": tls.ca_pem(), "password": PASSWORD, **config})
    exec_in_pod = ["kubectl", "-n", pod.namespace, "exec", "-i", pod.name, "--"]
    return [*exec_in_pod, "python3", "-c", CLIENT_SOURCE, mode, document]


def run_client(pod: ClientPod, mode: str, config: dict[str, Any]) -> Any:
    done = subprocess.run(
        client_argv(pod, mode, config), input="", capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.usefixtures("user_service_replicas")
def test_rotating_the_session_secret_under_load_logs_nobody_out(
    api_key: str, session_secret_kept: dict[str, str], client: ClientPod
) -> None:
    assert NAMESPACE == "petstore", "the runbook's commands name the namespace petstore"
    s1 = session_secret_kept["session-secret"]
    assert not session_secret_kept.get("previous-session-secrets"), "a rotation is already under way"
    s2 = secrets.token_urlsafe(48)  # as the runbook makes one
    s1_kid, s2_kid = key_id(s1), key_id(s2)

    unique = uuid.uuid4().hex[:8]
    users = [a_user(f"{unique}r{n}") for n in range(USERS)]
    created = run_client(client, "users", {"users": users, "staff_key": api_key})
    assert "tokens" in created, created
    before: dict[str, str] = created["tokens"]
    assert {kid_of(token) for token in before.values()} == {s1_kid}

    load = subprocess.Popen(
        client_argv(client, "load", {"tokens": before, **LOAD}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    steps: list[tuple[str, float]] = []
    try:
        time.sleep(5)  # load flowing before the first step
        for name, current, previous in (("announce", s1, s2), ("switch", s2, s1)):
            began = time.monotonic()
            print(name, "from", time.strftime("%H:%M:%S"))
            session_secret(current, previous)
            steps.append((name, round(time.monotonic() - began, 1)))
        time.sleep(SETTLE_SECONDS)
    finally:
        try:
            out, err = load.communicate(timeout=120)  # closes its stdin: the client stops
        except subprocess.TimeoutExpired:
            load.kill()
            raise
    assert load.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    print(
        f"steps {steps}; under load: {result['sent']} requests in {result['seconds']} s, "
        f"{result['failed']} failed; {json.dumps(result['counts'], sort_keys=True)}; "
        f"tokens issued per kid {result['issued']}, used per kid {result['used']} (S1 {s1_kid}, S2 {s2_kid})"
    )
    if result["failed"]:
        diagnose()
    assert result["failed"] == 0, json.dumps(result["failures"], indent=1)
    assert not [kind for kind in result["counts"] if kind.endswith(" 401")], result["counts"]
    assert result["counts"].get("session-before 200", 0) > 200, result["counts"]
    # Logins went on through the rotation, signed with S1 and then S2, and both kinds were used.
    assert set(result["issued"]) == {s1_kid, s2_kid}, result["issued"]
    assert result["used"].get(s1_kid, 0) > 0, result["used"]
    assert result["used"].get(s2_kid, 0) > 0, result["used"]

    # Step 3, early: S1 dropped while tokens it signed are still alive, to see them refused.
    session_secret(s2, "")
    wait_until(nothing_terminating, 120, "the pods of the last rollout gone")
    signed_s1 = list(before.items()) + [tuple(pair) for pair in result["sample"][s1_kid]]
    signed_s2 = [tuple(pair) for pair in result["sample"][s2_kid]]
    seen = run_client(
        client,
        "check",
        {"checks": signed_s1 + signed_s2, "logins": [next(iter(before))]},
    )
    refused, kept = seen["checks"][: len(signed_s1)], seen["checks"][len(signed_s1) :]
    assert refused == [["401", "invalid api_key"]] * len(signed_s1), refused
    assert kept == [["200", ""]] * len(signed_s2), kept
    assert seen["logins"] == [["200", s2_kid, ""]], seen["logins"]
