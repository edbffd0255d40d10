#!/usr/bin/env bash
# `make e2e-compose`: the tests/e2e suite and the container fault tests (tests/faults/containers) against
# docker-compose.yml on a Docker engine, from whatever this machine has:
#
#   1. engine     a Docker engine that answers is used as is; otherwise (root, apt-get) Debian's
#                 docker.io is installed and dockerd started for this run, and stopped at the
#                 end by its PID, also on failure (deploy/compose/engine.sh)
#   2. compose    the docker CLI's compose plugin, or Compose built once into .cache/deploy-tools
#   3. images     the Python base image and MongoDB pulled, or built offline as stand-ins
#                 (deploy/compose/images.sh), then the five images from their Dockerfiles
#   4. tls        the TLS proxy's image (nginx from Debian, deploy/docker/tls-proxy/build.sh)
#                 and a certificate made for this run (cert.sh); the stack runs behind it
#                 (deploy/compose/tls.yml): the gateway's own port is published nowhere
#   5. webhooks   the webhook tests' receivers placed where the webhook service's container reaches
#                 them: the Docker bridge's gateway address (the test process serves them there),
#                 two free ports, a certificate made for that address, whose CA the webhook
#                 service trusts and the address alone allowed to it (deploy/compose/webhook-receiver.yml)
#   6. suite      pytest brings the stack up (two replicas of each gRPC service, one webhook service), waits for
#                 health, runs the tests through the proxy published on 127.0.0.1:443 (https,
#                 trusting only this run's certificate), then the proxy's own tests
#                 (tests/e2e/test_behind_proxy.py), and takes the stack down
#
# Under CI=true nothing here may be skipped: a missing engine is installed or the run fails.
# Prints how long each step took.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
ENGINE="$ROOT/deploy/compose/engine.sh"
RUN_NAME=e2e-compose
# shellcheck source=deploy/steps.sh
source "$ROOT/deploy/steps.sh"
# shellcheck source=deploy/tools.sh
source "$ROOT/deploy/tools.sh"

# The run's own project and secrets: nothing a developer's .env or running stack holds.
PROJECT="petstore-e2e-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export PETSTORE_COMPOSE_PROJECT="$PROJECT"
export PETSTORE_API_KEYS="${PETSTORE_API_KEYS:-e2e-static-key-0123456789}"
export PETSTORE_SESSION_SECRET="${PETSTORE_SESSION_SECRET:-$(head -c 36 /dev/urandom | base64 | tr -d '\n/+=')}"
export GATEWAY_PUBLISH="${GATEWAY_PUBLISH:-127.0.0.1:18080}"
# The callers' key pairs (gateway, order service, webhook service) for this run: each signs its gRPC calls, the
# services trust the public keys (docker-compose.yml). petstore_common.caller_keys makes a pair.
caller_key_pair() { # PREFIX: exports PREFIX_CALLER_SIGNING_KEY and PREFIX_CALLER_PUBLIC_KEY
  local pair
  pair="$("$VENV/bin/python" -m petstore_common.caller_keys)" || die "python -m petstore_common.caller_keys failed"
  export "$1_CALLER_SIGNING_KEY=$(sed -n 's/^CALLER_SIGNING_KEY=//p' <<<"$pair")"
  export "$1_CALLER_PUBLIC_KEY=$(sed -n 's/^CALLER_PUBLIC_KEY=//p' <<<"$pair")"
}
[[ -n "${GATEWAY_CALLER_SIGNING_KEY:-}" ]] || caller_key_pair GATEWAY
[[ -n "${ORDER_SERVICE_CALLER_SIGNING_KEY:-}" ]] || caller_key_pair ORDER_SERVICE
[[ -n "${WEBHOOK_SERVICE_CALLER_SIGNING_KEY:-}" ]] || caller_key_pair WEBHOOK_SERVICE
# A replica that comes back is found by its callers when their connections age out: 5 s
# rather than the default 30 s keeps the rolling-restart test short.
export GRPC_MAX_CONNECTION_AGE_SECONDS="${GRPC_MAX_CONNECTION_AGE_SECONDS:-5}"
# The run's database is FerretDB, which scans every document for each pet look-up; after the whole
# suite the pet table is large, and a reservation (read, then compare-and-set with its event)
# outlasted the 2 s default under the replica-restart test's load (20 of 133 orders, 503). 4 s
# stays under the gateway's 5 s deadline. MongoDB serves these from the _id index.
export PET_SERVICE_TIMEOUT_SECONDS="${PET_SERVICE_TIMEOUT_SECONDS:-4}"
[[ "$GATEWAY_PUBLISH" == 127.* ]] || die "GATEWAY_PUBLISH must be on 127.0.0.0/8: the tests send traffic only there"

STACK_UP=""
ENGINE_STARTED=0
TLS_DIR="$(mktemp -d /tmp/petstore-e2e-tls.XXXXXX)"
RECEIVER_DIR="$(mktemp -d /tmp/petstore-e2e-webhook-receiver.XXXXXX)"
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  rm -rf "$TLS_DIR" "$RECEIVER_DIR"
  if [[ -n "$STACK_UP" ]]; then
    # pytest takes its stack down itself; this is for a run cut short before it could.
    "${COMPOSE[@]}" -p "$PROJECT" down -v --remove-orphans >/dev/null 2>&1 || true
  fi
  if [[ "$ENGINE_STARTED" == 1 ]]; then
    "$ENGINE" stop || status=1
  fi
  report
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step engine
# The PID file is written before `start` returns: a run cut short while dockerd starts stops it too.
ENGINE_STARTED=1
ENGINE_STARTED="$("$ENGINE" start | sed -n 's/^STARTED=//p')"

step compose
find_compose || die "Docker Compose is not available and could not be built with Go"
echo "compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short))"

step images
decisions="$(deploy/compose/images.sh)"
DATABASE="$(sed -n 's/^DATABASE=//p' <<<"$decisions")"
# Compose reads its files from COMPOSE_FILE, and so do the tests (tests/e2e/conftest.py).
export COMPOSE_FILE="$ROOT/docker-compose.yml"
if [[ "$DATABASE" == ferretdb ]]; then
  COMPOSE_FILE+=":$ROOT/deploy/compose/ferretdb.yml"
  echo "NOTE: no MongoDB image can be had here: the stack runs on FerretDB instead (deploy/compose/ferretdb.yml)"
fi
export PETSTORE_COMPOSE="${COMPOSE[*]}"

step build
LOGS="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/e2e-compose"
mkdir -p "$LOGS"
echo "building the four images (log: $LOGS/build.log)"
"${COMPOSE[@]}" -p "$PROJECT" build >"$LOGS/build.log" 2>&1 || {
  tail -n 40 "$LOGS/build.log" >&2
  die "compose build failed (the whole log: $LOGS/build.log)"
}
docker image ls --format '  {{.Repository}}:{{.Tag}} {{.Size}}' 'petstore/*'

step tls
# The stack behind the TLS proxy: the suite reaches it at https://127.0.0.1 (the certificate
# names 127.0.0.1 and petstore.test), so public URLs carry no port.
export TLS_PROXY_IMAGE TLS_CERT_DIR="$TLS_DIR" TLS_PUBLISH="${TLS_PUBLISH:-127.0.0.1:443}"
TLS_PROXY_IMAGE="$(deploy/docker/tls-proxy/build.sh)"
deploy/docker/tls-proxy/cert.sh "$TLS_DIR" >/dev/null
[[ "$TLS_PUBLISH" == 127.* ]] || die "TLS_PUBLISH must be on 127.0.0.0/8: the tests send traffic only there"
COMPOSE_FILE+=":$ROOT/deploy/compose/tls.yml"
export PETSTORE_E2E_CA="$TLS_DIR/tls.crt"
if [[ "${TLS_PUBLISH##*:}" == 443 ]]; then
  export PETSTORE_E2E_BASE_URL="https://${TLS_PUBLISH%:*}/v2"
else
  export PETSTORE_E2E_BASE_URL="https://$TLS_PUBLISH/v2"
fi
echo "tls: $TLS_PROXY_IMAGE in front of the gateway, the suite at $PETSTORE_E2E_BASE_URL"

step webhooks
# The address containers reach this host at (what `host-gateway` names): the default bridge's gateway.
receiver_host="$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null || true)"
[[ "$receiver_host" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "the Docker engine's bridge network has no IPv4 gateway ('$receiver_host'): the webhook service could reach no receiver"
receiver_ports="$("$VENV/bin/python" -c '
import socket, sys
probes = [socket.socket() for _ in range(2)]
for probe in probes:
    probe.bind((sys.argv[1], 0))
print(",".join(str(probe.getsockname()[1]) for probe in probes))' "$receiver_host")" ||
  die "no free ports on $receiver_host for the webhook receivers"
"$VENV/bin/python" -m petstore_devstack.webhook_receiver --certificate-only "$RECEIVER_DIR" --host "$receiver_host"
chmod 644 "$RECEIVER_DIR/ca.pem" # read in the container by its user (10001), whatever the umask
export PETSTORE_E2E_WEBHOOK_HOST="$receiver_host" PETSTORE_E2E_WEBHOOK_PORTS="$receiver_ports"
export PETSTORE_E2E_WEBHOOK_TLS_DIR="$RECEIVER_DIR"
COMPOSE_FILE+=":$ROOT/deploy/compose/webhook-receiver.yml"
echo "webhooks: the receivers at https://$receiver_host:{${receiver_ports}}, the webhook service trusting their CA"

step suite
STACK_UP=1
# COMPOSE_TESTS: other pytest paths (one fault file while working on it); the default is the lot.
# shellcheck disable=SC2086 # paths, split on purpose
PETSTORE_E2E_MODE=compose "$VENV/bin/python" -m pytest -p no:cacheprovider ${COMPOSE_TESTS:-tests/e2e tests/faults/containers}
