# Sourced by deploy/check.sh and deploy/compose/e2e.sh: the deploy tools, built from their Go
# modules into .cache/deploy-tools (once) when this machine lacks them. Needs ROOT and VENV.

TOOLS="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/deploy-tools"
# Pinned tool versions for the fallbacks. kustomize: the one embedded in kubectl 1.32.
KUSTOMIZE_VERSION="v5.5.0"
# Compose v5.6.0 is the newest release whose go.mod accepts Go 1.26.8 (the toolchain here).
COMPOSE_VERSION="v5.6.0"

go_build_tool() { # module version package output [ldflags]: build a Go tool from its module
  local module=$1 version=$2 package=$3 output=$4 ldflags=${5:-}
  command -v go >/dev/null || return 1
  local dir
  # `go install pkg@version` refuses modules with replace/exclude directives (Compose has
  # them), so download the module and build inside it as the main module.
  dir=$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$module@$version" |
    "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') || return 1
  mkdir -p "$(dirname "$output")"
  (cd "$dir" && GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -trimpath -ldflags "$ldflags" -o "$output.tmp" "./$package") || return 1
  mv "$output.tmp" "$output"
}

# Sets COMPOSE to a Docker Compose v2+ command: the docker CLI's plugin, a standalone
# docker-compose, or Compose $COMPOSE_VERSION built once into $TOOLS (a few minutes).
find_compose() {
  COMPOSE=()
  if docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
  elif command -v docker-compose >/dev/null && [[ "$(docker-compose version --short 2>/dev/null)" =~ ^v?[2-9] ]]; then
    COMPOSE=(docker-compose) # a standalone Compose v2+ (v1 predates the Compose Specification)
  else
    local bin="$TOOLS/docker-compose-$COMPOSE_VERSION"
    if [[ ! -x "$bin" ]]; then
      echo "no Docker Compose v2+: building Compose $COMPOSE_VERSION into $TOOLS (once, a few minutes)" >&2
      go_build_tool github.com/docker/compose/v5 "$COMPOSE_VERSION" cmd "$bin" \
        "-X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" || return 1
    fi
    COMPOSE=("$bin")
  fi
}
