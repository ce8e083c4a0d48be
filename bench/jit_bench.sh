#!/bin/bash
# Build, test and time the NVRTC run-time specialisation of the exact MSV kernel
# (src/device/hmmsearch/msv_exact_kernel.cuh, nvrtc_jit.hpp) on the GPU machine in one call.
# Run from the source root after `source <.device>/setup.sh`; logs under $OUT (or ./jit-out).
#   usage: bash bench/jit_bench.sh [build dir (default /tmp/b)] [bench arguments...]
# With JIT_FULL=1 it then runs a memcheck of the JIT launch path, whole GPU-only searches
# (Pkinase against the MMseqs2 example database JIT_COPIES times, default 100) with and
# without --gpu-jit, twice, comparing their results, and last the static kernels' tests
# (GpuLayouts.*, GpuKernels.*) for at most JIT_KERNEL_TESTS_S seconds (default 100).
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
[ "${JIT_FULL:-0}" = 1 ] || exit 0
timeout 60 compute-sanitizer --tool memcheck "$build/tests/gpu_tests" \
  --gtest_filter='GpuJit.DiskCacheRoundTripAndCorruptEntries' > "$out/memcheck.log" 2>&1
tail -2 "$out/memcheck.log"
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db1.fa
for i in $(seq "${JIT_COPIES:-100}"); do cat /tmp/db1.fa; done > /tmp/dbjit.fa
model=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
for round in 1 2; do
  for jit in no yes; do
    flag=; [ $jit = yes ] && flag=--gpu-jit
    t0=$(date +%s%N)
    DUET_TIMES=1 timeout 60 "$build/duet" hmmsearch --quiet --gpu-only $flag \
      --h5 /tmp/e2e-$jit-$round.h5 $model /tmp/dbjit.fa 2>&1 | grep -i "kernels" | head -2
    echo "round $round jit $jit: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
done
python3 bench/compare_results.py /tmp/e2e-no-1.h5 /tmp/e2e-yes-1.h5
python3 -c "
import h5py
for p in ['/tmp/e2e-no-1.h5', '/tmp/e2e-yes-1.h5', '/tmp/e2e-yes-2.h5']:
    r = h5py.File(p)['/run'].attrs
    print(p, 'wall', r['wall_seconds'], 'gpu_jit:', r['gpu_jit'])
"
timeout "${JIT_KERNEL_TESTS_S:-100}" "$build/tests/gpu_tests" --gtest_filter='GpuLayouts.*:GpuKernels.*' \
  2>&1 | tee "$out/gpu_kernel_tests.log" | grep -E "seed|OK \]|FAILED|PASSED|Failure" | head -30
