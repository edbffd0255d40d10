#!/usr/bin/env bash
# cert.sh DIR [HOST...]: a self-signed certificate for the HOSTs (default petstore.test; the
# first is its subject) and 127.0.0.1, valid two days, made afresh for a test run:
# DIR/tls.crt and DIR/tls.key (the names of a kubernetes.io/tls Secret's keys, and what the
# proxy reads from /etc/petstore-tls). The certificate is its own CA: the tests trust
# DIR/tls.crt and nothing else.
set -euo pipefail
dir="$1"
shift
hosts=("${@:-petstore.test}")
names=""
for host in "${hosts[@]}"; do names+="DNS:$host,"; done
mkdir -p "$dir"
chmod 0755 "$dir" # the proxy (uid 10001) opens the files in it
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj "/CN=${hosts[0]}" -addext "subjectAltName=${names}IP:127.0.0.1" \
  -keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
# The proxy runs as 10001 and must read its key: owned by it where we may (root), else readable.
chmod 0644 "$dir/tls.crt"
if [[ "$(id -u)" == 0 ]]; then
  chown 10001:10001 "$dir/tls.key"
  chmod 0600 "$dir/tls.key"
else
  chmod 0644 "$dir/tls.key"
fi
echo "$dir/tls.crt"
