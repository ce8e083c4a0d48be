#!/usr/bin/env bash
# Issue 21's pair-HMM benchmark in one device call: builds this tree (and, with BASE=a tar
# of another tree, that one beside it), runs the GPU tests, the kernel-only throughput, then
# every input in every mode, ROUNDS rounds in turn so that a noisy machine affects them
# alike. Per run: the whole process's wall seconds, duet's GCUPS of the scheduled work
# (/run cells_per_second), the GPU's busy fraction (its trace rows over the scheduler's
# seconds) and its share of cells; every /results is compared with the first run's.
#   OUT=$OUT ROUNDS=3 INPUTS="x64 x1024 x160 small" [BASE=.device/base.tar] [TESTS=0] \
#     [EXTRA="name|/tmp/b/duet|options;..."] [DUET=build-dev/duet] bash bench/pairhmm_modes.sh
# DUET: a duet already built (then nothing is built for this tree, and TESTS is 0).
# Inputs (bench/pairhmm_inputs.py): xN = 10s.in N times; small = 100,000 small batches.
set -uo pipefail
source bench/device_env.sh
rounds=${ROUNDS:-3} inputs=${INPUTS:-x64 x1024 x160 small}
data=${DUET_SHARED_DATA:-$PWD/.device/data}
log=$out/log.txt
build() {  # build SOURCE DIR TARGETS...
  local src=$1 dir=$2; shift 2
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_SHARED_DATA="$data" \
    > "$dir.log" 2>&1 && cmake --build "$dir" -j16 --target "$@" >> "$dir.log" 2>&1
}
if [ -n "${BASE:-}" ]; then
  mkdir -p /tmp/base-src && tar -xf "$BASE" -C /tmp/base-src
  build /tmp/base-src /tmp/base duet &
  base_pid=$!
fi
duet=${DUET:-/tmp/b/duet}
[ -n "${DUET:-}" ] && TESTS=0  # no test binary was built
[ -n "${DUET:-}" ] || build . /tmp/b duet pairhmm_gpu_tests ||
  { grep -B2 -A8 error /tmp/b.log | head -60 | tee -a "$log"; exit 1; }
if [ -n "${BASE:-}" ]; then
  wait "$base_pid" || { echo "base build failed" | tee -a "$log"; tail -20 /tmp/base.log | tee -a "$log"; }
fi
date -u | tee -a "$log"
# TESTS=1 (default): the GPU tests and the kernel-only throughput; TESTS=throughput: only
# the throughput; TESTS=0: neither.
if [ "${TESTS:-1}" = 1 ]; then
  /tmp/b/tests/pairhmm_gpu_tests --gtest_brief=1 --gtest_filter='-*Throughput*' 2>&1 | tail -5 | tee -a "$log"
fi
if [ "${TESTS:-1}" != 0 ]; then
  /tmp/b/tests/pairhmm_gpu_tests --gtest_filter='*Throughput/intra_auto*' 2>&1 | grep -E "gcups|FAIL" | tee -a "$log"
fi
for i in $inputs; do
  case $i in
    x*) python3 bench/pairhmm_inputs.py copies "$data/pairhmm/10s.in" "${i#x}" "/tmp/$i.in" ;;
    small) python3 bench/pairhmm_inputs.py small "$data/pairhmm/10s.in" 100000 /tmp/small.in ;;
  esac
done
runs=("cpu|$duet|--no-gpu" "gpu|$duet|--gpu-only" "hybrid|$duet|")
[ -n "${BASE:-}" ] && runs+=("base_cpu|/tmp/base/duet|--no-gpu" "base_gpu|/tmp/base/duet|--gpu-only"
                             "base_hybrid|/tmp/base/duet|")
[ -n "${EXTRA:-}" ] && IFS=';' read -ra extra <<< "$EXTRA" && runs+=("${extra[@]}")
for i in $inputs; do
  echo "== $i: $(du -h /tmp/$i.in | cut -f1)" | tee -a "$log"
  for round in $(seq "$rounds"); do
    for run in "${runs[@]}"; do
      IFS='|' read -r name binary options <<< "$run"
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086  # options are words
      DUET_TIMES=1 "$binary" pairhmm --quiet $options --h5 "/tmp/$i-$name.h5" "/tmp/$i.in" \
        2> "$out/$i-$name.err" || { echo "$i $name: failed" | tee -a "$log"; tail -3 "$out/$i-$name.err"; continue; }
      t1=$(date +%s.%N)
      python3 - "/tmp/$i-$name.h5" "$i $name $round" "$t0" "$t1" <<'PY' | tee -a "$log"
import sys
import h5py
f = h5py.File(sys.argv[1])
r = f['/run'].attrs
t = f['/trace/pairhmm']
gpu = t['device'][()] == 1
busy = float((t['end'][()][gpu] - t['start'][()][gpu]).sum())
first = float(t['start'][()][gpu].min()) if gpu.any() else float('nan')
s = r['scheduler_seconds']
print('%-18s wall %6.3f s  scheduler %6.3f s  %7.2f GCUPS  GPU busy %.2f (first batch at %.3f s)  GPU cells %.2f' % (
    sys.argv[2], float(sys.argv[4]) - float(sys.argv[3]), s, r['cells_per_second'] / 1e9, busy / s if s else 0, first,
    1 - r['cpu_share']))
PY
    done
  done
  for run in "${runs[@]:1}"; do
    name=${run%%|*}
    printf '%-8s %-14s ' "$i" "$name" | tee -a "$log"
    python3 bench/compare_results.py "/tmp/$i-cpu.h5" "/tmp/$i-$name.h5" 2>&1 | tail -1 | tee -a "$log"
  done
  grep -h "pairhmm GPU\|pairhmm times" "$out/$i-"*.err | head -12 >> "$log"
  rm -f /tmp/$i-*.h5
done
date -u | tee -a "$log"
tar -czf "$out/errs.tar.gz" -C "$out" $(cd "$out" && ls ./*.err) && rm -f "$out"/*.err
