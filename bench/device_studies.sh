#!/bin/bash
# Throughput studies on the GPU machine in one call (issues 3, 4, 5, 6): builds duet with
# CUDA, runs the GPU tests, the model-length and split sweeps (CPU-only, GPU-only,
# hybrid), CPU worker scaling beside hmmsearch --cpu N, and draws the plots. Run from
# the source root with .device carried (shared/device/README.md; fetch-debs.sh .device
# hmmer libdivsufsort3 hmmer-examples mmseqs2-examples). Writes everything under $OUT.
# SWEEPS="split scaling" runs only those sweeps (default: lengths split scaling).
# DUET_SHARED_DATA=DIR (a folder holding pairhmm/, carried along) lets the pair-HMM GPU tests find their data.
set -uo pipefail
source bench/device_env.sh
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-dev -j16 --target duet gpu_tests pairhmm_gpu_tests > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
./build-dev/duet info | tee "$out/info.txt"
{ ./build-dev/tests/gpu_tests --gtest_brief=1 2>&1 | tail -3; ./build-dev/tests/pairhmm_gpu_tests --gtest_brief=1 2>&1 | tail -3; } | tee "$out/gpu_tests.txt"
duet=./build-dev/duet
# Databases: the MMseqs2 example database (9 M residues) replicated 3 and 20 times.
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > "$out/db1.fa"
for i in 1 2 3; do cat "$out/db1.fa"; done > /tmp/db3.fa
for i in $(seq 20); do cat "$out/db1.fa"; done > /tmp/db20.fa
pk=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
# Sweeps: the example sweeps of configs/sweeps/, on these databases.
sed -e 's|^synthetic_residues = .*|database = "/tmp/db3.fa"|' -e '/^synthetic_homologs/d' configs/sweeps/model-length.toml > "$out/lengths.toml"
cat > "$out/split.toml" <<TOML
name = "split"
[workload]
models = ["$pk"]
database = "/tmp/db20.fa"
[sweep]
devices = ["cpu", "gpu", "hybrid"]
policy = ["dynamic", "static"]
static_cpu_fraction = [0.1, 0.25, 0.5, 0.75, 0.9]
TOML
cat > "$out/scaling.toml" <<TOML
name = "scaling"
[workload]
models = ["$pk"]
database = "/tmp/db20.fa"
[sweep]
devices = ["cpu"]
block_residues = [262144]
cpu = [1, 2, 4, 8, 16]
TOML
for s in ${SWEEPS:-lengths split scaling}; do
  t1=$(date +%s)
  $duet bench "$out/$s.toml" -o "$out/$s" > "$out/$s.txt" 2> "$out/$s.err"; echo "sweep $s: rc=$? $(( $(date +%s) - t1 )) s"
  tail -n +2 "$out/$s.txt" | head -40
done
[ -f "$out/lengths/summary.csv" ] && python3 bench/plot.py lengths "$out/lengths/summary.csv" -o "$out/lengths.png"
python3 bench/plot.py split "$out/split/summary.csv" -o "$out/split.png"
first_hybrid=$(awk -F, 'NR>1 && $7=="hybrid" && $16=="ok" {print $NF; exit}' "$out/split/summary.csv")
[ -n "$first_hybrid" ] && python3 bench/plot.py timeline "$first_hybrid" -o "$out/timeline.png"
# hmmsearch --cpu N on the same database, for the ratios.
for n in 1 2 4 8 16; do
  t1=$(date +%s%N); hmmsearch --cpu $n --nonull2 -o /dev/null $pk /tmp/db20.fa
  echo "hmmsearch --cpu $n: $(( ($(date +%s%N) - t1) / 1000000 )) ms"
done | tee "$out/hmmsearch_scaling.txt"
rm -f "$out"/db1.fa "$out"/*/db.fa 2>/dev/null
du -sh "$out"
