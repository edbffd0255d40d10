#!/usr/bin/env bash
# Generates the Python modules (messages, gRPC stubs, type stubs) from protos/ into
# protos/python/petstore/, and those of the vendored protovalidate schema
# (third_party/buf/validate/validate.proto) into protos/python/buf/, which the petstore modules
# import. The one way generated code is made; `--check` fails when the committed output differs
# from a fresh generation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
python=${PYTHON:-$repo/.venv/bin/python}
# protoc finds the mypy plugins (protoc-gen-mypy, protoc-gen-mypy_grpc) on PATH.
export PATH="$(dirname "$python"):$PATH"
out=$here/python

generated=(petstore buf)

generate() {
  local dest=$1
  for package in "${generated[@]}"; do rm -rf "${dest:?}/$package"; done
  mkdir -p "$dest"
  (cd "$here" && find petstore -name '*.proto' -print0 | sort -z | xargs -0 \
    "$python" -m grpc_tools.protoc -I . -I third_party \
      --python_out="$dest" --grpc_python_out="$dest" \
      --mypy_out="$dest" --mypy_grpc_out="$dest")
  # The annotation schema has no services: messages and their type stubs only.
  (cd "$here/third_party" && "$python" -m grpc_tools.protoc -I . \
    --python_out="$dest" --mypy_out="$dest" buf/validate/validate.proto)
  # Regular packages (not namespace ones), so every tool resolves them the same way.
  for package in "${generated[@]}"; do
    find "$dest/$package" -type d -exec sh -c 'touch "$1/__init__.py"' _ {} \;
    touch "$dest/$package/py.typed"
  done
}

if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  for package in "${generated[@]}"; do
    if ! diff -r "$tmp/$package" "$out/$package" >/dev/null; then
      diff -r "$tmp/$package" "$out/$package" | head -40 >&2
      echo "protos/python is stale: run 'make protos' and commit the result" >&2
      exit 1
    fi
  done
  echo "generated protobuf code is up to date"
else
  generate "$out"
fi
