#!/bin/bash
# Where the hmmsearch GPU feeder's time goes (issue 5): builds duet with CUDA on the GPU
# machine, runs GPU-only, CPU-only and hybrid searches of Pkinase against the MMseqs2
# example database replicated $COPIES times (default 20: 181 M residues) with
# DUET_TIMES=1 (among its lines, the feeder's host phases and kernel times, on stderr), and checks
# that the results are identical. Run from the source root with .device carried
# (see bench/device_studies.sh). Extra duet options for every run: $DUET_OPTS; SKIP_CPU=1
# and SKIP_GPU2=1 leave out the CPU-only run and the second GPU-only run; NO_BUILD=1 reuses
# the build.
set -uo pipefail
out=${OUT:-device-out}; mkdir -p "$out"
source .device/setup.sh
export PATH=/opt/deps/usr/bin:$PATH
for d in hmmer mmseqs2; do
  [ -e /usr/share/doc/$d ] || { mkdir -p /usr/share/doc && ln -s /opt/deps/usr/share/doc/$d /usr/share/doc/$d; }
done
nvidia-smi -L; date -u
build=${BUILD:-build-dev}
if [ -z "${NO_BUILD:-}" ]; then
  t0=$(date +%s)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
  cmake --build "$build" -j16 --target duet ${TARGETS:-} > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
duet=$build/duet
db=/tmp/db${COPIES:-20}.fa
if [ ! -f "$db" ]; then
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > /tmp/db1.fa
  for i in $(seq ${COPIES:-20}); do cat /tmp/db1.fa; done > "$db"
fi
awk '/^>/ {if (n) print n; n = 0; next} {n += length($0)} END {print n}' /tmp/db1.fa |
  sort -n | awk '{a[NR] = $1} END {printf "targets %d, median length %d, 99th %d, longest %d\n", NR, a[int(NR/2)], a[int(NR*0.99)], a[NR]}'
pk=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
run() {
  local name=$1; shift
  /usr/bin/time -f "$name: %e s wall, %P CPU" env DUET_TIMES=1 $duet hmmsearch --quiet ${DUET_OPTS:-} "$@" --h5 "$out/$name.h5" $pk "$db" 2>&1 | grep -v '^$'
  python3 - "$out/$name.h5" <<'PY'
import h5py, sys
r = h5py.File(sys.argv[1])['run'].attrs
keys = ('wall_seconds', 'cpu_cells_per_second', 'gpu_cells_per_second', 'gpu_share', 'idle_tail_seconds', 'post_seconds')
print('  ', ', '.join(f'{k}={float(r[k]):.4g}' for k in keys if k in r))
PY
  python3 bench/trace_summary.py --phases "$out/$name.h5" | tail -n +2
}
run gpu --gpu-only
${SKIP_GPU2:+: }run gpu2 --gpu-only
${SKIP_CPU:+: }run cpu --no-gpu
run hybrid
[ -f "$out/cpu.h5" ] && python3 bench/compare_results.py "$out/cpu.h5" "$out/gpu.h5" && python3 bench/compare_results.py "$out/cpu.h5" "$out/hybrid.h5"
rm -f "$out"/gpu2.h5
