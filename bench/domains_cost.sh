#!/bin/bash
# What HMMER's domain definition and null2 cost a whole search (issue 19's benchmark), on
# the GPU machine's 16 cores: the source tree against a baseline built before domain
# definition existed (its scores were hmmsearch --nonull2's), both CPU only, in
# alternating rounds, whole processes timed, beside HMMER's strongest arrangement
# (16 x hmmsearch --cpu 1, the work split evenly):
#   - filter-bound: `many`, MODELS synthetic Pfam-like models against a synthetic proteome
#     of 2.26 M residues with few homologs (as bench/many_models.sh);
#   - hit-rich: `one`, Pkinase against the MMseqs2 examples 10 times (43,000 hits).
# Usage, from the source root with .device carried and the baseline unpacked under it:
#   git archive <rev> | (mkdir -p .device/baseline && tar -x -C .device/baseline)
#   OUT=$OUT BASELINE=.device/baseline bash bench/domains_cost.sh
# The baseline takes -o for its HDF5 file (before --h5). Writes times.tsv under $OUT.
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-3}; baseline=${BASELINE:?BASELINE: the baseline source tree}
source bench/device_env.sh
build() {  # source folder, build folder
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
    > "$out/cmake-$(basename $2).log" 2>&1 &&
    cmake --build "$2" -j16 --target duet > "$out/build-$(basename $2).log" 2>&1 ||
    { grep -B2 -A8 error "$out/build-$(basename $2).log" | head -40; exit 1; }
}
t0=$(date +%s)
build . build-dev
build "$baseline" build-base
echo "builds: $(( $(date +%s) - t0 )) s"
new=./build-dev/duet; old=./build-base/duet
work=/tmp/domains; mkdir -p $work
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range($models)))")
$new synth-model $lengths --seed 7 -o $work/models.hmm > /dev/null
$new synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 \
  -o $work/proteome.fa > /dev/null
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > $work/db1.fa
for i in $(seq 10); do cat $work/db1.fa; done > $work/db10.fa
pk=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
# HMMER's arrangement: the models (many) or the database (one) split 16 ways.
python3 - "$work" <<'EOF'
import sys
w = sys.argv[1]
text = open(w + "/models.hmm").read().split("//\n")
models = [m + "//\n" for m in text if m.strip()]
for i in range(16):
    open(f"{w}/part{i}.hmm", "w").write("".join(models[i::16]))
seqs = open(w + "/db10.fa").read().split("\n>")
seqs = [s if s.startswith(">") else ">" + s for s in seqs]
for i in range(16):
    open(f"{w}/db10.{i}.fa", "w").write("\n".join(seqs[i::16]) + "\n")
EOF
hmmer16() {
  if [ "$1" = many ]; then
    for i in $(seq 0 15); do hmmsearch --cpu 1 -o /dev/null --tblout $work/h$i.tbl $work/part$i.hmm $work/proteome.fa & done
  else
    for i in $(seq 0 15); do hmmsearch --cpu 1 -Z 200000 -o /dev/null --tblout $work/h$i.tbl $pk $work/db10.$i.fa & done
  fi
  wait
}
seconds() { local s=$(date +%s%N); "$@" > /dev/null 2>&1; awk -v a=$s -v b=$(date +%s%N) 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
printf "case\tbuild\tround\tseconds\n" > "$out/times.tsv"
for r in $(seq $rounds); do
  for c in many one; do
    if [ $c = many ]; then hmm=$work/models.hmm; db=$work/proteome.fa; else hmm=$pk; db=$work/db10.fa; fi
    printf "$c\tnew\t$r\t%s\n" "$(seconds $new hmmsearch --quiet --no-gpu --h5 $work/new.h5 $hmm $db)" >> "$out/times.tsv"
    printf "$c\tbaseline\t$r\t%s\n" "$(seconds $old hmmsearch --quiet --no-gpu -o $work/old.h5 $hmm $db)" >> "$out/times.tsv"
    printf "$c\thmmer16\t$r\t%s\n" "$(seconds hmmer16 $c)" >> "$out/times.tsv"
  done
done
cat "$out/times.tsv"
# Where the new build's time goes on the hit-rich case.
DUET_TIMES=1 $new hmmsearch --quiet --no-gpu --h5 $work/new.h5 $pk $work/db10.fa 2>&1 | grep -E "pass|cpu seconds" | head -5
