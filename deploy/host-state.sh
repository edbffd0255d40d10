# Sourced by the runs that change this machine's network state (deploy/compose/engine.sh for
# dockerd, deploy/k8s/e2e.sh for k3s): net_state records it before the run, net_restore undoes
# what the run added (links, routes, firewall rules, netfilter tables, ipsets, mounts, and the
# caller's HOST_PATHS that were absent before), net_verify fails, naming them, if anything the
# run added is still there. Needs root; iptables here may be iptables-nft.

# Paths the caller's run may create outside its own directories (set before calling).
HOST_PATHS=(${HOST_PATHS[@]+"${HOST_PATHS[@]}"})

net_state() { # dir: a snapshot of links, routes, firewall rules, ipsets and mounts
  local dir=$1
  mkdir -p "$dir"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort >"$dir/links"
  # A part may be empty (grep then fails): each is a record, not a check.
  { ip route show table all | grep -v '^local \|^broadcast \|^multicast ' | sort || true; } >"$dir/routes"
  # Counters change by themselves: compare rules only.
  { iptables-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' || true; } >"$dir/iptables"
  { ip6tables-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' || true; } >"$dir/ip6tables"
  { iptables-legacy-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' || true; } >"$dir/iptables-legacy"
  ipset list -n 2>/dev/null | sort >"$dir/ipsets" || true
  nft list tables 2>/dev/null | sort >"$dir/nft-tables" || true
  awk '{print $5}' /proc/self/mountinfo | sort >"$dir/mounts"
  local path
  for path in "${HOST_PATHS[@]}"; do
    [[ -e "$path" ]] && echo "$path"
  done >"$dir/paths"
  # The full rule sets, to restore from.
  iptables-save >"$dir/iptables.full" 2>/dev/null || true
  ip6tables-save >"$dir/ip6tables.full" 2>/dev/null || true
}

net_restore() { # before-dir: undo what the run left (links, routes, rules, ipsets, mounts, paths)
  local before=$1 now
  now="$(mktemp -d)"
  net_state "$now"
  # Mounts first (pods' volumes, netns, the containerd snapshots), deepest first.
  local mount
  comm -13 "$before/mounts" "$now/mounts" | sort -r | while read -r mount; do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || echo "cannot unmount $mount" >&2
  done
  local link
  comm -13 "$before/links" "$now/links" | while read -r link; do
    ip link delete "$link" 2>/dev/null || true
  done
  local route
  comm -13 "$before/routes" "$now/routes" | while read -r route; do
    # shellcheck disable=SC2086 # a route is words
    ip route del $route 2>/dev/null || true
  done
  # Tables the run added go whole (iptables-restore only rewrites the tables it is given).
  local table
  comm -13 "$before/nft-tables" "$now/nft-tables" | while read -r table; do
    # shellcheck disable=SC2086 # "table <family> <name>"
    nft delete $table 2>/dev/null || true
  done
  if ! cmp -s "$before/iptables" "$now/iptables"; then
    iptables-restore <"$before/iptables.full"
  fi
  if ! cmp -s "$before/ip6tables" "$now/ip6tables"; then
    ip6tables-restore <"$before/ip6tables.full"
  fi
  local set
  comm -13 "$before/ipsets" "$now/ipsets" | while read -r set; do
    ipset destroy "$set" 2>/dev/null || true
  done
  local path
  for path in "${HOST_PATHS[@]}"; do
    [[ -e "$path" ]] && ! grep -qx "$path" "$before/paths" && rm -rf "$path"
  done
  rm -rf "$now"
}

net_verify() { # before-dir: fails, naming them, if the run left anything it added
  # Only what the run could have added counts: a mount, link, route, rule, set or path present
  # now and not before. What disappeared meanwhile (another program on the machine unmounting
  # its tmpfs, say) is named as a note: this run removes nothing it did not add.
  local before=$1 now status=0 part added gone
  now="$(mktemp -d)"
  net_state "$now"
  for part in links routes iptables ip6tables iptables-legacy ipsets nft-tables mounts paths; do
    added="$(comm -13 <(sort "$before/$part") <(sort "$now/$part"))"
    gone="$(comm -23 <(sort "$before/$part") <(sort "$now/$part"))"
    if [[ -n "$added" ]]; then
      echo "the run left these $part behind:" >&2
      echo "$added" | sed 's/^/  + /' >&2
      status=1
    fi
    if [[ -n "$gone" ]]; then
      echo "note: these $part were there before the run and are gone, not by this run's undoing:" >&2
      echo "$gone" | sed 's/^/  - /' >&2
    fi
  done
  rm -rf "$now"
  return "$status"
}
