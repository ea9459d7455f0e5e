# shellcheck shell=bash
# Extra nodes of scripts/kube-sandbox (sourced by it; uses its settings and helpers). Node 1 is the cluster's
# first kubelet, on the sandbox in $DIR. Node n (2..9) is one more kubelet on this machine, joined to the same
# API server, with:
#   - its own containerd: scripts/sandbox in the node role (containerd only, no registry or dockerd) in
#     $DIR/nodes/NAME, pulling through the cluster's registry; containerd 2.x on even n, 1.6 on odd n;
#   - its own CNI bridge and pod subnet (bridge inplkube<n>, 10.88.(100+n).0/24 by default), hairpin on, the node's
#     address the subnet's first one, on that bridge;
#   - its own kubelet (files in $K/nodes/NAME): root dir, pod logs, ports BASE+10n+3 / +4, cgroupRoot /node-<n>,
#     a client certificate from the cluster's CA (the API server needs no restart to admit it).
# Every node's CRI socket is also at $DIR/nodes/NAME/containerd.sock (node 1's is a link to $DIR/containerd.sock),
# so one path with the node's name in it reaches the right runtime from any node (the agent DaemonSet uses that).
# kube-proxy stays one for the machine. Adding nodes never restarts node 1 or the control plane.

NODES_DIR=$DIR/nodes
NODES_LIST=$K/nodes.list
MAX_NODES=9
NODE_NET_BASE=${INPLACE_KUBE_NODE_NET_BASE:-10.88.100.0}
[[ $NODE_NET_BASE =~ ^[0-9]+\.[0-9]+\.[0-9]+\.0$ ]] || die "bad INPLACE_KUBE_NODE_NET_BASE '$NODE_NET_BASE' (a.b.c.0)"

node_name() { echo "$NODE-$1"; }
node_subnet() { echo "$(int2ip $(($(ip2int "$NODE_NET_BASE") + $1 * 256)))/24"; }
node_ip() { local s; s=$(node_subnet "$1"); int2ip $(($(ip2int "${s%/*}") + 1)); }
node_bridge() { if [[ $BRIDGE == *0 ]]; then echo "${BRIDGE%0}$1"; else echo "${BRIDGE:0:12}-$1"; fi; }
node_containerd() { if (($1 % 2 == 0)); then echo 2; else echo 1; fi; }
node_kubelet_port() { echo $((BASE + 10 * $1 + 3)); }
node_healthz_port() { echo $((BASE + 10 * $1 + 4)); }
node_rundir() { echo "$NODES_DIR/$(node_name "$1")"; }
node_kubedir() { echo "$K/nodes/$(node_name "$1")"; }
node_kubelet_pids() { pids_of kubelet "$(node_kubedir "$1")/kubelet.yaml"; }
node_kubelet_ok() {
  [[ $(curl -sf --max-time 2 "http://127.0.0.1:$(node_healthz_port "$1")/healthz" 2>/dev/null) == ok ]]
}
node_ready_named() {
  api "/api/v1/nodes/$1" | jq -e '.status.conditions[]? | select(.type == "Ready" and .status == "True")' \
    >/dev/null 2>&1
}

# node_sandbox N CMD: scripts/sandbox CMD on node N's runtime
node_sandbox() {
  local n=$1; shift
  INPLACE_SANDBOX_DIR=$(node_rundir "$n") INPLACE_SANDBOX_ROLE=node INPLACE_SANDBOX_CONTAINERD=$(node_containerd "$n") \
    INPLACE_SANDBOX_REGISTRY_PORT=$PORT INPLACE_SANDBOX_BRIDGE=$(node_bridge "$n") \
    INPLACE_SANDBOX_SUBNET=$(node_subnet "$n") "$SANDBOX" "$@"
}

# the node numbers (2..) that have files on this machine, running or not
known_extra_nodes() {
  local d n
  for d in "$NODES_DIR"/"$NODE"-* "$K/nodes/$NODE"-*; do
    [[ -d $d ]] || continue
    n=${d##*/"$NODE"-}
    if [[ $n =~ ^[2-9]$ ]]; then echo "$n"; fi
  done | sort -u
  return 0
}

# the v1 cgroup hierarchies (or the v2 root) below which node N's kubelet puts its pods: cgroupRoot /node-N
cgroup_hierarchies() {
  local h
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then echo /sys/fs/cgroup; return 0; fi
  for h in /sys/fs/cgroup/*; do
    [[ -d $h && ! -L $h && ${h##*/} != unified ]] && echo "$h"
  done
  return 0
}
node_cgroups_make() { # the kubelet refuses to start until its cgroupRoot exists in every hierarchy
  local n=$1 h f
  while read -r h; do
    mkdir -p "$h/node-$n"
    if [[ -f $h/cpuset.cpus ]]; then
      for f in cpuset.cpus cpuset.mems; do
        [[ -n $(cat "$h/node-$n/$f") ]] || cat "$h/$f" >"$h/node-$n/$f"
      done
    fi
  done < <(cgroup_hierarchies)
}
node_cgroups_remove() { # deepest first; a cgroup with live processes stays (and is reported)
  local n=$1 h
  # the kubelet mirrors its pod cgroups into the unified hierarchy of a hybrid host as well
  while read -r h; do
    [[ -d $h/node-$n ]] || continue
    find "$h/node-$n" -depth -type d -exec rmdir {} + 2>/dev/null ||
      echo "kube-sandbox: warning: $h/node-$n still has processes; left in place" >&2
  done < <(cgroup_hierarchies; [[ -d /sys/fs/cgroup/unified ]] && echo /sys/fs/cgroup/unified)
}

# a client certificate for system:node:NAME in group system:nodes, signed by the cluster's CA
node_credentials() {
  local n=$1 kd name
  kd=$(node_kubedir "$n") name=$(node_name "$n")
  if ! openssl verify -CAfile "$PKI/ca.crt" "$kd/node.crt" >/dev/null 2>&1 ||
    [[ $(openssl x509 -in "$kd/node.crt" -noout -subject 2>/dev/null) != *"system:node:$name"* ]]; then
    (
      cd "$kd"
      openssl genrsa -out node.key 2048
      openssl req -new -key node.key -subj "/O=system:nodes/CN=system:node:$name" -out node.csr
      printf 'basicConstraints = CA:FALSE\nkeyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = clientAuth\n' >node.ext
      openssl x509 -req -in node.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
        -out node.crt -days 3650 -extfile node.ext
      rm -f node.csr node.ext
      chmod 600 node.key
    ) >"$kd/pki.log" 2>&1 || { log_tail "$kd/pki.log"; die "openssl failed for node $name"; }
  fi
  cat >"$kd/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: inplace
    cluster:
      server: $SERVER
      certificate-authority: $PKI/ca.crt
users:
  - name: system:node:$name
    user:
      client-certificate: $kd/node.crt
      client-key: $kd/node.key
contexts:
  - name: inplace
    context: { cluster: inplace, user: "system:node:$name" }
current-context: inplace
EOF
  chmod 600 "$kd/kubelet.kubeconfig"
}

# node N's kubelet configuration: node 1's, with this node's runtime, address, ports, directories and cgroupRoot
node_kubelet_config() {
  local n=$1 kd nd out
  kd=$(node_kubedir "$n") nd=$(node_rundir "$n") out=$(node_kubedir "$n")/kubelet.yaml
  sed -e "s|^containerRuntimeEndpoint: .*|containerRuntimeEndpoint: unix://$nd/containerd.sock|" \
    -e "s|^address: .*|address: $(node_ip "$n")|" \
    -e "s|^port: .*|port: $(node_kubelet_port "$n")|" \
    -e "s|^healthzPort: .*|healthzPort: $(node_healthz_port "$n")|" \
    -e "s|^volumePluginDir: .*|volumePluginDir: $kd/volume-plugins|" \
    -e "s|^podLogsDir: .*|podLogsDir: $kd/pod-logs|" \
    "$K/kubelet.yaml" >"$out.tmp"
  echo "cgroupRoot: /node-$n" >>"$out.tmp"
  local want
  for want in "unix://$nd/containerd.sock" "address: $(node_ip "$n")" "port: $(node_kubelet_port "$n")" \
    "healthzPort: $(node_healthz_port "$n")" "$kd/volume-plugins" "$kd/pod-logs"; do
    grep -qF "$want" "$out.tmp" || die "could not derive node $n's kubelet.yaml from $K/kubelet.yaml ($want)"
  done
  mv -f "$out.tmp" "$out"
}

node_bridge_up() { # the node's address on its pod bridge, before the kubelet (--node-ip) and CNI need it
  local n=$1 br ip
  br=$(node_bridge "$n") ip=$(node_ip "$n")
  ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge
  pin_bridge_mac "$br" "$ip"
  ip -o -4 addr show dev "$br" | grep -q " $ip/" || ip addr add "$ip/24" dev "$br"
  ip link set "$br" up
}

# pin_bridge_mac BRIDGE IP: gives the bridge a MAC of its own. A bridge whose MAC was never set takes the lowest
# MAC of its ports, so it changes whenever a pod's veth comes or goes. A pod that learned the gateway's MAC
# while it was another pod's veth then sends its replies to the host into nothing once that pod is deleted,
# until its ARP entry is probed again (seconds): every pod created or deleted on a node could break the others'
# traffic through Services (bench:rollout's stock rows timed out that way). Idempotent: a bridge already pinned
# is left alone; one in use keeps the MAC it has now (the pods' caches stay right); a new one gets
# 02:42 and the address's four octets.
pin_bridge_mac() {
  local br=$1 ip=$2 mac
  [[ $(cat "/sys/class/net/$br/addr_assign_type" 2>/dev/null) == 3 ]] && return 0
  mac=$(cat "/sys/class/net/$br/address")
  if [[ -z $(ls "/sys/class/net/$br/brif" 2>/dev/null) || $mac == 00:00:00:00:00:00 ]]; then
    local IFS=.
    # shellcheck disable=SC2086
    mac=$(printf '02:42:%02x:%02x:%02x:%02x' $ip)
  fi
  ip link set dev "$br" address "$mac"
}

# node_start N: its runtime, configuration and kubelet (not waited for); keeps a healthy kubelet of the same config
node_start() {
  local n=$1 name kd nd key pids pid
  name=$(node_name "$n") kd=$(node_kubedir "$n") nd=$(node_rundir "$n")
  say "node $name: containerd $(node_containerd "$n").x, bridge $(node_bridge "$n") ($(node_subnet "$n")), kubelet :$(node_kubelet_port "$n")"
  mkdir -p "$kd/kubelet" "$kd/pod-logs" "$kd/volume-plugins" "$NODES_DIR"
  node_sandbox "$n" up 8>&- | sed 's/^/    /'
  ((PIPESTATUS[0] == 0)) || die "scripts/sandbox up for node $name failed"
  node_bridge_up "$n"
  node_cgroups_make "$n"
  node_credentials "$n"
  node_kubelet_config "$n"
  key=$(cat "$kd/kubelet.yaml" "$kd/kubelet.kubeconfig" <(echo "$BIN") | sha256sum | cut -d' ' -f1)
  mapfile -t pids < <(node_kubelet_pids "$n")
  if ((${#pids[@]})) && node_kubelet_ok "$n" && [[ $(cat "$kd/config.sha256" 2>/dev/null) == "$key" ]]; then
    say "node $name: kubelet already running (pid ${pids[*]})"
    rm -f "$kd/kubelet.started"
    return 0
  fi
  ((${#pids[@]})) && stop_pids 15 "${pids[@]}"
  port_busy 127.0.0.1 "$(node_healthz_port "$n")" && die "port $(node_healthz_port "$n") is in use by another process"
  pid=$(start_detached "$kd/kubelet.log" "$BIN/kubelet" --config "$kd/kubelet.yaml" \
    --kubeconfig "$kd/kubelet.kubeconfig" --hostname-override "$name" --node-ip "$(node_ip "$n")" \
    --root-dir "$kd/kubelet")
  echo "$pid" >"$kd/kubelet.pid"
  echo "$key" >"$kd/config.sha256"
  echo "${EPOCHREALTIME/,/.}" >"$kd/kubelet.started"
}

# node_wait N: until its kubelet answers and its Node is Ready
node_wait() {
  local n=$1 name kd i t0
  name=$(node_name "$n") kd=$(node_kubedir "$n")
  t0=$(cat "$kd/kubelet.started" 2>/dev/null || true)
  for ((i = 0; i < TIMEOUT * 10; i++)); do
    if node_kubelet_ok "$n" && node_ready_named "$name"; then
      if [[ -n $t0 ]]; then say "node $name Ready ($(elapsed "$t0") s after its kubelet started)"; else say "node $name Ready"; fi
      return 0
    fi
    alive "$(cat "$kd/kubelet.pid" 2>/dev/null || echo 0)" || { log_tail "$kd/kubelet.log"; die "node $name's kubelet exited"; }
    sleep 0.1
  done
  log_tail "$kd/kubelet.log"
  die "node $name not Ready within ${TIMEOUT}s"
}

# node_stop N: its kubelet, runtime (containers, mounts, bridge), pod volumes and cgroups
node_stop() {
  local n=$1 quiet=${2:-} name kd nd pids mp left p
  name=$(node_name "$n") kd=$(node_kubedir "$n") nd=$(node_rundir "$n")
  mapfile -t pids < <(node_kubelet_pids "$n")
  [[ -z $quiet ]] && ((${#pids[@]})) && say "stopping node $name's kubelet (${pids[*]})"
  stop_pids 15 "${pids[@]}"
  if [[ -f $nd/sandbox.conf ]]; then
    mkdir -p "$kd"
    node_sandbox "$n" down >"$kd/sandbox-down.log" 2>&1 || { log_tail "$kd/sandbox-down.log"; die "scripts/sandbox down for node $name failed"; }
  fi
  # the kubelet's pod volumes (projected tokens, emptyDirs) below its root dir, deepest first
  for ((p = 0; p < 5; p++)); do
    mapfile -t left < <(awk -v d="$kd/" '{ mp = $5; gsub(/\\040/, " ", mp); if (index(mp, d) == 1) print mp }' \
      /proc/self/mountinfo | sort -r -u)
    ((${#left[@]})) || break
    for mp in "${left[@]}"; do umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true; done
  done
  node_cgroups_remove "$n"
  # the kubelet links every container's log into /var/log/containers
  for p in /var/log/containers/*; do
    if [[ -L $p && $(readlink "$p") == "$kd"/* ]]; then rm -f "$p"; fi
  done
  rm -rf --one-file-system "$kd/kubelet" "$kd/pod-logs" "$kd/volume-plugins"
  rm -f "$kd/kubelet.pid" "$kd/config.sha256"
}

# nodes_up N: nodes 2..N started (those running kept as they are), then all waited for; node 1 is untouched
nodes_up() {
  local want=$1 n t0=${EPOCHREALTIME/,/.}
  ln -sfn ../../containerd.sock "$(mkdir -p "$NODES_DIR/$NODE" && echo "$NODES_DIR/$NODE")/containerd.sock"
  ((want >= 2)) || { nodes_list_write; return 0; }
  for ((n = 2; n <= want; n++)); do node_start "$n"; done
  for ((n = 2; n <= want; n++)); do node_wait "$n"; done
  nodes_list_write
  say "nodes 2..$want up ($(elapsed "$t0") s)"
}

nodes_list_write() { # node 1, then every extra node whose kubelet runs
  local n
  {
    echo "$NODE"
    for n in $(known_extra_nodes); do
      if [[ -n $(node_kubelet_pids "$n") ]]; then node_name "$n"; fi
    done
  } >"$NODES_LIST"
}

nodes_stop_all() {
  local n quiet=${1:-}
  for n in $(known_extra_nodes); do node_stop "$n" "$quiet"; done
  rm -f "$NODES_LIST"
}

nodes_status() { # status lines for every extra node; returns 3 when one is not up
  local n name rc=0 pids
  for n in $(known_extra_nodes); do
    name=$(node_name "$n")
    pids=$(node_kubelet_pids "$n" | tr '\n' ' ')
    if [[ -z $pids ]]; then
      printf '  %-24s %s\n' "kubelet $name" "not running"; rc=3
    elif node_kubelet_ok "$n"; then
      printf '  %-24s %s\n' "kubelet $name" "up    pid $pids :$(node_kubelet_port "$n")"
    else
      printf '  %-24s %s\n' "kubelet $name" "NOT ANSWERING  pid $pids"; rc=3
    fi
    if node_ready_named "$name"; then printf '  %-24s %s\n' "node $name" "Ready ($(node_ip "$n"))"; else printf '  %-24s %s\n' "node $name" "not Ready"; rc=3; fi
    [[ -f $(node_rundir "$n")/sandbox.conf ]] && { node_sandbox "$n" status | sed 's/^/    /' || rc=3; }
  done
  return $rc
}
