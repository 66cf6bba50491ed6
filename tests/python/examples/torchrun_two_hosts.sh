#!/usr/bin/env bash
# torchrun across two hosts on this machine: two network namespaces this script creates (and
# removes), joined by a veth pair with private addresses that exist only between them.
# `torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d` runs in each, the rendezvous at
# the first host's address, and starts SCRIPT there as a user's job would. The namespaces share
# the machine's host name, so torchrun is told which host serves the rendezvous (is_host) and
# each host's own address (--local-addr), where it would otherwise go by the host name.
#
#   sudo tests/python/examples/torchrun_two_hosts.sh TORCHRUN SCRIPT [ARGS...]
#
# Exits with the first non-zero status of the two nodes, or 0.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 TORCHRUN SCRIPT [ARGS...]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root (ip netns)" >&2; exit 2; }
torchrun="$1"; shift
tag="dtr$(($$ % 100000))"                   # this run's namespaces and links (15 characters at most)
subnet="10.233.$(($$ % 250))"               # between the two namespaces only
hosts=("${tag}a" "${tag}b")

cleanup() {
  for host in "${hosts[@]}"; do ip netns del "$host" 2>/dev/null || true; done
}
trap cleanup EXIT

ip netns add "${hosts[0]}"
ip netns add "${hosts[1]}"
ip link add "${tag}0" type veth peer name "${tag}1"
for i in 0 1; do
  ip link set "${tag}$i" netns "${hosts[$i]}"
  ip -n "${hosts[$i]}" addr add "$subnet.$((i + 1))/24" dev "${tag}$i"
  ip -n "${hosts[$i]}" link set "${tag}$i" up
  ip -n "${hosts[$i]}" link set lo up
done

pids=()
for i in 0 1; do
  ip netns exec "${hosts[$i]}" "$torchrun" --nnodes 2 --nproc-per-node 1 \
    --rdzv-backend c10d --rdzv-endpoint "$subnet.1:29400" --rdzv-id "$tag" \
    --rdzv-conf "is_host=$((i == 0))" --local-addr "$subnet.$((i + 1))" "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || { code=$?; [ "$status" -ne 0 ] || status=$code; }
done
exit "$status"
