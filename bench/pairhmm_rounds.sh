#!/bin/bash
# Same-call comparison of duet pairhmm runs (issue 7): every run of RUNS in each of ROUNDS
# rounds, in order, so that a noisy machine affects them alike. A run is
# "NAME|BINARY|OPTIONS" (BINARY: a duet executable). Prints per run duet's GCUPS of the
# scheduled work (/run cells_per_second) and the GPU's share of cells; per round, when
# runs named cpu, gpu and hybrid are given, the issue's hybrid efficiency:
# hybrid / (cpu + gpu) in GCUPS; then compares every run's /results with the first run's
# (bench/compare_results.py). Needs python3 with h5py.
#
#   bash bench/pairhmm_rounds.sh x1024.in 3 "cpu|build/duet|--no-gpu" \
#        "gpu|build/duet|--gpu-only" "hybrid|build/duet|"
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 INPUT ROUNDS RUN..." >&2
  exit 2
fi
input=$1 rounds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=rounds_common.sh
source "$here/rounds_common.sh"
out=$(mktemp -d)
for round in $(seq "$rounds"); do
  echo "== round $round"
  : > "$out/gcups"
  for run in "$@"; do
    IFS='|' read -r name binary options <<< "$run"
    # shellcheck disable=SC2086  # options are words
    "$binary" pairhmm --quiet $options --h5 "$out/$name.h5" "$input" 2> "$out/$name.err" ||
      { echo "$name: failed"; tail -3 "$out/$name.err"; continue; }
    python3 - "$out/$name.h5" "$name" "$out/gcups" <<'PY'
import sys
import h5py
r = h5py.File(sys.argv[1])['/run'].attrs
gcups = r['cells_per_second'] / 1e9
print('%-24s %.2f GCUPS (CPU %.2f, GPU %.2f), GPU share of cells %.2f, scheduler %.3f s' % (
    sys.argv[2], gcups, r['cpu_cells_per_second'] / 1e9, r['gpu_cells_per_second'] / 1e9,
    1 - r['cpu_share'], r['scheduler_seconds']))
with open(sys.argv[3], 'a') as f:
    f.write('%s %.6f\n' % (sys.argv[2], gcups))
PY
  done
  python3 - "$out/gcups" <<'PY'
import sys
g = dict(line.split() for line in open(sys.argv[1]))
if all(k in g for k in ('cpu', 'gpu', 'hybrid')):
    cpu, gpu, hybrid = (float(g[k]) for k in ('cpu', 'gpu', 'hybrid'))
    print('hybrid efficiency %.2f (hybrid %.2f / (cpu %.2f + gpu %.2f) GCUPS)' % (
        hybrid / (cpu + gpu), hybrid, cpu, gpu))
PY
done
compare_with_first "$out" "$@"
rm -rf "$out"
