#!/usr/bin/env bash
# `make e2e-k8s`: the tests/e2e suite and the Kubernetes tests (tests/k8s) through a real
# single-node Kubernetes (k3s) built and started on this machine for the run:
#
#   1. packages   Debian packages k3s needs (root, apt-get) when missing (deploy/k8s/cluster.sh)
#   2. k3s        k3s v1.32.0+k3s1 built from the Go module proxy into .cache/k3s/<version>/
#                 (reused when present), and its containerd template (restrict_oom_score_adj)
#   3. engine     a Docker engine (deploy/compose/engine.sh), to build images; stopped right
#                 after when this run started it
#   4. images     pause (pause.c) and CoreDNS v1.12.0 (cached by version), our five images
#                 (deploy/images.sh: the working tree's, and pet-service's previous release)
#                 and the FerretDB stand-in (deploy/compose/images.sh), saved as tarballs k3s
#                 imports at start
#   5. cluster    the machine's network state recorded; k3s started with its data under a
#                 temporary directory, its PID recorded
#   6. apply      deploy/k8s/README.md's blocks as written there (namespace and Secrets, each
#                 team's folder alone, the rollout check), with deploy/k8s/overlays/e2e (dev +
#                 the FerretDB stand-in + the TLS proxy in the gateway's pods, its certificate
#                 made for this run as the Secret petstore-tls; the webhook tests' receivers'
#                 CA as the ConfigMap webhook-receiver-ca, their address and ports opened to the
#                 webhook service alone) between the last two; every Deployment Available
#   7. suite      tests/e2e through `kubectl port-forward` to the gateway Service's https port
#                 on 127.0.0.1:443 (the TLS proxy; the suite trusts only this run's certificate),
#                 serving the webhook receivers on the pod bridge's address (cni0, 10.42.0.1),
#                 then
#                 tests/k8s (pet-service rolled back to its previous release and forward
#                 again under load, three pet pods, Pod Security, policies), then, each
#                 alone, the gateway behind its proxy and the session secret's rotation
#                 under load (both replace the gateway's pods); E2E_K8S_TESTS="<paths>" runs
#                 only those (not under CI; the roll step then only if test_redeploy.py ran)
#   8. roll       deploy/k8s/README.md's roll block as written: pet-service forward (no-op) and
#                 back with `rollout undo`, to its previous release's image
#   9. stop       pods, k3s and the shims it left stopped by PID; mounts, links, routes,
#                 iptables rules, ipsets and paths restored and compared with the record
#
# Under CI=true nothing here may be skipped: a missing piece fails the run. Prints how long
# each step took.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
ENGINE="$ROOT/deploy/compose/engine.sh"
RUN_NAME=e2e-k8s
# shellcheck source=deploy/steps.sh
source "$ROOT/deploy/steps.sh"
# shellcheck source=deploy/tools.sh
source "$ROOT/deploy/tools.sh"
# shellcheck source=deploy/k8s/cluster.sh
source "$ROOT/deploy/k8s/cluster.sh"
# shellcheck source=deploy/host-state.sh
source "$ROOT/deploy/host-state.sh"

[[ "$(id -u)" == 0 ]] || die "k3s runs as root here (it manages mounts, links and iptables)"
NAMESPACE=petstore
# 443: the proxy names the public host without a port (Host $host), so the suite must reach it
# on the default port for the image URLs it is handed to lead back to it.
GATEWAY_LOCAL="${GATEWAY_LOCAL:-127.0.0.1:443}"
# Opt-in, to iterate: only these test paths (space-separated) in the suite step; never in CI.
E2E_K8S_TESTS="${E2E_K8S_TESTS:-}"
[[ -z "$E2E_K8S_TESTS" || "${CI:-}" != true ]] || die "E2E_K8S_TESTS is for iterating: CI runs every test"
[[ "$GATEWAY_LOCAL" == 127.* ]] || die "GATEWAY_LOCAL must be on 127.0.0.0/8: the tests send traffic only there"

readme_block() { # name: the ```sh block after "<!-- e2e-k8s: name -->" in deploy/k8s/README.md
  awk -v marker="<!-- e2e-k8s: $1 -->" '
    $0 == marker { found = 1; next }
    found && /^```sh$/ { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }' deploy/k8s/README.md
}
run_readme_block() { # name: run it in this shell, as a reader pastes it (what it exports stays)
  local block
  block="$(readme_block "$1")"
  [[ -n "$block" ]] || die "deploy/k8s/README.md has no block marked <!-- e2e-k8s: $1 -->"
  echo "deploy/k8s/README.md, block '$1':"
  sed 's/^/  | /' <<<"$block"
  eval "$block"
}

RUN="$(mktemp -d /tmp/petstore-k3s.XXXXXX)"
IMAGE_TARS="$RUN/images"
BEFORE="$RUN/before"
ENGINE_STARTED=0
FORWARD_PID=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  # Every part of the teardown runs, whatever fails before it.
  set +e
  step stop
  if [[ -n "$FORWARD_PID" ]]; then kill "$FORWARD_PID" 2>/dev/null || true; fi
  if [[ "$ENGINE_STARTED" == 1 ]]; then "$ENGINE" stop || status=1; fi
  k3s_stop || status=1
  if [[ -d "$BEFORE" ]]; then
    net_restore "$BEFORE"
    if net_verify "$BEFORE"; then
      echo "machine state: links, routes, iptables, ipsets, mounts and paths as before the run"
    else
      status=1
    fi
  fi
  # The run's directory (the cluster's data) goes once nothing is mounted under it.
  grep -q " $RUN" /proc/self/mountinfo || rm -rf "$RUN"
  report
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step packages
k3s_packages

step k3s
k3s_build
k3s_containerd_template

step engine
ENGINE_STARTED=1
ENGINE_STARTED="$("$ENGINE" start | sed -n 's/^STARTED=//p')"

step images
k3s_images
decisions="$(PETSTORE_E2E_DATABASE=ferretdb deploy/compose/images.sh)"
FERRETDB_IMAGE="petstore/ferretdb-standin:$("$VENV/bin/python" -c 'from petstore_devstack.ferretdb import VERSION; print(VERSION)')"
grep -q '^DATABASE=ferretdb$' <<<"$decisions" || die "images.sh did not build the FerretDB stand-in"
grep -q "image: $FERRETDB_IMAGE\$" deploy/k8s/overlays/e2e/ferretdb-standin.yaml ||
  die "deploy/k8s/overlays/e2e names another FerretDB image than $FERRETDB_IMAGE"
LOGS="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/e2e-k8s"
mkdir -p "$LOGS" "$IMAGE_TARS"
# The pet team's previous release (deploy/releases.toml), which tests/k8s/test_redeploy.py rolls
# back to and forward from under load, then the working tree's five (its tag <version> last,
# so it names the working tree's build when the two versions are the same).
ours=("$FERRETDB_IMAGE" "$(deploy/docker/tls-proxy/build.sh)")
{
  PY="$VENV/bin/python" PREVIOUS=1 deploy/images.sh pet-service
  PY="$VENV/bin/python" deploy/images.sh
} >"$LOGS/images.txt" 2>"$LOGS/build.log" || {
  tail -n 40 "$LOGS/build.log" >&2
  die "building the images failed (the whole log: $LOGS/build.log)"
}
mapfile -t -O 2 ours <"$LOGS/images.txt"
docker save -o "$IMAGE_TARS/petstore.tar" "${ours[@]}"
echo "images: ${ours[*]} ($(du -h "$IMAGE_TARS/petstore.tar" | cut -f1))"
if [[ "$ENGINE_STARTED" == 1 ]]; then
  "$ENGINE" stop
  ENGINE_STARTED=0
fi

step cluster
net_state "$BEFORE"
k3s_start "$RUN"

step apply
# The newcomer's path (deploy/k8s/README.md), block by block as written there: the namespace
# and the Secrets (the staff key it exports is the suite's), each team's folder alone; then the
# e2e overlay (the dev overlay with the FerretDB stand-in for the database).
run_readme_block secrets
run_readme_block apply
# The TLS proxy's certificate, made for this run (deploy/k8s/components/tls-proxy reads it).
deploy/docker/tls-proxy/cert.sh "$RUN/tls" petstore.test "gateway.$NAMESPACE.svc" >/dev/null
kubectl -n "$NAMESPACE" create secret tls petstore-tls --cert="$RUN/tls/tls.crt" --key="$RUN/tls/tls.key"
# The webhook tests' receivers: the suite serves them on this node at the address and ports the
# overlay's policy opens to the webhook service (webhook-receiver.yaml, read here: one source),
# with a certificate made now for that address, its CA the webhook service's WEBHOOK_CA_FILE.
read -r RECEIVER_HOST RECEIVER_PORTS < <("$VENV/bin/python" -c '
import sys, yaml
(rule,) = yaml.safe_load(open(sys.argv[1]))["spec"]["egress"]
(peer,) = rule["to"]
print(peer["ipBlock"]["cidr"].removesuffix("/32"), ",".join(str(port["port"]) for port in rule["ports"]))
' deploy/k8s/overlays/e2e/webhook-receiver.yaml)
[[ -n "${RECEIVER_PORTS:-}" ]] || die "deploy/k8s/overlays/e2e/webhook-receiver.yaml: no receiver address and ports read"
"$VENV/bin/python" -m petstore_devstack.webhook_receiver --certificate-only "$RUN/webhook-receiver" --host "$RECEIVER_HOST"
kubectl -n "$NAMESPACE" create configmap webhook-receiver-ca --from-file=ca.pem="$RUN/webhook-receiver/ca.pem"
kubectl apply -k deploy/k8s/overlays/e2e
kubectl -n "$NAMESPACE" rollout status statefulset/mongodb --timeout=180s
run_readme_block check
kubectl -n "$NAMESPACE" wait --for=condition=Available deployment --all --timeout=120s
kubectl -n kube-system wait --for=condition=Available deployment/coredns --timeout=120s
kubectl -n "$NAMESPACE" get pods -o wide

step suite
kubectl -n "$NAMESPACE" port-forward --address 127.0.0.1 svc/gateway "${GATEWAY_LOCAL##*:}:443" >"$RUN/port-forward.log" 2>&1 &
FORWARD_PID=$!
public="${GATEWAY_LOCAL%:443}"
for _ in $(seq 1 30); do
  curl -sf --cacert "$RUN/tls/tls.crt" "https://$public/readyz" >/dev/null && break
  sleep 1
done
# The gateway's readiness does not wait for the webhook service (webhooks are off the shop's
# critical path), and the overlay has just replaced its one pod (Recreate): the gateway's channel
# may still hold the old pod's address until it resolves the name again. The webhook tests
# start once the gateway reaches the new pod (staff's endpoint list answers).
webhooks_status=""
for _ in $(seq 1 60); do
  webhooks_status="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$RUN/tls/tls.crt" \
    -H "api_key: ${PETSTORE_API_KEYS%%,*}" "https://$public/v2/webhooks" || true)"
  [[ "$webhooks_status" == 200 ]] && break
  sleep 1
done
[[ "$webhooks_status" == 200 ]] || die "the gateway did not reach the webhook service within 60 s (GET /v2/webhooks: $webhooks_status)"
export PETSTORE_E2E_MODE=k8s PETSTORE_E2E_BASE_URL="https://$public/v2" PETSTORE_K8S_NAMESPACE="$NAMESPACE"
export PETSTORE_E2E_CA="$RUN/tls/tls.crt"
# The bridge has its address once a pod runs on it (the receivers listen on it alone).
ip -4 -o addr show | grep -q " inet $RECEIVER_HOST/" ||
  die "no interface here has $RECEIVER_HOST (deploy/k8s/overlays/e2e/webhook-receiver.yaml): the receivers cannot listen there"
export PETSTORE_E2E_WEBHOOK_HOST="$RECEIVER_HOST" PETSTORE_E2E_WEBHOOK_PORTS="$RECEIVER_PORTS"
export PETSTORE_E2E_WEBHOOK_TLS_DIR="$RUN/webhook-receiver"
# Last, each alone: they replace the gateway's pods, which ends the port-forward the suite uses.
ALONE=(tests/k8s/test_behind_proxy.py tests/k8s/test_secret_rotation.py)
suite() { "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"; }
if [[ -z "$E2E_K8S_TESTS" ]]; then
  suite tests/e2e tests/k8s "${ALONE[@]/#/--ignore=}"
  for module in "${ALONE[@]}"; do suite "$module"; done
else
  # Only the chosen paths: the ones of ALONE each alone and last, in ALONE's order.
  read -ra chosen <<<"$E2E_K8S_TESTS"
  shared=()
  for path in "${chosen[@]}"; do
    [[ " ${ALONE[*]} " == *" $path "* ]] || shared+=("$path")
  done
  if [[ "${#shared[@]}" -gt 0 ]]; then suite "${shared[@]}" "${ALONE[@]/#/--ignore=}"; fi
  for module in "${ALONE[@]}"; do
    if [[ " ${chosen[*]} " == *" $module "* ]]; then suite "$module"; fi
  done
fi

step roll
if [[ -n "$E2E_K8S_TESTS" && " $E2E_K8S_TESTS " != *" tests/k8s/test_redeploy.py "* ]]; then
  echo "E2E_K8S_TESTS without tests/k8s/test_redeploy.py: the roll block has no previous revision to undo to; skipped"
  exit 0
fi
# The README's roll-forward-and-back block, after tests/k8s/test_redeploy.py left pet-service
# at the working tree's folder with the previous release's revision before it: the apply is a
# no-op and the undo must bring back the previous release's image.
run_readme_block roll
read -r _ previous_tag _ < <("$VENV/bin/python" -m petstore_devstack.releases tags --previous pet-service)
running="$(kubectl -n "$NAMESPACE" get deployment pet-service -o jsonpath='{.spec.template.spec.containers[0].image}')"
[[ "$running" == "petstore/pet-service:$previous_tag" ]] ||
  die "after the README's rollout undo pet-service runs $running, not its previous release ($previous_tag)"
echo "rollout undo: pet-service back at its previous release ($running)"
