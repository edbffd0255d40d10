#!/usr/bin/env bash
# Generates the Python modules (messages, gRPC stubs, type stubs) from protos/ into
# protos/python/petstore/. The one way generated code is made; `--check` fails when the
# committed output differs from a fresh generation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
python=${PYTHON:-$repo/.venv/bin/python}
# protoc finds the mypy plugins (protoc-gen-mypy, protoc-gen-mypy_grpc) on PATH.
export PATH="$(dirname "$python"):$PATH"
out=$here/python

generate() {
  local dest=$1
  rm -rf "$dest/petstore"
  mkdir -p "$dest"
  (cd "$here" && find petstore -name '*.proto' -print0 | sort -z | xargs -0 \
    "$python" -m grpc_tools.protoc -I . \
      --python_out="$dest" --grpc_python_out="$dest" \
      --mypy_out="$dest" --mypy_grpc_out="$dest")
  # Regular packages (not namespace ones), so every tool resolves them the same way.
  find "$dest/petstore" -type d -exec sh -c 'touch "$1/__init__.py"' _ {} \;
  touch "$dest/petstore/py.typed"
}

if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  if ! diff -r "$tmp/petstore" "$out/petstore" >/dev/null; then
    diff -r "$tmp/petstore" "$out/petstore" | head -40 >&2
    echo "protos/python is stale: run 'make protos' and commit the result" >&2
    exit 1
  fi
  echo "generated protobuf code is up to date"
else
  generate "$out"
fi
