#!/usr/bin/env bash
# `make protos-contract`: buf lint on the protos, then buf breaking against the protos of each
# deployable's previous release (deploy/releases.toml, read through petstore_devstack.releases):
# a service one release behind must still understand everything the working tree sends it.
# Rules: protos/buf.yaml. buf comes from the pinned buf-bin package (requirements/dev.lock).
#
#   protos/contract.sh [--protos DIR] [--against DIR]...
#     --protos   the protos to check (default: this folder)
#     --against  compare with these folders instead of the previous releases' protos
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
python="${PYTHON:-$repo/.venv/bin/python}"
buf="$(dirname "$python")/buf"
[[ -x "$buf" ]] || { echo "protos/contract.sh: $buf is missing: run \`make install\`" >&2; exit 1; }

protos="$here"
against=()
labels=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --protos) protos="$2"; shift 2 ;;
    --against) against+=("$2"); labels+=("$2"); shift 2 ;;
    *) echo "protos/contract.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [[ ${#against[@]} == 0 ]]; then
  # One comparison per distinct release commit; their buf.yaml is this one (a release before
  # the file existed has none), with this one's third_party/.
  for commit in $("$python" -m petstore_devstack.releases previous-commits); do
    mkdir -p "$tmp/$commit"
    git -C "$repo" archive "$commit" protos/petstore | tar -x -C "$tmp/$commit"
    cp "$here/buf.yaml" "$tmp/$commit/protos/buf.yaml"
    # buf.yaml names the vendored annotation schema's module, so it comes along (a release from
    # before the protos imported it simply does not use it).
    cp -R "$here/third_party" "$tmp/$commit/protos/third_party"
    against+=("$tmp/$commit/protos")
    labels+=("the protos of the previous release at ${commit:0:12}")
  done
fi

(cd "$protos" && "$buf" lint)
echo "buf lint: the protos follow the STANDARD rules"
for i in "${!against[@]}"; do
  (cd "$protos" && "$buf" breaking . --against "${against[$i]}")
  echo "buf breaking: nothing breaks ${labels[$i]}"
done
