#!/usr/bin/env bash
# The TLS proxy's image, petstore/tls-proxy:<nginx version>: nginx from Debian packages in
# front of the gateway (deploy/compose/tls.yml, deploy/k8s/components/tls-proxy). Built the way
# deploy/compose/images.sh builds the Python stand-in, with no registry: a Debian bookworm
# minbase root filesystem with nginx-light (mmdebstrap, from the Debian mirror apt uses, and
# bookworm-security), cached as a tarball in .cache/docker-base/, imported as
# petstore/nginx-base:bookworm; then this folder's Dockerfile adds nginx.conf on top (so a
# changed config rebuilds in a second, not a new root filesystem).
# Prints the image:tag on stdout; talks on stderr. Needs a Docker engine (and root with apt-get
# the first time, when mmdebstrap is missing).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
CACHE="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/docker-base"
SUITE=bookworm
BASE_IMAGE="petstore/nginx-base:$SUITE"
TARBALL="$CACHE/$SUITE-nginx.tar"

say() { printf 'tls-proxy image: %s\n' "$*" >&2; }
die() {
  say "FAILED: $*"
  exit 1
}

debian_mirror() { # the Debian archive apt uses here, else deb.debian.org
  local uri
  uri="$(grep -hoE '(URIs:|^deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -oE 'https?://[^ ]+' | head -n 1 || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  if [[ ! -s "$TARBALL" ]]; then
    command -v mmdebstrap >/dev/null || {
      [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null || die "mmdebstrap is missing (needs root and apt-get to install it)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
    }
    mirror="$(debian_mirror)"
    security="${mirror%/debian*}/debian-security"
    say "building a $SUITE minbase root filesystem with nginx-light from $mirror and $security (cached in $TARBALL)"
    mkdir -p "$CACHE"
    mmdebstrap --quiet --variant=minbase --format=tar --include=nginx-light \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/etc/nginx/sites-enabled/*' \
      "$SUITE" "$TARBALL.part" "deb $mirror $SUITE main" "deb $security $SUITE-security main" ||
      die "mmdebstrap failed"
    mv "$TARBALL.part" "$TARBALL"
  fi
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'LABEL org.opencontainers.image.description="Debian bookworm minbase with nginx-light"' \
    "$TARBALL" "$BASE_IMAGE" >/dev/null
fi
version="$(docker run --rm "$BASE_IMAGE" dpkg-query -W -f '${Version}' nginx-light)"
image="petstore/tls-proxy:${version%%-*}"
docker build --quiet --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$image" "$HERE" >/dev/null || die "docker build failed"
say "$image is built (nginx-light $version)"
echo "$image"
