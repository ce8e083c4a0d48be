#!/bin/bash
# Same-call comparison of hmmsearch runs (issues 3 and 5): every run of RUNS in each of
# ROUNDS rounds, in order, so that a noisy machine affects them alike. A run is
# "NAME|BINARY|OPTIONS" (BINARY: a duet executable, e.g. a build of main and one of a
# branch). Prints per run the pass time (end of the last /trace row: the pass without
# start-up and writing), the GPU's share of residues, and with THREADS=1 the CPU seconds
# and run-queue waits per kind of thread (DUET_TIMES=1); then compares every run's
# /results with the first run's (bench/compare_results.py). Needs python3 with h5py.
#
#   bash bench/hybrid_rounds.sh MODEL DB ROUNDS "cpu|build/duet|--no-gpu" \
#        "gpu|build/duet|--gpu-only" "hybrid|build/duet|" "hybrid-nice0|build/duet|--worker-nice 0"
set -uo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 MODEL DB ROUNDS RUN..." >&2
  exit 2
fi
model=$1 db=$2 rounds=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=rounds_common.sh
source "$here/rounds_common.sh"
out=$(mktemp -d)
query=$(awk '/^NAME /{print $2; exit}' "$model")
for round in $(seq "$rounds"); do
  echo "== round $round"
  for run in "$@"; do
    IFS='|' read -r name binary options <<< "$run"
    # shellcheck disable=SC2086  # options are words
    DUET_TIMES=1 "$binary" hmmsearch --quiet $options --h5 "$out/$name.h5" "$model" "$db" \
      2> "$out/$name.err" || { echo "$name: failed"; tail -3 "$out/$name.err"; continue; }
    python3 - "$out/$name.h5" "$name" "$query" <<'PY'
import sys
import h5py
f = h5py.File(sys.argv[1])
t = f['/trace/' + sys.argv[3].replace('/', '_')]
end, device, residues = t['end'][:], t['device'][:], t['residues'][:]
print('%-24s pass %.3f s, GPU share %.2f of %.3g residues' % (
    sys.argv[2], end.max(), residues[device != 0].sum() / max(1, residues.sum()), residues.sum()))
PY
    if [ -n "${THREADS:-}" ]; then
      grep "cpu seconds" "$out/$name.err" | sed 's/duet: cpu seconds://; s/; /\n    /g; s/^ /    /'
    fi
  done
done
compare_with_first "$out" "$@"
rm -rf "$out"
