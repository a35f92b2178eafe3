#!/usr/bin/env bash
# Regenerates the scale model's results: fit, validation, cluster tables, tuning files,
# the tree-arity study, the bytes between hosts and the plots.
# Usage: perf/sim/run.sh [BUILD_DIR] [--measure]
#   --measure: first re-measure shm on this host (measure.sh, ~3 min) -- the rxe data
#   needs the guest: flock /tmp/rxe.lock ci/rxe.sh --rw DIR -- perf/sim/rxe_measure.sh ...
# Outputs in perf/sim/ (model-*.txt, validation.md, results/) and perf/figures/sim-*.png.
# About 16 minutes of CPU (16.5 of wall clock beside a CI run). What it samples to stay
# there: sizes every factor of 4 (8 B .. 8 MiB) and p in powers of two to 1024 for every
# algorithm; p = 4096 for all but the ring (algorithms/schedule.c builds a ring in O(p^2) per
# rank: ~9 min at 4096 alone) at every factor of 16 (8 B .. 8 MiB: those rows take
# 30-90 s each); the 1000-host arity study at 8 B .. 4 MiB, every factor of 8; the bytes
# between hosts at 16 MiB.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
sim=$build/zcoll_sim
res=$here/results
mkdir -p "$res"
if [[ "${2:-}" == --measure ]]; then
  "$here/measure.sh" "$build" "$here/data/shm-host.txt" 5
  "$here/measure.sh" "$build" "$here/data/onehost-host.txt" 30 onehost
fi
/usr/bin/python3 "$here/fit.py" "$sim" "$here/data/shm-host.txt" "$here/data/rxe-guest.txt" \
  "$here" | tee "$res/fit.txt"
# The mailboxes' terms on top of the host's (fit.py rewrote model-host.txt without them).
/usr/bin/python3 "$here/fit_onehost.py" "$sim" "$here/model-host.txt" \
  "$here/data/onehost-host.txt" --write >"$here/validation_onehost.txt"
# The cluster keeps the host's CPU costs and cache terms (l2, llc, mem, c2c) but not its
# oversubscription (one core per rank, share 1).
cluster=(-m "$here/model-host.txt" -s cores=0 -s share=1)
rxe=("${cluster[@]}" -m "$here/model-rxe.txt")
ib=("${cluster[@]}" -m "$here/model-ib-whatif.txt")
plist="2 4 8 16 32 64 128 256 512 1024"
for net in rxe ib; do
  declare -n m=$net
  # 8 ranks per host (intra-host pairs over shm), verbs' 256 KiB pieces.
  "$sim" "${m[@]}" -k 8 -c 256K -p "$plist" -b 8 -e 8M -f 4 -o "$res/tuning-$net.txt" table \
    >"$res/table-$net.txt"
  "$sim" "${m[@]}" -k 8 -c 256K -p 4096 -A "butterfly rhd tree hier" -b 8 -e 8M -f 16 table \
    >"$res/table-$net-4096.txt"
  # The seed question: one rank on each of 1000 hosts, tree arity 2..16.
  "$sim" "${m[@]}" -k 1 -c 256K -p 1000 -b 8 -e 4M -f 8 arity >"$res/arity-$net.txt"
done
# What crosses hosts (from the schedules: no network terms), 8 ranks per host.
"$sim" -k 8 -p "8 16 32 64 128 256 512 1024" -e 16M traffic >"$res/traffic-k8.txt"
"$sim" -k 8 -p 4096 -A "butterfly rhd tree hier" -e 16M traffic >"$res/traffic-k8-4096.txt"
/usr/bin/python3 "$here/plot.py" "$res" "$here/../figures" || echo "plots skipped (matplotlib?)"
