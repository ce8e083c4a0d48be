#!/bin/bash
# GPU residency across query models (issue 5): a multi-model hmmsearch with the resident
# store off (--gpu-resident 0) and on (auto), alternated for ROUNDS rounds, then once on
# the CPU alone. Prints per run the process wall time and the feeder's DUET_TIMES line
# (residues from the resident store / uploaded), per query the /trace counts
# (gpu_resident_residues, gpu_uploaded_residues, gpu_kept_residues) and wall seconds,
# and compares every run's /results with the CPU run's (bench/compare_results.py).
# MODE (default --gpu-only) is the GPU runs' mode option. Needs python3 with h5py.
#
#   bash bench/gpu_resident.sh build/duet MODELS.hmm DB.fa ROUNDS
set -uo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 DUET MODELS DB ROUNDS" >&2
  exit 2
fi
duet=$1 models=$2 db=$3 rounds=$4
mode=${MODE:---gpu-only}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
one() {  # name, options...
  local name=$1
  shift
  local t0
  t0=$(date +%s%N)
  DUET_TIMES=1 "$duet" hmmsearch --quiet --h5 "$out/$name.h5" "$@" "$models" "$db" \
    2> "$out/$name.err" || { echo "$name: failed"; tail -3 "$out/$name.err"; return; }
  echo "$name ($*): wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  grep -oE "hmmsearch GPU [0-9]+( feeder [0-9]+)?: set-up.*" "$out/$name.err" | cut -c1-500 | sed 's/^/  /'
  python3 - "$out/$name.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
for q in f["/trace"]:
    a = f["/trace/" + q].attrs
    print("  %-10s wall %.3f s, residues from the store %d, uploaded %d (kept %d)" % (
        q, a["wall_seconds"], a["gpu_resident_residues"], a["gpu_uploaded_residues"],
        a["gpu_kept_residues"]))
PY
}
names=()
for round in $(seq "$rounds"); do
  echo "== round $round"
  # shellcheck disable=SC2086  # mode is words
  one "off$round" $mode --gpu-resident 0
  # shellcheck disable=SC2086
  one "on$round" $mode --gpu-resident auto
  names+=("off$round" "on$round")
done
one cpu --no-gpu
for name in "${names[@]}"; do
  if python3 "$here/compare_results.py" "$out/cpu.h5" "$out/$name.h5" > "$out/$name.cmp"; then
    echo "$name: /results identical to the CPU run's"
  else
    echo "$name: /results DIFFER from the CPU run's"
    head -5 "$out/$name.cmp"
  fi
done
rm -rf "$out"
