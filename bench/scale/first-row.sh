#!/usr/bin/env bash
# The first row of issue 42's table, on the private control plane of scripts/scale-sandbox (KWOK nodes, no agent
# yet): a Deployment of PODS pods (10 a fake node) created at once, how long until all are Ready, and what that
# cost the control plane: kube-apiserver's requests by verb and resource (its apiserver_request_total, before and
# after), and the CPU and RSS of etcd, kube-apiserver, the controller-manager, the scheduler and kwok (from /proc).
# Then the same figures over a window at rest (the nodes' heartbeats alone).
#
#   eval "$(scripts/scale-sandbox env)"; bench/scale/first-row.sh PODS [REST_SECONDS]
#
# The only requests of its own during the timed part: one GET of the Deployment a second (listed as
# `GET deployments` in the table). Each pod asks for 3 CPUs of a fake node's 32, so the scheduler places exactly
# 10 a node when PODS is 10 x the node count.
set -euo pipefail
export LC_ALL=C

PODS=${1:?usage: $0 PODS [REST_SECONDS]}
REST=${2:-60}
: "${INPLACE_SCALE_DIR:?run: eval \"\$(scripts/scale-sandbox env)\"}"
HERE=$(cd "$(dirname "$0")" && pwd)
KBIN=$("$HERE/../../scripts/build-deps" path kubernetes)
OUT=${INPLACE_SCALE_OUT:-$INPLACE_SCALE_DIR/first-row-$PODS}
mkdir -p "$OUT"
TCK=$(getconf CLK_TCK)
NAME=scale-$PODS
kc() { "$KBIN/kubectl" --kubeconfig "$INPLACE_SCALE_DIR/kubeconfig" "$@"; }
now_ms() { date +%s%3N; }

declare -A PIDS=(
  [etcd]=$INPLACE_SCALE_ETCD_PID [apiserver]=$INPLACE_SCALE_APISERVER_PID
  [controller-manager]=$INPLACE_SCALE_CONTROLLER_MANAGER_PID [scheduler]=$INPLACE_SCALE_SCHEDULER_PID
  [kwok]=$INPLACE_SCALE_KWOK_PID
)
COMPONENTS=(etcd apiserver controller-manager scheduler kwok)

# cpu_ticks PID: user + system CPU of the process so far, in clock ticks (fields 14 and 15 of /proc/PID/stat)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# rss_kib PID FIELD: VmRSS or VmHWM (the peak) in KiB
rss_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# snapshot FILE: apiserver_request_total as "verb resource[/subresource] count" lines
snapshot() {
  kc get --raw /metrics | awk '
    /^apiserver_request_total\{/ {
      verb = ""; res = ""; sub_ = ""
      if (match($0, /verb="[^"]*"/)) verb = substr($0, RSTART + 6, RLENGTH - 7)
      if (match($0, /resource="[^"]*"/)) res = substr($0, RSTART + 10, RLENGTH - 11)
      if (match($0, /subresource="[^"]*"/)) sub_ = substr($0, RSTART + 13, RLENGTH - 14)
      if (res == "") next
      key = verb " " res (sub_ == "" ? "" : "/" sub_)
      n[key] += $NF
    }
    END { for (k in n) print k, n[k] }' | sort >"$1"
}

# cpu_all FILE: "component ticks" lines
cpu_all() { local c; for c in "${COMPONENTS[@]}"; do echo "$c $(cpu_ticks "${PIDS[$c]}")"; done >"$1"; }

# report LABEL SECONDS FROM TO: request deltas and CPU over an interval
report() {
  local label=$1 secs=$2 from=$3 to=$4
  echo "### $label ($secs s)"
  echo
  echo "| component | CPU s | CPU % of one core | RSS MiB at end | peak RSS MiB |"
  echo "|---|---|---|---|---|"
  local c a b
  for c in "${COMPONENTS[@]}"; do
    a=$(awk -v c="$c" '$1 == c { print $2 }' "$from.cpu")
    b=$(awk -v c="$c" '$1 == c { print $2 }' "$to.cpu")
    awk -v c="$c" -v d=$((b - a)) -v t="$TCK" -v s="$secs" -v r="$(rss_kib "${PIDS[$c]}" VmRSS)" -v h="$(rss_kib "${PIDS[$c]}" VmHWM)" \
      'BEGIN { printf "| %s | %.1f | %.0f | %.0f | %.0f |\n", c, d / t, 100 * d / t / s, r / 1024, h / 1024 }'
  done
  echo
  echo "| verb | resource | requests | per pod |"
  echo "|---|---|---|---|"
  join -a 2 -e 0 -o 0,1.2,2.2 <(awk '{ print $1 "|" $2, $3 }' "$from.req" | sort) <(awk '{ print $1 "|" $2, $3 }' "$to.req" | sort) |
    awk -v p="$PODS" '{ d = $3 - $2; if (d > 0) { split($1, k, "|"); printf "%s %s %d %.2f\n", k[1], k[2], d, d / p } }' |
    sort -k3,3nr | awk '{ printf "| %s | %s | %d | %s |\n", $1, $2, $3, $4 }'
  join -a 2 -e 0 -o 0,1.2,2.2 <(awk '{ print $1 "|" $2, $3 }' "$from.req" | sort) <(awk '{ print $1 "|" $2, $3 }' "$to.req" | sort) |
    awk -v p="$PODS" '{ d = $3 - $2; split($1, k, "|"); v = k[1]
      if (v == "GET" || v == "LIST" || v == "WATCH") r += d; else w += d }
      END { printf "| reads (GET, LIST, WATCH) | all | %d | %.2f |\n| writes | all | %d | %.2f |\n", r, r / p, w, w / p }'
  echo
}

nodes=$(kc get nodes --no-headers | awk '$2 == "Ready"' | wc -l)
echo "## $PODS pods on $nodes Ready fake nodes ($(date -u +%FT%TZ), kwok $("$("$HERE/../../scripts/build-deps" path kwok)/kwok" --version 2>/dev/null | head -n1))"
echo

snapshot "$OUT/t0.req"; cpu_all "$OUT/t0.cpu"; t0=$(now_ms)
kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: { name: $NAME, namespace: default }
spec:
  replicas: $PODS
  selector: { matchLabels: { app: $NAME } }
  template:
    metadata: { labels: { app: $NAME } }
    spec:
      nodeSelector: { type: kwok }
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        resources: { requests: { cpu: "3" } }
EOF
ready=0
while :; do
  ready=$(kc -n default get deploy "$NAME" -o jsonpath='{.status.readyReplicas}')
  [[ ${ready:-0} -ge $PODS ]] && break
  (($(now_ms) - t0 < 900000)) || { echo "timed out: $ready of $PODS Ready" >&2; exit 1; }
  sleep 1
done
t1=$(now_ms)
snapshot "$OUT/t1.req"; cpu_all "$OUT/t1.cpu"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
running=$(kc -n default get pods -l "app=$NAME" --field-selector status.phase=Running --no-headers | wc -l)
spread=$(kc -n default get pods -l "app=$NAME" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c | awk '{ print $1 }' | sort -n | uniq -c | awk '{ printf "%s nodes with %s; ", $1, $2 }')
echo "All $PODS Ready in **$secs s** (Deployment created to readyReplicas = $PODS); Running: $running; pods a node: $spread"
echo
report "Deployment of $PODS created until all Ready" "$secs" "$OUT/t0" "$OUT/t1"

sleep "$REST"
snapshot "$OUT/t2.req"; cpu_all "$OUT/t2.cpu"
report "at rest afterwards, $nodes nodes and $PODS pods" "$REST" "$OUT/t1" "$OUT/t2"
