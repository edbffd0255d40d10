#!/usr/bin/env bash
# A Docker engine for the compose run: `engine.sh start` makes sure one answers, `engine.sh stop`
# stops the one it started (and only that one, by the PID it recorded).
#
#   start: prints STARTED=0 or STARTED=1 on stdout (the caller stops only an engine it started).
#          When `docker info` already answers, that engine is used and never stopped. Otherwise,
#          as root with apt-get, Debian's docker.io is installed when dockerd is missing, and
#          dockerd is started with its defaults (overlay2, bridge networking; it runs its own
#          containerd); its PID goes to .cache/docker-engine/dockerd.pid, its log beside it.
#   stop:  SIGTERM to that PID (dockerd stops its containerd), SIGKILL after 30 s; no-op when
#          this script started nothing. Then what dockerd left on the machine (the docker0
#          bridge, its routes, iptables chains and netfilter tables) is undone from the state
#          recorded before it started, and checked: the stop fails if the machine differs.
#          Images and the build cache (/var/lib/docker) stay, for the next run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=deploy/host-state.sh
source "$ROOT/deploy/host-state.sh"
STATE="${PETSTORE_CACHE_DIR:-$ROOT/.cache}/docker-engine"
BEFORE="$STATE/host-before"
PIDFILE="$STATE/dockerd.pid"
LOG="$STATE/dockerd.log"
START_TIMEOUT=60

say() { printf 'engine: %s\n' "$*" >&2; }
die() {
  say "FAILED: $*"
  exit 1
}

engine_answers() { timeout 20 docker info >/dev/null 2>&1; }

start() {
  command -v docker >/dev/null || install_engine
  if engine_answers; then
    say "using the Docker engine that already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null)); it is left running"
    echo STARTED=0
    return 0
  fi
  if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    die "dockerd $(cat "$PIDFILE") from an earlier run is running but does not answer (see $LOG)"
  fi
  command -v dockerd >/dev/null || install_engine
  mkdir -p "$STATE"
  rm -rf "$BEFORE"
  net_state "$BEFORE"
  say "no Docker engine answers: starting dockerd (log: $LOG)"
  # setsid: the engine is not part of the caller's process group, so a Ctrl-C of the run
  # reaches the tests, and the trap that calls `engine.sh stop` stops dockerd in order.
  setsid dockerd >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  local waited=0
  until engine_answers; do
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || {
      tail -n 20 "$LOG" >&2
      rm -f "$PIDFILE"
      die "dockerd exited while starting"
    }
    ((waited++ < START_TIMEOUT)) || {
      stop
      die "dockerd did not answer within ${START_TIMEOUT}s"
    }
    sleep 1
  done
  say "dockerd $(docker version --format '{{.Server.Version}}') answers (PID $(cat "$PIDFILE"), started by this run)"
  echo STARTED=1
}

install_engine() {
  [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null ||
    die "no Docker engine answers and it cannot be installed here (needs root and apt-get): install Docker, or run as root on Debian/Ubuntu"
  say "installing Debian's docker.io (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # nftables: to list and remove the netfilter tables dockerd adds (iptables here is iptables-nft).
  apt-get install -y -qq --no-install-recommends docker.io nftables >/dev/null
}

stop() {
  [[ -f "$PIDFILE" ]] || return 0
  local pid
  pid="$(cat "$PIDFILE")"
  # Only our dockerd: a stale file's PID may belong to another process by now.
  if kill -0 "$pid" 2>/dev/null && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]]; then
    say "stopping dockerd (PID $pid, started by this run)"
    kill -TERM "$pid"
    for _ in $(seq 1 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "dockerd $pid still runs after 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
    fi
  fi
  rm -f "$PIDFILE"
  [[ -d "$BEFORE" ]] || return 0
  net_restore "$BEFORE"
  if net_verify "$BEFORE"; then
    say "machine state: links, routes, iptables, netfilter tables and mounts as before dockerd"
    rm -rf "$BEFORE"
  else
    die "dockerd left the machine changed (above); the state before it is in $BEFORE"
  fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
