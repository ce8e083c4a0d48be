#!/usr/bin/env bash
# Pair-HMM GPU with transfers (issue 7) in one device call: build, the GPU tests (bit for bit),
# kernel-only and with-transfer throughput (pairhmm_gpu_tests *Throughput*), and duet pairhmm
# --gpu-only / --no-gpu end to end on 256 copies of 10s.in with the feeder's time split
# (DUET_TIMES=1) and the HDF5 results compared.
# Usage: bash bench/pairhmm_transfer.sh SETUP DATA   (SETUP: .device/setup.sh, DATA: folder with pairhmm/)
set -u
setup=$1 data=$(cd "$2" && pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
# shellcheck disable=SC1090
source "$setup"
export PATH=/opt/deps/usr/bin:$PATH
date -u | tee "$out/log.txt"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee -a "$out/log.txt"
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_SHARED_DATA="$data" > "$out/build.log" 2>&1 &&
  cmake --build /tmp/b -j16 --target duet pairhmm_gpu_tests >> "$out/build.log" 2>&1 ||
  { grep -B2 -A8 error "$out/build.log" | head -60 | tee -a "$out/log.txt"; exit 1; }
/tmp/b/tests/pairhmm_gpu_tests --gtest_brief=1 --gtest_filter='-*Throughput*' 2>&1 | tail -15 | tee -a "$out/log.txt"
/tmp/b/tests/pairhmm_gpu_tests --gtest_filter='*Throughput*' 2>&1 | grep -E "gcups|FAIL|PASSED" | tee -a "$out/log.txt"
big=/tmp/x256.in
for _ in $(seq 256); do cat "$data/pairhmm/10s.in"; done > "$big"
for run in "--gpu-only --h5 /tmp/g.h5" "--no-gpu --h5 /tmp/c.h5" "--gpu-only --h5 /tmp/g2.h5"; do
  echo "== duet pairhmm $run x256.in" | tee -a "$out/log.txt"
  s=$(date +%s%N)
  # shellcheck disable=SC2086
  DUET_TIMES=1 /tmp/b/duet pairhmm $run "$big" 2>&1 | grep -v '^duet: time \|^duet: cpu seconds' | tail -8 | tee -a "$out/log.txt"
  echo "wall $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a "$out/log.txt"
done
python3 bench/compare_results.py /tmp/c.h5 /tmp/g.h5 2>&1 | tail -5 | tee -a "$out/log.txt"
echo "compare rc ${PIPESTATUS[0]}" | tee -a "$out/log.txt"
date -u | tee -a "$out/log.txt"
