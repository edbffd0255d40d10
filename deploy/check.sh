#!/usr/bin/env bash
# Offline checks of the deployment files: Kubernetes manifests, docker-compose.yml, Dockerfiles.
# Exits non-zero on the first failure; prints what it checked. `make test` runs it.
#
#   1. kustomize renders every folder of deploy/k8s/base, the overlays (dev, prod, e2e) and the
#      Ingress examples (the e2e overlay takes components/tls-proxy; components/monitoring and
#      the own-repo example, whose objects are CRDs or whose base is remote, are rendered by
#      deploy/deploy_tests)
#   2. the renders pass `kubernetes-validate --strict` for each version in K8S_VERSIONS
#   3. docker-compose.yml matches the Compose Specification schema (vendored) and
#      `docker compose config -q` accepts it with the secrets and the callers' keys set (alone,
#      with the FerretDB override of deploy/compose, and with the TLS proxy's override), and
#      refuses it without any one of them
#   4. hadolint on the five Dockerfiles and the TLS proxy's (.hadolint.yaml if present)
#   5. pytest deploy/deploy_tests: policy tests on the rendered manifests, compose file, Dockerfiles
#
# Needs: the project's .venv (make install), and either kubectl (for `kubectl kustomize`) or
# Go (to build kustomize once into .cache/deploy-tools). `docker compose` is used when the
# Docker CLI has it; otherwise Docker Compose is built once from its Go module into the same
# cache (a few minutes, the first time only). No Docker engine or cluster is needed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${VENV:-$ROOT/.venv}"
# Oldest Kubernetes we support (native preStop sleep is on by default from 1.30) and the
# newest schema bundled with kubernetes-validate.
K8S_VERSIONS=(1.30.0 1.37.0)

K8S_DIRS=(
  deploy/k8s/base/gateway
  deploy/k8s/base/pet-service
  deploy/k8s/base/order-service
  deploy/k8s/base/user-service
  deploy/k8s/base/webhook-service
  deploy/k8s/base/mongodb
  deploy/k8s/base/network-policies
  deploy/k8s/overlays/dev
  deploy/k8s/overlays/prod
  deploy/k8s/overlays/e2e
  deploy/k8s/examples/ingress-nginx
  deploy/k8s/examples/traefik
)
DOCKERFILES=(gateway/Dockerfile pet-service/Dockerfile order-service/Dockerfile user-service/Dockerfile
  webhook-service/Dockerfile deploy/docker/tls-proxy/Dockerfile)

step() { printf '\n==> %s\n' "$*"; }
ok() { printf '    ok: %s\n' "$*"; }
die() {
  printf 'deploy/check.sh: FAILED: %s\n' "$*" >&2
  exit 1
}

for tool in python hadolint kubernetes-validate check-jsonschema; do
  [[ -x "$VENV/bin/$tool" ]] || die "$VENV/bin/$tool is missing: run \`make install\` first"
done

# ---- tools ----------------------------------------------------------------------------------
# shellcheck source=deploy/tools.sh
source "$ROOT/deploy/tools.sh"

KUSTOMIZE=()
if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
  KUSTOMIZE=(kubectl kustomize)
else
  bin="$TOOLS/kustomize-$KUSTOMIZE_VERSION"
  if [[ ! -x "$bin" ]]; then
    echo "kubectl kustomize unavailable: building kustomize $KUSTOMIZE_VERSION into $TOOLS (once)"
    go_build_tool sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" . "$bin" ||
      die "neither kubectl nor Go to build kustomize $KUSTOMIZE_VERSION is available"
  fi
  KUSTOMIZE=("$bin" build)
fi

find_compose || die "Docker Compose is not available and could not be built with Go"
echo "kustomize: ${KUSTOMIZE[*]}"
echo "compose:   ${COMPOSE[*]} ($("${COMPOSE[@]}" version --short 2>/dev/null || echo '?'))"

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# ---- 1. render --------------------------------------------------------------------------------
step "1. kustomize renders each base folder and overlay"
for dir in "${K8S_DIRS[@]}"; do
  [[ -f "$dir/kustomization.yaml" ]] || die "$dir/kustomization.yaml is missing"
  out="$OUT/$(echo "$dir" | tr / _).yaml"
  "${KUSTOMIZE[@]}" "$dir" >"$out" || die "kustomize could not render $dir"
  [[ -s "$out" ]] || die "$dir rendered nothing"
  ok "$dir ($(grep -c '^kind:' "$out") objects)"
done

# ---- 2. schema-validate the renders ---------------------------------------------------------
step "2. kubernetes-validate --strict against Kubernetes ${K8S_VERSIONS[*]}"
for version in "${K8S_VERSIONS[@]}"; do
  for out in "$OUT"/*.yaml; do
    "$VENV/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$version" "$out" ||
      die "$(basename "$out" .yaml) is not valid for Kubernetes $version"
  done
  ok "all ${#K8S_DIRS[@]} renders valid for $version"
done

# ---- 3. docker-compose.yml ------------------------------------------------------------------
step "3. docker-compose.yml: Compose Specification schema and \`compose config\`"
"$VENV/bin/check-jsonschema" --schemafile deploy/schemas/compose-spec.json docker-compose.yml ||
  die "docker-compose.yml does not match deploy/schemas/compose-spec.json"
ok "schema (deploy/schemas/compose-spec.json)"
# An empty env file: a developer's .env must not change the result.
: >"$OUT/empty.env"
# What the file requires (secrets and the callers' public keys), with placeholder values.
REQUIRED_VARS=(PETSTORE_SESSION_SECRET PETSTORE_API_KEYS GATEWAY_CALLER_SIGNING_KEY GATEWAY_CALLER_PUBLIC_KEY
  ORDER_SERVICE_CALLER_SIGNING_KEY ORDER_SERVICE_CALLER_PUBLIC_KEY
  WEBHOOK_SERVICE_CALLER_SIGNING_KEY WEBHOOK_SERVICE_CALLER_PUBLIC_KEY)
UNSET=()
for var in "${REQUIRED_VARS[@]}"; do UNSET+=(-u "$var"); done
PLACEHOLDERS=(PETSTORE_SESSION_SECRET=placeholder-secret-placeholder-secret-0123 PETSTORE_API_KEYS=placeholder-key
  GATEWAY_CALLER_SIGNING_KEY=placeholder-gateway-seed GATEWAY_CALLER_PUBLIC_KEY=placeholder-gateway-public
  ORDER_SERVICE_CALLER_SIGNING_KEY=placeholder-order-seed ORDER_SERVICE_CALLER_PUBLIC_KEY=placeholder-order-public
  WEBHOOK_SERVICE_CALLER_SIGNING_KEY=placeholder-webhook-seed WEBHOOK_SERVICE_CALLER_PUBLIC_KEY=placeholder-webhook-public)
env "${UNSET[@]}" "${PLACEHOLDERS[@]}" \
  "${COMPOSE[@]}" --env-file "$OUT/empty.env" -f docker-compose.yml config -q ||
  die "\`compose config\` rejects docker-compose.yml"
ok "compose config -q (placeholder secrets)"
env "${UNSET[@]}" "${PLACEHOLDERS[@]}" \
  "${COMPOSE[@]}" --env-file "$OUT/empty.env" -f docker-compose.yml -f deploy/compose/ferretdb.yml config -q ||
  die "\`compose config\` rejects docker-compose.yml with deploy/compose/ferretdb.yml"
ok "compose config -q with the FerretDB override"
env "${UNSET[@]}" "${PLACEHOLDERS[@]}" TLS_CERT_DIR="$OUT" \
  "${COMPOSE[@]}" --env-file "$OUT/empty.env" -f docker-compose.yml -f deploy/compose/tls.yml config -q ||
  die "\`compose config\` rejects docker-compose.yml with deploy/compose/tls.yml"
if env "${UNSET[@]}" "${PLACEHOLDERS[@]}" -u TLS_CERT_DIR \
  "${COMPOSE[@]}" --env-file "$OUT/empty.env" -f docker-compose.yml -f deploy/compose/tls.yml config -q 2>/dev/null; then
  die "deploy/compose/tls.yml renders without TLS_CERT_DIR: the certificate must be required"
fi
ok "compose config -q with the TLS proxy's override (and refused without TLS_CERT_DIR)"
for missing in "${REQUIRED_VARS[@]}"; do
  given=()
  for placeholder in "${PLACEHOLDERS[@]}"; do
    [[ "$placeholder" == "$missing="* ]] || given+=("$placeholder")
  done
  if env "${UNSET[@]}" "${given[@]}" \
    "${COMPOSE[@]}" --env-file "$OUT/empty.env" -f docker-compose.yml config -q 2>/dev/null; then
    die "docker-compose.yml renders without $missing: it must be required"
  fi
done
ok "compose config refuses to render without any one of ${REQUIRED_VARS[*]}"
if env "${UNSET[@]}" \
  "${COMPOSE[@]}" --env-file .env.example -f docker-compose.yml config -q 2>/dev/null; then
  die "docker-compose.yml renders with .env.example as it is: its secrets must be left empty"
fi
ok "compose config refuses .env.example until its secrets are filled in"

# ---- 4. Dockerfiles -----------------------------------------------------------------------------
step "4. hadolint"
hadolint_args=()
[[ -f .hadolint.yaml ]] && hadolint_args=(--config .hadolint.yaml)
for dockerfile in "${DOCKERFILES[@]}"; do
  [[ -f "$dockerfile" ]] || die "$dockerfile is missing"
  "$VENV/bin/hadolint" "${hadolint_args[@]}" "$dockerfile" || die "hadolint: $dockerfile"
  ok "$dockerfile"
done

# ---- 5. policy tests ------------------------------------------------------------------------
step "5. pytest deploy/deploy_tests"
PETSTORE_KUSTOMIZE="${KUSTOMIZE[*]}" PETSTORE_COMPOSE="${COMPOSE[*]}" \
  "$VENV/bin/python" -m pytest deploy/deploy_tests -q -p no:cacheprovider || die "deploy/deploy_tests"

printf '\ndeploy/check.sh: all deployment checks OK\n'
