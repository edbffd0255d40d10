# Sourced by deploy/k8s/e2e.sh: a single-node k3s built on this machine, and the images it
# needs without a registry. Needs ROOT and VENV; everything built is cached under
# $CACHE/k3s/<version>/ (keyed by version, reused when present).
#
# Why built here: no registry and no GitHub answer on this machine, but the Go module proxy
# serves k3s v1.32.0+k3s1 and all its dependencies (the k3s-io forks of kubernetes and
# containerd included). The repository's scripts/download and scripts/build fetch from
# GitHub, so the build below is theirs reduced to what a module copy needs.

K3S_VERSION="v1.32.0+k3s1"
K3S_MODULE="github.com/k3s-io/k3s"
# The CoreDNS k3s v1.32.0+k3s1's bundled manifest (manifests/coredns.yaml) names.
COREDNS_VERSION="v1.12.0"
COREDNS_IMAGE="rancher/mirrored-coredns-coredns:1.12.0"
PAUSE_IMAGE="petstore.local/pause:3.10"
CACHE="${PETSTORE_CACHE_DIR:-$ROOT/.cache}"
K3S_CACHE="$CACHE/k3s/$K3S_VERSION"
K3S_BIN="$K3S_CACHE/bin"

# Debian packages: gcc/libseccomp-dev build k3s (cgo, seccomp); the CNI plugins (bridge,
# host-local, portmap, loopback), conntrack, iptables, ipset, socat are what the kubelet,
# flannel and kube-proxy call at run time; runc and containerd (its shim) run the pods.
# nftables: to list and remove the netfilter tables the run adds (iptables here is iptables-nft).
K3S_DEBS=(gcc libc6-dev libseccomp-dev pkg-config containernetworking-plugins conntrack iptables ipset socat runc containerd nftables)

k3s_packages() { # installs the missing Debian packages (root, apt-get)
  local missing=() pkg
  for pkg in "${K3S_DEBS[@]}"; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null ||
    die "missing Debian packages ${missing[*]} and cannot install them (needs root and apt-get)"
  echo "installing ${missing[*]} (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

go_module_dir() { # module@version: the module's directory in the Go module cache (downloaded)
  GOTOOLCHAIN=local GOFLAGS=-mod=mod GONOSUMDB="github.com/k3s-io" go mod download -json "$1" |
    "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

k3s_build() { # $K3S_BIN/k3s (and its multi-call links), built once per version
  [[ -x "$K3S_BIN/k3s" ]] && {
    echo "k3s: reusing $K3S_BIN/k3s"
    return 0
  }
  command -v go >/dev/null || die "go is missing: k3s is built from the Go module proxy"
  local dir src
  dir="$(go_module_dir "$K3S_MODULE@$K3S_VERSION")" || die "the Go module proxy did not give $K3S_MODULE@$K3S_VERSION"
  # A writable copy: -mod=mod may touch go.sum, and the module cache is read-only.
  src="$K3S_CACHE/src"
  rm -rf "$src"
  mkdir -p "$K3S_CACHE"
  cp -r "$dir" "$src"
  chmod -R u+w "$src"
  local golang containerd_version
  golang="$(GOTOOLCHAIN=local go env GOVERSION)"
  containerd_version="$(cd "$src" && GOFLAGS=-mod=mod go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' github.com/containerd/containerd)"
  # k3s refuses to start unless UpstreamGolang is the Go that runs it; the kubernetes
  # versions make the API server and kubectl report v1.32.0+k3s1 rather than v0.0.0.
  local ldflags=(
    -w -s
    "-X $K3S_MODULE/pkg/version.Version=$K3S_VERSION"
    "-X $K3S_MODULE/pkg/version.GitCommit=module"
    "-X $K3S_MODULE/pkg/version.UpstreamGolang=$golang"
    "-X k8s.io/client-go/pkg/version.gitVersion=$K3S_VERSION"
    "-X k8s.io/client-go/pkg/version.gitTreeState=clean"
    "-X k8s.io/component-base/version.gitVersion=$K3S_VERSION"
    "-X k8s.io/component-base/version.gitTreeState=clean"
    "-X github.com/containerd/containerd/version.Version=$containerd_version"
    "-X github.com/containerd/containerd/version.Package=github.com/k3s-io/containerd"
  )
  echo "k3s: building $K3S_VERSION with $golang (several minutes; log: $K3S_CACHE/build.log)"
  (cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GONOSUMDB="github.com/k3s-io" CGO_ENABLED=1 \
    go build -tags "ctrd apparmor seccomp netcgo osusergo providerless urfave_cli_no_docs" \
    -ldflags "${ldflags[*]}" -o "$K3S_CACHE/k3s.tmp" ./cmd/server) >"$K3S_CACHE/build.log" 2>&1 || {
    tail -n 30 "$K3S_CACHE/build.log" >&2
    die "the k3s build failed (log: $K3S_CACHE/build.log)"
  }
  mkdir -p "$K3S_BIN"
  mv "$K3S_CACHE/k3s.tmp" "$K3S_BIN/k3s"
  rm -rf "$src"
}

k3s_containerd_template() { # $K3S_CACHE/config.toml.tmpl: k3s's own template, restrict_oom_score_adj always on
  local out="$K3S_CACHE/config.toml.tmpl" dir
  [[ -s "$out" ]] && return 0
  dir="$(go_module_dir "$K3S_MODULE@$K3S_VERSION")" || die "the Go module proxy did not give $K3S_MODULE@$K3S_VERSION"
  # This VM lacks CAP_SYS_RESOURCE: runc cannot set the pause container's oom_score_adj and
  # every sandbox fails ("can't get final child's PID from pipe: EOF"). k3s sets
  # restrict_oom_score_adj only in a user namespace; the template sets it always.
  "$VENV/bin/python" - "$dir/pkg/agent/templates/templates_linux.go" "$out" <<'PY'
import sys
source = open(sys.argv[1]).read()
template = source.split("ContainerdConfigTemplate = `", 1)[1].split("`", 1)[0]
userns = "{{- if .IsRunningInUserNS }}\n  disable_apparmor = true\n  restrict_oom_score_adj = true\n{{end}}"
assert userns in template, "k3s's containerd template changed: review the restrict_oom_score_adj edit"
template = template.replace(userns, "  restrict_oom_score_adj = true\n{{- if .IsRunningInUserNS }}\n  disable_apparmor = true\n{{end}}")
open(sys.argv[2], "w").write(template)
PY
}

k3s_images() { # the pause and CoreDNS images as tarballs in $K3S_CACHE/images (Docker needed once)
  local images="$K3S_CACHE/images" context
  mkdir -p "$images"
  if [[ ! -s "$images/pause.tar" ]]; then
    # The kubernetes module's pause.c (the k3s-io fork k3s builds against), static, FROM scratch.
    local k8s
    k8s="$(go_module_dir github.com/k3s-io/kubernetes@v1.32.0-k3s1)" || die "no kubernetes module for pause.c"
    context="$(mktemp -d)"
    gcc -Os -static -DVERSION=3.10 -o "$context/pause" "$k8s/build/pause/linux/pause.c" || die "gcc could not build pause"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$context/Dockerfile"
    docker build -q -t "$PAUSE_IMAGE" "$context" >/dev/null || die "could not build $PAUSE_IMAGE"
    docker save -o "$images/pause.tar.part" "$PAUSE_IMAGE" && mv "$images/pause.tar.part" "$images/pause.tar"
    rm -rf "$context"
    echo "images: built $PAUSE_IMAGE"
  fi
  if [[ ! -s "$images/coredns.tar" ]]; then
    local coredns
    coredns="$(go_module_dir "github.com/coredns/coredns@$COREDNS_VERSION")" || die "no CoreDNS module"
    context="$(mktemp -d)"
    (cd "$coredns" && GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$context/coredns" .) ||
      die "could not build CoreDNS $COREDNS_VERSION"
    cp /etc/ssl/certs/ca-certificates.crt "$context/"
    printf 'FROM scratch\nCOPY ca-certificates.crt /etc/ssl/certs/\nCOPY coredns /coredns\nEXPOSE 53 53/udp\nENTRYPOINT ["/coredns"]\n' >"$context/Dockerfile"
    docker build -q -t "$COREDNS_IMAGE" "$context" >/dev/null || die "could not build $COREDNS_IMAGE"
    docker save -o "$images/coredns.tar.part" "$COREDNS_IMAGE" && mv "$images/coredns.tar.part" "$images/coredns.tar"
    rm -rf "$context"
    echo "images: built CoreDNS $COREDNS_VERSION as $COREDNS_IMAGE"
  fi
}

# --- the machine's state: recorded before the cluster, restored and compared after ---------
# (net_state, net_restore, net_verify: deploy/host-state.sh, which deploy/k8s/e2e.sh sources)

# Paths k3s uses outside its data dir; the ones absent before the run are removed after it.
HOST_PATHS=(/run/k3s /run/flannel /etc/rancher /var/lib/rancher /var/lib/kubelet /var/lib/cni /run/netns)

# --- the cluster: started for the run, stopped by the PIDs it recorded ---------------------

k3s_start() { # run-dir: starts k3s with its data under run-dir; sets KUBECONFIG, K3S_PID
  local run=$1
  K3S_RUN="$run"
  local data="$run/data" links="$run/bin"
  mkdir -p "$data/agent/etc/containerd" "$data/agent/images" "$links" "$run/cni"
  cp "$K3S_CACHE/config.toml.tmpl" "$data/agent/etc/containerd/config.toml.tmpl"
  cp "$K3S_CACHE"/images/*.tar "$IMAGE_TARS"/*.tar "$data/agent/images/"
  # k3s execs `containerd` from PATH; kubectl, ctr and crictl are the same multi-call binary.
  local name
  for name in k3s containerd kubectl ctr crictl; do ln -sf "$K3S_BIN/k3s" "$links/$name"; done
  # The node's pod subnet, on Debian's CNI plugins (k3s's own flannel CNI plugin lives in its
  # bundled data, which a build of ./cmd/server lacks). host-local keeps its leases in the run.
  cat >"$run/cni.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "cbr0", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$run/cni", "ranges": [[{"subnet": "10.42.0.0/24"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
  export PATH="$links:/usr/lib/cni:$PATH"
  export KUBECONFIG="$run/kubeconfig.yaml"
  export CONTAINER_RUNTIME_ENDPOINT="unix:///run/k3s/containerd/containerd.sock"
  local policy=()
  [[ "${K3S_NETWORK_POLICY:-on}" == on ]] || policy=(--disable-network-policy)
  setsid k3s server --data-dir "$data" \
    --disable traefik,metrics-server,local-storage,servicelb --disable-helm-controller \
    --flannel-backend=host-gw --flannel-cni-conf "$run/cni.conflist" \
    --pause-image "$PAUSE_IMAGE" --write-kubeconfig "$KUBECONFIG" --write-kubeconfig-mode 600 \
    --kubelet-arg "root-dir=$run/kubelet" "${policy[@]}" \
    >"$run/k3s.log" 2>&1 </dev/null &
  K3S_PID=$!
  echo "$K3S_PID" >"$run/k3s.pid"
  local waited=0
  until [[ -s "$KUBECONFIG" ]] && kubectl get --raw /readyz >/dev/null 2>&1 &&
    kubectl get nodes 2>/dev/null | grep -q ' Ready '; do
    kill -0 "$K3S_PID" 2>/dev/null || {
      tail -n 30 "$run/k3s.log" >&2
      die "k3s exited while starting (log: $run/k3s.log)"
    }
    ((waited++ < 120)) || die "the k3s node was not Ready within 120 s (log: $run/k3s.log)"
    sleep 1
  done
  echo "k3s: node Ready after ${waited}s (PID $K3S_PID, data $data)"
}

k3s_ours() { # the PIDs of processes k3s left: shims on its containerd socket, and their children
  local pid
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    # A process may end between the glob and the read: no message for it.
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q -- "-address /run/k3s/containerd/containerd.sock" && echo "$pid"
  done
}

k3s_stop() { # stops the pods, k3s and the shims it left, each by PID
  [[ -n "${K3S_PID:-}" ]] || return 0
  local run=$K3S_RUN
  if kill -0 "$K3S_PID" 2>/dev/null; then
    # Pods first, through the runtime: their CNI teardown removes the veths and leases.
    crictl stopp $(crictl pods -q 2>/dev/null) >/dev/null 2>&1 || true
    crictl rmp -a -f >/dev/null 2>&1 || true
  fi
  local shims
  shims="$(k3s_ours | tr '\n' ' ')"
  echo "$shims" >"$run/shims.pid"
  if kill -0 "$K3S_PID" 2>/dev/null; then
    kill -TERM "$K3S_PID"
    local _
    for _ in $(seq 1 30); do
      kill -0 "$K3S_PID" 2>/dev/null || break
      sleep 1
    done
    kill -0 "$K3S_PID" 2>/dev/null && kill -KILL "$K3S_PID" 2>/dev/null
  fi
  # Shims (and any container process under them) outlive k3s; re-read in case one started late.
  shims="$shims $(k3s_ours | tr '\n' ' ')"
  local pid children
  for pid in $shims; do
    children="$(cat /proc/"$pid"/task/*/children 2>/dev/null || true)"
    # shellcheck disable=SC2086 # PID lists
    kill -KILL $pid $children 2>/dev/null || true
  done
  K3S_PID=""
  echo "k3s: stopped (PID $(cat "$run/k3s.pid"); shims ${shims:-none})"
}
