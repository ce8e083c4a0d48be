#!/bin/bash
# The GPU canonical Forward in one device call: builds gpu_tests and hmm_gpu_bench, checks
# the kernel's SASS for fused multiply-adds (the IEEE division sequences hold the only
# FFMA), runs the canonical Forward GPU tests, compute-sanitizer memcheck and racecheck on
# the small case, the kernel benchmark (hmm_gpu_bench canonical: GPU kernel-only GCUPS and
# forward_canonical on one core; rows where the engine puts them, then in global memory),
# then, when REST=1, the other GPU tests. Every step has its own time limit so that the
# whole fits one call. usage: [REST=1] bash bench/gpu_canonical.sh SETUP_SH
set -uo pipefail
out=${OUT:-device-out}; mkdir -p "$out"
source "$1"
export PATH=/opt/deps/usr/bin:$PATH
for d in hmmer mmseqs2; do
  [ -e /usr/share/doc/$d ] || { mkdir -p /usr/share/doc && ln -s /opt/deps/usr/share/doc/$d /usr/share/doc/$d; }
done
nvidia-smi -L; date -u | tee "$out/date.txt"
t0=$(date +%s)
b=/tmp/b-canon
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_WERROR=ON > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
cmake --build $b -j16 --target gpu_tests hmm_gpu_bench >> "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
step() { local t=$1; shift; local t1=$(date +%s); timeout "$t" "$@"; echo "[rc=$? $(( $(date +%s) - t1 )) s: $*]"; }
# Fused multiply-adds in the canonical kernel's machine code (there must be none).
obj=$(find $b -name 'hmm_canonical_gpu.cu.o' | head -1)
/usr/local/cuda/bin/cuobjdump --dump-sass "$obj" > "$out/canonical_sass.txt" 2>&1
echo "SASS: $(grep -c FFMA "$out/canonical_sass.txt") FFMA, $(grep -c FMUL "$out/canonical_sass.txt") FMUL, $(grep -c FADD "$out/canonical_sass.txt") FADD"
step 200 $b/tests/gpu_tests --gtest_filter='GpuCanonical*' 2>&1 | tee "$out/tests_canonical.txt" | grep -E "seed|canonical Forward:|FAILED|PASSED|Failure|OK \]|rc=|error|gpu " | head -40
for tool in memcheck racecheck; do
  step 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $b/tests/gpu_tests --gtest_filter='GpuCanonicalForward.SmallBatchInBothRowPlacements' 2>&1 | tail -5 | tee "$out/$tool.txt"
done
for rows in auto global; do
  if [ $rows = auto ]; then unset DUET_CANONICAL_GPU_ROWS; else export DUET_CANONICAL_GPU_ROWS=$rows; fi
  step 120 $b/hmm_gpu_bench canonical 2e7 4e8 50 100 200 260 400 800 1200 1500 2500 2>&1 | tee -a "$out/bench_canonical.txt"
done
unset DUET_CANONICAL_GPU_ROWS
if [ "${REST:-0}" = 1 ]; then
  step 280 $b/tests/gpu_tests --gtest_brief=1 --gtest_filter='-GpuCanonical*' 2>&1 | tail -8 | tee "$out/tests_rest.txt"
fi
echo "total: $(( $(date +%s) - t0 )) s"; date -u
