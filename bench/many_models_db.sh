#!/bin/bash
# Many models against synthetic databases of a few sizes, on the GPU machine: whole
# processes of duet --no-gpu, --gpu-only and the default mode, side by side with 16
# single-thread hmmsearch processes (the models split 16 ways), in rounds; the duet runs'
# /results must be identical (bench/compare_results.py). Where the default mode's choice
# of GPU (--gpu-min-database, --gpu-min-cells) and its CPU/GPU split show.
#   MODELS (1000) duet synth-model models with a Pfam-like length spread (median about
#   170, 20 to 1200); SIZES ("5e6 2e7") residues of each duet synth-db database (packed
#   by duet makedb; HMMER reads its FASTA); ROUNDS (2); HMMER=no skips HMMER.
# Run from the source root with .device carried, after a build in build-dev (as
# bench/many_models.sh makes it). Writes times.tsv under $OUT.
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-2}
source bench/device_env.sh
source bench/many_models_common.sh
duet=./build-dev/duet; work=/tmp/many_db; mkdir -p $work
synth_models $duet $work $models
split_models $work
printf "case\tround\tseconds\n" > "$out/times.tsv"
for size in ${SIZES:-5e6 2e7}; do
  $duet synth-db --residues $size --homologs 0.002 --model $work/models.hmm --seed 7 \
    -o $work/db.fa > /dev/null
  $duet makedb $work/db.fa $work/db.duetdb > /dev/null
  for round in $(seq $rounds); do
    time_it "$size-cpu" $duet hmmsearch --quiet --no-gpu --h5 $work/cpu.h5 $work/models.hmm $work/db.duetdb
    time_it "$size-gpu" $duet hmmsearch --quiet --gpu-only --h5 $work/gpu.h5 $work/models.hmm $work/db.duetdb
    time_it "$size-default" $duet hmmsearch --quiet --h5 $work/default.h5 $work/models.hmm $work/db.duetdb
    [ "${HMMER:-yes}" = yes ] && [ "$round" = 1 ] && time_it "$size-hmmer16" hmmer16 $work/db.fa
  done
  for mode in gpu default; do
    python3 bench/compare_results.py $work/cpu.h5 $work/$mode.h5 | tail -1
  done
  # The default mode's choice and split, from the file.
  python3 - $work/default.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    skipped = f["/run"].attrs["gpus_skipped_small_database"]
    cpu = gpu = 0
    for q in f["/trace"]:
        a = f["/trace"][q].attrs
        if "trace_in" in a: continue
        t = f["/trace"][q]
        if "device" not in t: continue
        dev, res, stage = t["device"][:], t["residues"][:], t["stage"][:]
        for d, r, s in zip(dev, res, stage):
            s = s.decode() if isinstance(s, bytes) else s
            if s in ("post", "fault"): continue
            if d == 0: cpu += r
            else: gpu += r
    share = cpu / (cpu + gpu) if cpu + gpu else 0
    print(f"default mode: GPUs skipped {bool(skipped)}; residues of filter work on the CPU {share:.1%}")
PY
done
