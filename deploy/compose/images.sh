#!/usr/bin/env bash
# The images the compose stack needs before `compose build`: the Python base image our
# Dockerfiles name, and the MongoDB image (or, where none can be had, a FerretDB stand-in).
# Prints one line KEY=VALUE per decision on stdout (the run reads them); talks on stderr.
#
#   PYTHON_IMAGE  (the ARG PYTHON_IMAGE default of the Dockerfiles): used when present, else
#     pulled; when no registry gives it, a stand-in is built offline and tagged with that
#     name so the Dockerfiles build unchanged: a Debian bookworm minbase root filesystem
#     (mmdebstrap, from the Debian mirror apt uses) with Python 3.11, venv and pip, `python`
#     and `pip` on PATH, and this host's extra CA certificates (an intercepting HTTPS proxy
#     would otherwise fail pip with CERTIFICATE_VERIFY_FAILED). The tarball is cached in
#     .cache/docker-base/.
#   MONGO_IMAGE (docker-compose.yml's mongo service): used when present or pullable; else
#     DATABASE=ferretdb and the image petstore/ferretdb-standin is built from the FerretDB
#     binary devstack builds (.cache/ferretdb), on the Python base image.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CACHE="${PETSTORE_CACHE_DIR:-$ROOT/.cache}"
BASE_CACHE="$CACHE/docker-base"
PY="${PY:-$ROOT/.venv/bin/python}"
PULL_TIMEOUT="${PETSTORE_PULL_TIMEOUT:-90}"
SUITE=bookworm # its python3 is 3.11, the version the Dockerfiles name

say() { printf 'images: %s\n' "$*" >&2; }
die() {
  say "FAILED: $*"
  exit 1
}

PYTHON_IMAGE="$(sed -n 's/^ARG PYTHON_IMAGE=//p' gateway/Dockerfile)"
[[ -n "$PYTHON_IMAGE" ]] || die "gateway/Dockerfile has no ARG PYTHON_IMAGE default"
for dockerfile in pet-service/Dockerfile order-service/Dockerfile user-service/Dockerfile webhook-service/Dockerfile; do
  grep -qx "ARG PYTHON_IMAGE=$PYTHON_IMAGE" "$dockerfile" || die "$dockerfile names another PYTHON_IMAGE"
done
MONGO_IMAGE="$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["services"]["mongo"]["image"])' docker-compose.yml)"
FERRETDB_VERSION="$("$PY" -c 'from petstore_devstack.ferretdb import VERSION; print(VERSION)')"
FERRETDB_IMAGE="petstore/ferretdb-standin:$FERRETDB_VERSION"

present() { docker image inspect "$1" >/dev/null 2>&1; }

pulled() { # image: true when a registry gives it within PULL_TIMEOUT
  say "$1 is not here: trying to pull it"
  if timeout "$PULL_TIMEOUT" docker pull -q "$1" >/dev/null 2>"$BASE_CACHE/pull.err"; then
    return 0
  fi
  say "cannot pull $1: $(tail -n 1 "$BASE_CACHE/pull.err")"
  return 1
}

debian_mirror() { # the Debian archive apt uses here (deb822 or one-line sources), else deb.debian.org
  local uri
  uri="$(grep -hoE '(URIs:|^deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -oE 'https?://[^ ]+' | head -n 1 || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

build_python_standin() {
  local tarball="$BASE_CACHE/$SUITE-python3.tar"
  if [[ ! -s "$tarball" ]]; then
    command -v mmdebstrap >/dev/null || {
      [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null ||
        die "$PYTHON_IMAGE cannot be pulled and mmdebstrap is missing (needs root and apt-get to install it)"
      say "installing mmdebstrap (apt-get)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
    }
    local mirror cas=()
    mirror="$(debian_mirror)"
    shopt -s nullglob
    cas=(/usr/local/share/ca-certificates/*.crt)
    shopt -u nullglob
    say "building a $SUITE minbase root filesystem with Python 3.11 from $mirror (${#cas[@]} extra CA certificates; cached in $tarball)"
    local hooks=(
      --customize-hook='mkdir -p "$1/usr/local/share/ca-certificates"'
    )
    for ca in "${cas[@]}"; do
      hooks+=(--customize-hook="copy-in $ca /usr/local/share/ca-certificates/")
    done
    hooks+=(
      --customize-hook='chroot "$1" update-ca-certificates >/dev/null 2>&1'
      # pip reads the system bundle (with those certificates) rather than its own certifi copy.
      --customize-hook='printf "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" >"$1/etc/pip.conf"'
      --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"; ln -sf /usr/bin/pip3 "$1/usr/local/bin/pip"'
      # A container's Python is its own: pip may install into it (as in the real image).
      --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED'
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'
    )
    mkdir -p "$BASE_CACHE"
    mmdebstrap --quiet --variant=minbase --format=tar \
      --include=python3,python3-venv,python3-pip,ca-certificates,passwd \
      "${hooks[@]}" "$SUITE" "$tarball.part" "$mirror" || die "mmdebstrap failed"
    mv "$tarball.part" "$tarball"
  else
    say "reusing the cached root filesystem $tarball"
  fi
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL org.opencontainers.image.description=\"stand-in for $PYTHON_IMAGE: Debian $SUITE minbase with Python 3.11\"" \
    --change 'CMD ["python3"]' \
    "$tarball" "$PYTHON_IMAGE" >/dev/null
  say "tagged the stand-in as $PYTHON_IMAGE (Debian $SUITE minbase, Python $(docker run --rm "$PYTHON_IMAGE" python --version 2>&1 | cut -d' ' -f2))"
}

build_ferretdb_image() {
  local binary context
  binary="$("$PY" -m petstore_devstack.ferretdb install)"
  context="$(mktemp -d)"
  cp "$binary" "$context/ferretdb"
  cp deploy/compose/ferretdb.Dockerfile "$context/Dockerfile"
  docker build -q --build-arg "BASE_IMAGE=$PYTHON_IMAGE" -t "$FERRETDB_IMAGE" "$context" \
    >/dev/null 2>"$BASE_CACHE/ferretdb-build.err" || {
    cat "$BASE_CACHE/ferretdb-build.err" >&2
    die "could not build $FERRETDB_IMAGE"
  }
  rm -rf "$context"
  say "$FERRETDB_IMAGE is built (FerretDB $FERRETDB_VERSION on SQLite) as the MongoDB stand-in"
}

mkdir -p "$BASE_CACHE"
if present "$PYTHON_IMAGE"; then
  description="$(docker image inspect -f '{{index .Config.Labels "org.opencontainers.image.description"}}' "$PYTHON_IMAGE" 2>/dev/null || true)"
  if [[ "$description" == stand-in* ]]; then
    say "$PYTHON_IMAGE is present: the local $description (built by an earlier run)"
  else
    say "$PYTHON_IMAGE is present"
  fi
elif pulled "$PYTHON_IMAGE"; then
  say "pulled $PYTHON_IMAGE"
else
  build_python_standin
fi
echo "PYTHON_IMAGE=$PYTHON_IMAGE"

if [[ "${PETSTORE_E2E_DATABASE:-}" != ferretdb ]] && { present "$MONGO_IMAGE" || pulled "$MONGO_IMAGE"; }; then
  say "the stack runs on $MONGO_IMAGE"
  echo "DATABASE=mongo"
else
  build_ferretdb_image # every run: the layer cache makes it a no-op when nothing changed
  say "no MongoDB image can be had here: the stack runs on $FERRETDB_IMAGE (deploy/compose/ferretdb.yml) instead of $MONGO_IMAGE"
  echo "DATABASE=ferretdb"
fi
