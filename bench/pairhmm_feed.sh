#!/usr/bin/env bash
# Pair-HMM GPU feeder overlapped (issue 7) in one device call: builds this tree (duet,
# pairhmm_gpu_tests) and a reference tree (duet only) side by side, runs the GPU tests (bit for
# bit) and the *Throughput* tests, then duet pairhmm on 256 copies of 10s.in with the feeder's
# time split (DUET_TIMES=1): --gpu-only, --no-gpu and hybrid with the reference
# build and with this one (--gpu-parts 1, 2, 4, 8), and compares the HDF5 results.
# Usage: bash bench/pairhmm_feed.sh SETUP DATA REFERENCE_TREE
#   (SETUP: .device/setup.sh, DATA: folder with pairhmm/, REFERENCE_TREE: e.g. main's checkout)
set -u
setup=$1 data=$(cd "$2" && pwd) ref=$(cd "$3" && pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
log=$out/log.txt
# shellcheck disable=SC1090
source "$setup"
export PATH=/opt/deps/usr/bin:$PATH
date -u | tee "$log"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee -a "$log"
nproc | tee -a "$log"
( cmake -S "$ref" -B /tmp/ref -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_SHARED_DATA="$data" &&
  cmake --build /tmp/ref -j16 --target duet ) > "$out/build-ref.log" 2>&1 &
ref_pid=$!
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_SHARED_DATA="$data" > "$out/build.log" 2>&1 &&
  cmake --build /tmp/b -j16 --target duet pairhmm_gpu_tests >> "$out/build.log" 2>&1 ||
  { grep -B2 -A8 error "$out/build.log" | head -60 | tee -a "$log"; exit 1; }
wait $ref_pid || { echo "reference build failed" | tee -a "$log"; tail -20 "$out/build-ref.log" | tee -a "$log"; }
date -u | tee -a "$log"
/tmp/b/tests/pairhmm_gpu_tests --gtest_brief=1 --gtest_filter='-*Throughput*' 2>&1 | tail -15 | tee -a "$log"
/tmp/b/tests/pairhmm_gpu_tests --gtest_filter='*Throughput*' 2>&1 | grep -E "gcups|FAIL|PASSED" | tee -a "$log"
big=/tmp/x256.in
for _ in $(seq 256); do cat "$data/pairhmm/10s.in"; done > "$big"
run() {  # NAME BINARY ARGS...
  local name=$1 bin=$2
  shift 2
  echo "== $name: duet pairhmm $* x256.in" | tee -a "$log"
  local s
  s=$(date +%s%N)
  DUET_TIMES=1 "$bin" pairhmm "$@" "$big" 2>&1 | grep -v '^#.*progress\|^duet: time \|^duet: cpu seconds' | tail -6 | tee -a "$log"
  echo "wall $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a "$log"
}
for round in 1 2; do
  run "ref gpu-only $round" /tmp/ref/duet --gpu-only --h5 /tmp/ref-g$round.h5
  for parts in 1 2 4 8; do
    run "new gpu-only parts $parts $round" /tmp/b/duet --gpu-only --gpu-parts $parts --h5 /tmp/g$parts-$round.h5
  done
done
run "new gpu-only parts 4, 256 blocks per batch" /tmp/b/duet --gpu-only --gpu-parts 4 --gpu-batch-blocks 256 --h5 /tmp/g4b.h5
run "ref no-gpu" /tmp/ref/duet --no-gpu --h5 /tmp/ref-c.h5
run "new no-gpu" /tmp/b/duet --no-gpu --h5 /tmp/c.h5
for round in 1 2; do
  run "ref hybrid $round" /tmp/ref/duet --h5 /tmp/ref-h$round.h5
  run "new hybrid $round" /tmp/b/duet --h5 /tmp/h$round.h5
done
for f in /tmp/g1-1.h5 /tmp/g4-1.h5 /tmp/g8-2.h5 /tmp/g4b.h5 /tmp/h1.h5 /tmp/h2.h5 /tmp/ref-c.h5 /tmp/ref-g1.h5; do
  python3 bench/compare_results.py /tmp/c.h5 "$f" 2>&1 | tail -2 | tee -a "$log"
  echo "compare c.h5 $f rc ${PIPESTATUS[0]}" | tee -a "$log"
done
date -u | tee -a "$log"
