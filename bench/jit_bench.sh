#!/bin/bash
# Build, test and time the NVRTC run-time specialisation of the exact MSV kernel
# (src/device/msv_exact_kernel.cuh, nvrtc_jit.hpp) on the GPU machine in one call.
# Run from the source root after `source <.device>/setup.sh`; logs under $OUT (or ./jit-out).
#   usage: bash bench/jit_bench.sh [build dir (default /tmp/b)] [bench arguments...]
set -uo pipefail
build=${1:-/tmp/b}; shift || true
out=${OUT:-jit-out}; mkdir -p "$out"
# The tests and the bench read the Debian example data from /usr/share/doc.
for d in mmseqs2 hmmer; do
  [ -e /usr/share/doc/$d ] || [ ! -e /opt/deps/usr/share/doc/$d ] || ln -s /opt/deps/usr/share/doc/$d /usr/share/doc/$d
done
nvidia-smi -L; date -u
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_WERROR=ON > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
start=$(date +%s)
cmake --build "$build" -j16 --target gpu_tests hmm_gpu_bench jit_cache_tests duet > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
grep -A1 "msv_exact_kernel" "$out/build.log" | grep "Used" | head -2
"$build/tests/jit_cache_tests" --gtest_brief=1 2>&1 | tail -2
timeout 150 "$build/tests/gpu_tests" --gtest_filter='GpuJit.*:GpuSearch.Jit*' 2>&1 | tee "$out/gpu_tests.log" \
  | grep -E "seed|OK \]|FAILED|PASSED|SKIPPED|Failure|Expected|Which is|actual" | head -40
timeout 200 "$build/hmm_gpu_bench" jit "$@" 2>&1 | tee "$out/bench.log"
