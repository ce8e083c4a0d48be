#!/bin/bash
# The GPU Forward filter (issue 5, items 1 and 5) in one device call: builds duet with CUDA,
# runs the Forward and whole-search GPU tests, compute-sanitizer memcheck on a Forward
# test, the Forward kernel benchmark (hmm_gpu_bench forward), end-to-end runs of Pkinase on
# the MMseqs2 example database replicated 20 times (--no-gpu, --gpu-only, hybrid; tblout
# and /results compared), then the remaining GPU tests. Every step has its own time limit
# so that the whole fits one call. usage: bash bench/gpu_forward.sh SETUP_SH [copies]
set -uo pipefail
out=${OUT:-device-out}; mkdir -p "$out"
source "$1"
copies=${2:-20}
export PATH=/opt/deps/usr/bin:$PATH
for d in hmmer mmseqs2; do
  [ -e /usr/share/doc/$d ] || { mkdir -p /usr/share/doc && ln -s /opt/deps/usr/share/doc/$d /usr/share/doc/$d; }
done
nvidia-smi -L; date -u | tee "$out/date.txt"
t0=$(date +%s)
b=/tmp/b-fwd
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
cmake --build $b -j16 --target duet gpu_tests hmm_gpu_bench >> "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
step() { local t=$1; shift; local t1=$(date +%s); timeout "$t" "$@"; echo "[rc=$? $(( $(date +%s) - t1 )) s: $*]"; }
{
  step 150 $b/tests/gpu_tests --gtest_filter='GpuForward.*'
  step 240 $b/tests/gpu_tests --gtest_brief=1 --gtest_filter='GpuSearch.*'
} 2>&1 | tee "$out/tests_forward.txt" | grep -E "seed|largest|FAILED|PASSED|Failure|rc=|error" | head -40
step 120 $b/hmm_gpu_bench forward 3e7 50 100 200 400 800 1500 2500 2>&1 | tee "$out/bench_forward.txt"
# End-to-end.
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db1.fa
for i in $(seq "$copies"); do cat /tmp/db1.fa; done > /tmp/dbN.fa
pk=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
e2e() { local name=$1; shift; local t1=$(date +%s%N); timeout 120 $b/duet hmmsearch --quiet --tblout /tmp/$name.tbl --h5 /tmp/$name.h5 "$@" $pk /tmp/dbN.fa > /dev/null; echo "$name: rc=$? $(( ($(date +%s%N) - t1) / 1000000 )) ms: $*"; }
{
  e2e cpu --no-gpu
  e2e gpu --gpu-only
  e2e hyb
  for r in gpu hyb; do
    python3 bench/compare_results.py /tmp/cpu.h5 /tmp/$r.h5
    if diff <(grep -v '^#' /tmp/cpu.tbl) <(grep -v '^#' /tmp/$r.tbl) > /dev/null; then echo "tblout $r: identical to cpu ($(grep -vc '^#' /tmp/cpu.tbl) lines)"; else echo "tblout $r: DIFFERENT"; fi
  done
  python3 -c "
import h5py
for p in ['/tmp/cpu.h5','/tmp/gpu.h5','/tmp/hyb.h5']:
    f=h5py.File(p); q=f['/results/hmmsearch/Pkinase']; r=f['/run'].attrs
    print(p, 'M', q.attrs['M'], 'residues', q.attrs['residues'], 'wall', round(float(r['wall_seconds']),3), 'Gcells/s', round(q.attrs['M']*q.attrs['residues']/r['wall_seconds']/1e9,1), {k: r[k] for k in r if 'gpu' in k or 'cpu' in k or 'idle' in k or 'share' in k or 'pass' in k})
    print('  counts', {k: q.attrs[k] for k in q.attrs if 'pass' in k or k in ('targets',)})
"
} 2>&1 | tee "$out/e2e.txt"
step 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full $b/tests/gpu_tests --gtest_filter='GpuForward.WithinToleranceOnTutorialModels' 2>&1 | tail -6 | tee "$out/memcheck.txt"
step 150 $b/tests/gpu_tests --gtest_brief=1 --gtest_filter='-GpuForward.*:GpuSearch.*' 2>&1 | tail -8 | tee "$out/tests_rest.txt"
date -u
