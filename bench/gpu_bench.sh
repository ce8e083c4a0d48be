#!/bin/bash
# Build, test and benchmark the hmmsearch GPU kernels on the GPU machine in one call
# (issue 5). Run from the source root with the Debian packages of .device (see
# shared/device/README.md); writes logs under $OUT (or ./gpu-out).
#   usage: bash bench/gpu_bench.sh [setup.sh] [msv_residues] [viterbi_residues] [tests: yes|no]
set -uo pipefail
setup=${1:-.device/setup.sh}; msv_res=${2:-1e9}; vit_res=${3:-3e7}; tests=${4:-yes}
out=${OUT:-gpu-out}; mkdir -p "$out"
source "$setup"
nvidia-smi -L; date -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j16 --target gpu_tests hmm_gpu_bench duet > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
grep -A1 "msv_wavefront\|viterbi_warp\|msv_exact\|viterbi_thread" "$out/build.log" | grep "Used" | head -8
cuobjdump --dump-sass build-gpu/src/device/libduet_device_hmm.a > "$out/sass.txt" 2>/dev/null
awk '/Function : .*msv_wavefront_kernelILi32/{f=1;next} /Function :/{f=0} f' "$out/sass.txt" \
  | grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9.]+' | awk '{print $2}' | sort | uniq -c | sort -rn | head -14
if [ "$tests" = yes ]; then
  ./build-gpu/tests/gpu_tests 2>&1 | tee "$out/gpu_tests.log" | grep -E "seed|FAILED|PASSED|SKIPPED|OK \]|Failure|gpu |reference " | head -60
  compute-sanitizer --tool memcheck --leak-check full ./build-gpu/tests/gpu_tests --gtest_filter='GpuKernels.BatchesAndSlotsAgree' > "$out/memcheck.log" 2>&1; tail -3 "$out/memcheck.log"
  compute-sanitizer --tool racecheck ./build-gpu/tests/gpu_tests --gtest_filter='GpuKernels.BatchesAndSlotsAgree' > "$out/racecheck.log" 2>&1; tail -3 "$out/racecheck.log"
fi
./build-gpu/hmm_gpu_bench "$msv_res" "$vit_res" 2>&1 | tee "$out/bench.log"
# End-to-end: the MMseqs2 example database (and its first 2000 sequences for the scalar
# CPU-only run), Pkinase; results compared between CPU-only, GPU-only and hybrid.
if [ "${5:-no}" = e2e ]; then
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db.fa
  awk '/^>/{n++} n<=2000' /tmp/db.fa > /tmp/db2k.fa
  model=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
  run() { local t0=$(date +%s%N); ./build-gpu/duet hmmsearch --quiet "$@" > /dev/null; local rc=$?; echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms rc=$rc: $*"; }
  run --no-gpu --h5 /tmp/cpu2k.h5 $model /tmp/db2k.fa
  run --gpu-only --h5 /tmp/gpu2k.h5 $model /tmp/db2k.fa
  python3 bench/compare_results.py /tmp/cpu2k.h5 /tmp/gpu2k.h5
  for s in warp thread; do
    run --gpu-only --gpu-strategy $s --h5 /tmp/gpu-$s.h5 $model /tmp/db.fa
    run --gpu-strategy $s --cpu 4 --block-residues 50000 --h5 /tmp/hyb-$s.h5 $model /tmp/db.fa
    python3 bench/compare_results.py /tmp/gpu-$s.h5 /tmp/hyb-$s.h5
  done
  python3 bench/compare_results.py /tmp/gpu-warp.h5 /tmp/gpu-thread.h5
  python3 -c "
import h5py
for p in ['/tmp/cpu2k.h5','/tmp/gpu-warp.h5','/tmp/hyb-warp.h5']:
    f=h5py.File(p); q=f['/results/hmmsearch/Pkinase']; r=f['/run'].attrs
    print(p, 'M', q.attrs['M'], 'residues', q.attrs['residues'], 'wall', r['wall_seconds'], 'Gcells/s', q.attrs['M']*q.attrs['residues']/r['wall_seconds']/1e9)
"
fi
# End-to-end on a larger database: the example database replicated (argument 6 times,
# default 40: about 360 M residues), Pkinase; GPU-only and hybrid; then a profile of the
# Viterbi kernel (Nsight Compute) for the notes.
if [ "${5:-no}" = e2e-big ]; then
  copies=${6:-40}
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db1.fa
  for i in $(seq "$copies"); do cat /tmp/db1.fa; done > /tmp/dbbig.fa
  model=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
  run() { local t0=$(date +%s%N); ./build-gpu/duet hmmsearch --quiet "$@" > /dev/null; local rc=$?; echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms rc=$rc: $*"; }
  run --gpu-only --h5 /tmp/big-gpu.h5 $model /tmp/dbbig.fa
  run --gpu-only --h5 /tmp/big-gpu2.h5 $model /tmp/dbbig.fa
  run --h5 /tmp/big-hyb.h5 $model /tmp/dbbig.fa
  run --block-residues 100000 --h5 /tmp/big-hyb-small.h5 $model /tmp/dbbig.fa
  python3 bench/compare_results.py /tmp/big-gpu.h5 /tmp/big-hyb.h5
  python3 -c "
import h5py
for p in ['/tmp/big-gpu.h5','/tmp/big-gpu2.h5','/tmp/big-hyb.h5','/tmp/big-hyb-small.h5']:
    f=h5py.File(p); q=f['/results/hmmsearch/Pkinase']; r=f['/run'].attrs
    print(p, 'M', q.attrs['M'], 'residues', q.attrs['residues'], 'wall', round(float(r['wall_seconds']),3), 'Gcells/s', round(q.attrs['M']*q.attrs['residues']/r['wall_seconds']/1e9,1), {k: r[k] for k in r if 'gpu' in k or 'cpu' in k or 'idle' in k or 'share' in k})
"
  ncu --clock-control none --kernel-name regex:viterbi_warp --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats ./build-gpu/hmm_gpu_bench 1e6 3e6 400 > "$out/ncu_viterbi.txt" 2>&1
  grep -E "Throughput|Occupancy|Stall|Warp Cycles|Issued|Block Limit|Registers|Shared Memory" "$out/ncu_viterbi.txt" | head -40
fi
# Two GPUs (a machine of kind nvidia-h200-x2): one feeder per GPU; results identical to
# one GPU and to the CPU-only run on the first 2000 sequences.
if [ "${5:-no}" = two-gpu ]; then
  copies=${6:-40}
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db1.fa
  for i in $(seq "$copies"); do cat /tmp/db1.fa; done > /tmp/dbbig.fa
  model=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
  run() { local t0=$(date +%s%N); ./build-gpu/duet hmmsearch --quiet "$@" > /dev/null; local rc=$?; echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms rc=$rc: $*"; }
  ./build-gpu/duet info | grep -i -A3 gpu
  run --gpu-only --gpus 0 --h5 /tmp/one.h5 $model /tmp/dbbig.fa
  run --gpu-only --gpus 0,1 --h5 /tmp/two.h5 $model /tmp/dbbig.fa
  run --gpu-only --gpus 0,1 --h5 /tmp/two2.h5 $model /tmp/dbbig.fa
  run --gpus 0,1 --h5 /tmp/two-hyb.h5 $model /tmp/dbbig.fa
  python3 bench/compare_results.py /tmp/one.h5 /tmp/two.h5
  python3 bench/compare_results.py /tmp/one.h5 /tmp/two-hyb.h5
  python3 -c "
import h5py
for p in ['/tmp/one.h5','/tmp/two.h5','/tmp/two2.h5','/tmp/two-hyb.h5']:
    f=h5py.File(p); q=f['/results/hmmsearch/Pkinase']; r=f['/run'].attrs
    print(p, 'wall', round(float(r['wall_seconds']),3), 'Gcells/s', round(q.attrs['M']*q.attrs['residues']/r['wall_seconds']/1e9,1), {k: r[k] for k in r if k in ('gpu_feeders','gpu_cells_per_second','gpu_share','idle_tail_seconds')})
"
fi
