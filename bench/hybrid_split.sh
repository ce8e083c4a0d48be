#!/bin/bash
# Many models (1,000 synthetic Pfam-like models against a 2.26 M-residue synthetic
# proteome, as bench/many_models.sh makes them) in the forced hybrid mode under several
# CPU/GPU splits, beside --no-gpu: whole processes, milliseconds, two rounds each; then
# /results of three of them against --no-gpu, and each split's /run shares. Run on the GPU
# machine from the source root with .device carried (see bench/many_models.sh).
set -uo pipefail
source bench/device_env.sh
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF > $out/cmake.log 2>&1
cmake --build build-dev -j16 --target duet > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
d=./build-dev/duet; w=/tmp/many; mkdir -p $w
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range(1000)))")
$d synth-model $lengths --seed 7 -o $w/models.hmm > /dev/null
$d synth-db --residues 2.26e6 --homologs 0.002 --model $w/models.hmm --seed 7 -o $w/proteome.fa > /dev/null
run() { local name=$1; shift; for r in 1 2; do s=$(date +%s%N); $d hmmsearch --quiet "$@" --h5 $w/$name.h5 $w/models.hmm $w/proteome.fa > $w/$name.log 2>&1 || echo "$name failed $(tail -1 $w/$name.log)"; echo "$name $r $(( ($(date +%s%N) - s) / 1000000 ))"; done; }
run cpu --no-gpu
run cpu20k --no-gpu --block-residues 20000
run forced --gpu-min-database 0
run f20k --gpu-min-database 0 --block-residues 20000
run f20k_b32 --gpu-min-database 0 --block-residues 20000 --gpu-batch-blocks 32
run f20k_s70 --gpu-min-database 0 --block-residues 20000 --policy static --static-cpu-fraction 0.7
run f20k_s80_1f --gpu-min-database 0 --block-residues 20000 --policy static --static-cpu-fraction 0.8 --gpu-feeders 1
run f20k_s65_1f --gpu-min-database 0 --block-residues 20000 --policy static --static-cpu-fraction 0.65 --gpu-feeders 1
run f20k_adapt --gpu-min-database 0 --block-residues 20000 --policy adaptive
run f20k_adapt_1f --gpu-min-database 0 --block-residues 20000 --policy adaptive --gpu-feeders 1
for v in forced f20k_s70 f20k_adapt; do python3 bench/compare_results.py $w/cpu.h5 $w/$v.h5 | tail -1; done
python3 - <<'PY'
import h5py
for v in ["f20k_s70", "f20k_s80_1f", "f20k_adapt", "f20k_adapt_1f", "f20k_b32"]:
    try:
        f = h5py.File(f"/tmp/many/{v}.h5", "r"); a = f["run"].attrs
        print(v, {k: a[k] for k in a if k in ("cpu_share", "gpu_share", "cpu_workers", "gpu_feeders", "idle_tail_seconds", "blocks")})
    except Exception as e:
        print(v, e)
PY
