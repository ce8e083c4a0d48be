#!/bin/bash
# Kernel-only time of the model set's launches (HmmGpuEngine::set_models) under Nsight
# Compute on the GPU machine: 64 Pfam-like models (the first pass of bench/many_models.sh's
# 1,000; log-normal lengths, median about 170) against the synthetic proteome, one
# --gpu-only pass. Prints each set kernel's launches and durations and the models' node
# sum, from which the MSV set kernel's rate follows (cells = nodes x residues). Run from
# the source root with .device carried.
set -uo pipefail
source bench/device_env.sh
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-dev -j16 --target duet > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
duet=./build-dev/duet
work=/tmp/set-ncu; mkdir -p $work
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range(1000)))")
$duet synth-model $lengths --seed 7 -o $work/all.hmm > /dev/null
$duet synth-db --residues 2.26e6 --homologs 0.002 --model $work/all.hmm --seed 7 -o $work/proteome.fa > /dev/null
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
models = [m for m in open(w + "/all.hmm").read().split("//\n") if m.strip()][:64]
open(w + "/models.hmm", "w").write("".join(m + "//\n" for m in models))
nodes = sum(int(l.split()[1]) for m in models for l in m.splitlines() if l.startswith("LENG"))
print("models 64, nodes", nodes)
PY
grep -c '^>' $work/proteome.fa | sed 's/^/sequences /'
ncu --clock-control none --kernel-name regex:'set_' --metrics gpu__time_duration.sum \
  --csv $duet hmmsearch --quiet --gpu-only --gpu-feeders 1 -o /dev/null $work/models.hmm \
  $work/proteome.fa > $out/ncu.csv 2> $out/ncu.err || tail -5 $out/ncu.err
python3 - $out/ncu.csv <<'PY'
import csv, sys, collections, re
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; data = rows[1:]
k = head.index("Kernel Name"); v = head.index("Metric Value"); u = head.index("Metric Unit")
total = collections.defaultdict(float); count = collections.Counter()
for r in data:
    m = re.search(r"(\w+_kernel)(<[^>]*>)?", r[k])
    name = m.group(1) + (m.group(2) or "") if m else r[k]
    scale = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1, "second": 1}[r[u]]
    total[name] += float(r[v].replace(",", "")) * scale; count[name] += 1
for name in sorted(total):
    print(f"{name}\tlaunches {count[name]}\t{total[name]*1e3:.3f} ms")
PY
