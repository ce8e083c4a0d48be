#!/bin/bash
# The hybrid against the GPU's size (issue 18, item 6): duet hmmsearch with its GPU kernels
# on part of the GPU (--gpu-sms S: a green context's share of the SMs), so that one machine
# stands in for workstations with smaller GPUs. For each S: --gpu-only and the hybrid
# (forced: --gpu-min-database 0), beside --no-gpu, whole processes in rounds; then each
# run's scheduler rate from /run (work_total / scheduler_seconds, residues a second), the
# hybrid's rate against the sum of the CPU's and that GPU-only run's, and a plot against S.
# Every /results must equal --no-gpu's (bench/compare_results.py).
#   MODELS: the model file (default Pkinase; "ten": ten duet synth-model models of 90 to
#   420 nodes, one pass); RESIDUES (default 1e9): a duet synth-db
#   database, packed by duet makedb; SMS (default "8 16 32 64 0"; 0 = the whole GPU);
#   ROUNDS (default 2); TESTS=yes also runs `ctest -L gpu` after the build; HYBRID (default
#   empty): more options for the hybrid runs, e.g. "--policy adaptive".
# Run on the GPU machine from the source root with .device carried (see
# bench/many_models.sh). Writes times.tsv, rates.tsv, gpu_sms.png and the comparisons
# under $OUT.
set -uo pipefail
rounds=${ROUNDS:-2}; residues=${RESIDUES:-1e9}; sms_list=${SMS:-8 16 32 64 0}
source bench/device_env.sh
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
  ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
targets="duet"; [ "${TESTS:-no}" = yes ] && targets="all"
cmake --build build-dev -j16 --target $targets > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
duet=./build-dev/duet
if [ "${TESTS:-no}" = yes ]; then
  ctest --test-dir build-dev -L gpu -j4 > "$out/ctest_gpu.txt" 2>&1; tail -3 "$out/ctest_gpu.txt"
fi
work=/tmp/gpu-sms; mkdir -p $work
models=${MODELS:-/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm}
if [ "$models" = ten ]; then
  models=$work/ten.hmm
  $duet synth-model -L 90 120 150 180 210 240 270 300 350 420 --seed 5 -o $models >/dev/null
fi
packed_synth_db $duet $work/db.packed "$residues"
echo "prepared: $(( $(date +%s) - t0 )) s"
printf "mode\tsms\tround\tseconds\n" > "$out/times.tsv"
run() {  # name sms options...: one whole process, its file kept as $work/<name>.h5
  local name=$1 sms=$2 s ms; shift 2
  s=$(date +%s%N)
  # DUET_TIMES: where the time went (phases, feeders), kept for the first round.
  DUET_TIMES=1 $duet hmmsearch --quiet "$@" --h5 $work/$name.h5 "$models" $work/db.packed \
    > $work/$name.log 2>&1 || echo "$name failed: $(tail -2 $work/$name.log)"
  [ "$round" = 1 ] && cp $work/$name.log "$out/times_$name.txt"
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%s\t%d.%03d\n" "${name%%_*}" "$sms" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
for round in $(seq $rounds); do
  run cpu_r$round all --no-gpu
  for s in $sms_list; do
    run gpu_${s}_r$round "$s" --gpu-only --gpu-sms "$s"
    run hybrid_${s}_r$round "$s" --gpu-min-database 0 --gpu-sms "$s" ${HYBRID:-}
  done
done
for f in $work/gpu_*_r1.h5 $work/hybrid_*_r1.h5; do
  printf "%s: " "$(basename "$f")"; python3 bench/compare_results.py $work/cpu_r1.h5 "$f" | tail -1
done | tee "$out/compare.txt"
python3 - "$work" "$out" "$rounds" "$sms_list" <<'PY'
import sys, h5py
work, out, rounds, sms_list = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
def rate(name):
    with h5py.File(f"{work}/{name}.h5", "r") as f:
        a = f["/run"].attrs
        return float(a["work_total"]) / float(a["scheduler_seconds"]), int(a["gpu_sms"]), float(a["gpu_share"])
rows = []
for r in range(1, rounds + 1):
    cpu, _, _ = rate(f"cpu_r{r}")
    for s in sms_list:
        gpu, granted, _ = rate(f"gpu_{s}_r{r}")
        hyb, _, share = rate(f"hybrid_{s}_r{r}")
        rows.append((r, s, granted, cpu, gpu, hyb, share))
with open(f"{out}/rates.tsv", "w") as t:
    t.write("round\tsms_asked\tgpu_sms\tcpu_Mres_s\tgpu_Mres_s\thybrid_Mres_s\thybrid_gpu_share\t"
            "cpu_over_gpu\thybrid_over_sum\thybrid_over_faster\n")
    for r, s, g, c, gp, h, share in rows:
        t.write(f"{r}\t{s}\t{g}\t{c/1e6:.0f}\t{gp/1e6:.0f}\t{h/1e6:.0f}\t{share:.3f}\t"
                f"{c/gp:.2f}\t{h/(c+gp):.3f}\t{h/max(c,gp):.3f}\n")
print(open(f"{out}/rates.tsv").read())
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, idx, label in (("cpu", 3, "--no-gpu"), ("gpu", 4, "--gpu-only"), ("hyb", 5, "hybrid")):
        xs = [row[2] for row in rows]
        ax.scatter(xs, [row[idx] / 1e9 for row in rows], label=label)
    ax.scatter([row[2] for row in rows], [(row[3] + row[4]) / 1e9 for row in rows], marker="x",
               label="CPU + GPU-only")
    ax.set_xlabel("SMs of the GPU (--gpu-sms)")
    ax.set_ylabel("G residues / s (scheduler)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{out}/gpu_sms.png", dpi=120)
except ImportError:
    print("no matplotlib: no plot")
PY
