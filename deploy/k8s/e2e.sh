#!/usr/bin/env bash
# `make e2e-k8s`: the tests/e2e suite and the Kubernetes tests (tests/k8s) through a real
# single-node Kubernetes (k3s) built and started on this machine for the run:
#
#   1. packages   Debian packages k3s needs (root, apt-get) when missing (deploy/k8s/cluster.sh)
#   2. k3s        k3s v1.32.0+k3s1 built from the Go module proxy into .cache/k3s/<version>/
#                 (reused when present), and its containerd template (restrict_oom_score_adj)
#   3. engine     a Docker engine (deploy/compose/engine.sh), to build images; stopped right
#                 after when this run started it
#   4. images     pause (pause.c) and CoreDNS v1.12.0 (cached by version), our four images and
#                 the FerretDB stand-in (deploy/compose/images.sh + compose build), saved as
#                 tarballs k3s imports at start
#   5. cluster    the machine's network state recorded; k3s started with its data under a
#                 temporary directory, its PID recorded
#   6. apply      namespace + Secrets once, then each team's folder alone (pet, order, user,
#                 gateway), then deploy/k8s/overlays/e2e (dev + the FerretDB stand-in); every
#                 Deployment and the database Available
#   7. suite      tests/e2e through `kubectl port-forward` to the gateway on 127.0.0.1, then
#                 tests/k8s (redeploy under load, three pet pods, Pod Security, policies)
#   8. stop       pods, k3s and the shims it left stopped by PID; mounts, links, routes,
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
GATEWAY_LOCAL="${GATEWAY_LOCAL:-127.0.0.1:18081}"
[[ "$GATEWAY_LOCAL" == 127.* ]] || die "GATEWAY_LOCAL must be on 127.0.0.0/8: the tests send traffic only there"
export PETSTORE_API_KEYS="${PETSTORE_API_KEYS:-e2e-static-key-0123456789}"
export PETSTORE_SESSION_SECRET="${PETSTORE_SESSION_SECRET:-$(head -c 36 /dev/urandom | base64 | tr -d '\n/+=')}"

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
find_compose || die "Docker Compose is not available and could not be built with Go"
decisions="$(PETSTORE_E2E_DATABASE=ferretdb deploy/compose/images.sh)"
FERRETDB_IMAGE="petstore/ferretdb-standin:$("$VENV/bin/python" -c 'from petstore_devstack.ferretdb import VERSION; print(VERSION)')"
grep -q '^DATABASE=ferretdb$' <<<"$decisions" || die "images.sh did not build the FerretDB stand-in"
grep -q "image: $FERRETDB_IMAGE\$" deploy/k8s/overlays/e2e/ferretdb-standin.yaml ||
  die "deploy/k8s/overlays/e2e names another FerretDB image than $FERRETDB_IMAGE"
LOGS="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/e2e-k8s"
mkdir -p "$LOGS" "$IMAGE_TARS"
COMPOSE_FILE="$ROOT/docker-compose.yml" "${COMPOSE[@]}" build >"$LOGS/build.log" 2>&1 || {
  tail -n 40 "$LOGS/build.log" >&2
  die "compose build failed (the whole log: $LOGS/build.log)"
}
# The team folders name tag 1.0.0, the overlays `dev`: both tags, one image each.
ours=("$FERRETDB_IMAGE")
for service in pet-service order-service user-service gateway; do
  docker tag "petstore/$service:dev" "petstore/$service:1.0.0"
  ours+=("petstore/$service:dev" "petstore/$service:1.0.0")
done
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
kubectl apply -f deploy/k8s/overlays/dev/namespace.yaml
kubectl -n "$NAMESPACE" create secret generic petstore-session --from-literal=session-secret="$PETSTORE_SESSION_SECRET"
kubectl -n "$NAMESPACE" create secret generic petstore-api-keys --from-literal=api-keys="$PETSTORE_API_KEYS"
for s in pet order user; do # the FerretDB stand-in: a standalone server, no replica set
  kubectl -n "$NAMESPACE" create secret generic "$s-service-mongodb" \
    --from-literal=uri="mongodb://mongodb-0.mongodb:27017/petstore_$s"
done
for team in pet-service order-service user-service gateway; do
  echo "applying deploy/k8s/base/$team alone"
  kubectl apply -k "deploy/k8s/base/$team"
done
kubectl apply -k deploy/k8s/overlays/e2e
kubectl -n "$NAMESPACE" rollout status statefulset/mongodb --timeout=180s
for team in pet-service order-service user-service gateway; do
  kubectl -n "$NAMESPACE" rollout status "deployment/$team" --timeout=240s
done
kubectl -n "$NAMESPACE" wait --for=condition=Available deployment --all --timeout=120s
kubectl -n kube-system wait --for=condition=Available deployment/coredns --timeout=120s
kubectl -n "$NAMESPACE" get pods -o wide

step suite
kubectl -n "$NAMESPACE" port-forward --address 127.0.0.1 svc/gateway "${GATEWAY_LOCAL##*:}:8080" >"$RUN/port-forward.log" 2>&1 &
FORWARD_PID=$!
for _ in $(seq 1 30); do
  curl -sf "http://$GATEWAY_LOCAL/readyz" >/dev/null && break
  sleep 1
done
export PETSTORE_E2E_MODE=k8s PETSTORE_E2E_BASE_URL="http://$GATEWAY_LOCAL/v2" PETSTORE_K8S_NAMESPACE="$NAMESPACE"
"$VENV/bin/python" -m pytest -p no:cacheprovider tests/e2e tests/k8s
