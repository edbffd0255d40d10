#!/usr/bin/env bash
# `make images [SERVICE=pet-service]`: build the images of the working tree, each tagged with
# its deployable's version (the `version` of <deployable>/pyproject.toml), and with that version
# and the commit it was built from:
#
#   petstore/pet-service:1.1.0   petstore/pet-service:1.1.0-3f2a9c1d0e4b
#
# (`-dirty` after the commit when the deployable's shipped files have uncommitted changes).
# SERVICE (or the arguments): one of `python -m petstore_devstack.releases names` (pet-service,
# order-service, user-service, webhook-service, gateway); default all.
# PREVIOUS=1: build each one's previous release instead (deploy/releases.toml), from the
# repository at its commit, tagged the same way with its version and commit; default all that
# have one (`names --released`: a new deployable, never released, has none).
# REGISTRY=registry.example.com/petstore: name the images <REGISTRY>/pet-service:... instead
# of petstore/pet-service:... (then `docker push` them; deploy/k8s/README.md).
# Prints every image:tag it built, one per line, on stdout; talks on stderr. Needs a Docker
# engine, and the project's Python (petstore_devstack.releases knows the versions).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-$ROOT/.venv/bin/python}"
REGISTRY="${REGISTRY:-petstore}"
previous=()
[[ "${PREVIOUS:-0}" == 1 ]] && previous=(--previous)
released=()
[[ "${PREVIOUS:-0}" == 1 ]] && released=(--released)
mapfile -t ALL < <("$PY" -m petstore_devstack.releases names "${released[@]}")
say() { printf 'images: %s\n' "$*" >&2; }
die() {
  say "FAILED: $*"
  exit 1
}

deployables=("$@")
if [[ ${#deployables[@]} == 0 ]]; then
  if [[ -n "${SERVICE:-}" ]]; then deployables=("$SERVICE"); else deployables=("${ALL[@]}"); fi
fi
for deployable in "${deployables[@]}"; do
  [[ " ${ALL[*]} " == *" $deployable "* ]] || die "unknown deployable '$deployable': one of ${ALL[*]}"
done
command -v docker >/dev/null || die "no docker command: this needs a Docker engine"

for deployable in "${deployables[@]}"; do
  read -r version tag commit < <("$PY" -m petstore_devstack.releases tags "${previous[@]}" "$deployable")
  context="$ROOT"
  if [[ "$commit" != HEAD ]]; then # a release: the repository as it was at its commit
    context="$(mktemp -d)"
    git archive "$commit" | tar -x -C "$context"
  fi
  image="$REGISTRY/$deployable"
  say "building $image:$version and $image:$tag"
  docker build --quiet -f "$context/$deployable/Dockerfile" -t "$image:$version" -t "$image:$tag" "$context" >/dev/null ||
    die "docker build of $deployable failed"
  [[ "$context" == "$ROOT" ]] || rm -rf "$context"
  printf '%s\n' "$image:$version" "$image:$tag"
done
