#!/bin/bash
# MSV/SSV kernel, before and after, in one call on the GPU machine (issue 5): builds two
# source trees (e.g. main's and a branch's), counts the SASS operations of their MSV fast
# kernels, runs the second tree's GPU kernel tests, then hmm_gpu_bench for both.
#   usage: bash bench/msv_compare.sh BASE_SRC NEW_SRC [msv_residues] [viterbi_residues]
set -uo pipefail
base=$1; new=$2; mr=${3:-1e9}; vr=${4:-3e7}
out=${OUT:-msv-out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/machine.txt"
date -u | tee -a "$out/machine.txt"
build() {  # source, build dir, targets
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    > "$2.cmake.log" 2>&1 &&
    cmake --build "$2" -j8 --target $3 > "$2.build.log" 2>&1 ||
    { echo "build of $1 failed"; grep -B2 -A8 error "$2.build.log" | head -40; }
}
build "$base" /tmp/b_base hmm_gpu_bench & build "$new" /tmp/b_new "gpu_tests hmm_gpu_bench" & wait
for b in base new; do
  cuobjdump --dump-sass /tmp/b_$b/src/device/libduet_device_hmm.a 2>/dev/null |
    awk '/Function : /{f=/msv_wavefront_kernel/} f' > "$out/sass_$b.txt"
  # Per kernel: operation counts; the inner loop is unrolled, so they are per-step counts
  # times the unrolled steps (VIADDMNMX = nodes/2 per step).
  awk '/Function : /{name=$3} /^ +\/\*[0-9a-f]+\*\/ /{op=$2; if (op ~ /^@/) op=$3; sub(/\..*/, "", op); c[name" "op]++}
       END{for (k in c) print k, c[k]}' "$out/sass_$b.txt" | sort -k1,1 -k3,3nr > "$out/sass_counts_$b.txt"
done
grep -E "VIADDMNMX|VIMNMX|LDS|SHFL" "$out"/sass_counts_*.txt | head -40
timeout 120 /tmp/b_new/tests/gpu_tests --gtest_filter='GpuKernels.*:GpuLayouts.*' 2>&1 |
  tee "$out/tests_new.log" | grep -E "seed|FAILED|PASSED|OK \]|Failure" | head -40
for b in base new; do
  echo "== hmm_gpu_bench $b ($mr $vr)"; date -u
  timeout 110 /tmp/b_$b/hmm_gpu_bench "$mr" "$vr" 2>&1 | tee "$out/bench_$b.log"
done
date -u
