#!/bin/bash
# The Viterbi filter's strip kernel on the GPU machine, in one call (issue 18, item 5):
# builds gpu_tests and hmm_gpu_bench, runs the GpuKernels tests (every kernel bit for bit
# against viterbi_filter_reference) and the GpuLayouts tests (the strip tables), then
# times the strip and warp kernels alone on the MMseqs2 examples replicated to
# VIT_RESIDUES (default 3e7) for LENGTHS (model lengths).
# Run from the source root with .device carried; logs under $OUT.
set -uo pipefail
source bench/device_env.sh
lengths=${LENGTHS:-50 100 200 260 400 500 800 1000}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j16 --target gpu_tests hmm_gpu_bench > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
grep -A2 "viterbi_strip_kernel" "$out/build.log" | grep -E "Used|spill" | head -8
if [ "${TESTS:-yes}" = yes ]; then
  ./build-gpu/tests/gpu_tests --gtest_filter='GpuKernels.*:GpuLayouts.*' > "$out/gpu_tests.log" 2>&1
  grep -E "seed|FAILED|PASSED|Failure" "$out/gpu_tests.log" | head -20
fi
./build-gpu/hmm_gpu_bench 0 "${VIT_RESIDUES:-3e7}" $lengths 2>&1 | tee "$out/bench.log"
