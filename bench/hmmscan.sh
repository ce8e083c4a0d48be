#!/bin/bash
# duet hmmscan beside HMMER's hmmscan on the GPU machine (issue 19's benchmark): MODELS
# (default 1000) synthetic Pfam-like models (duet synth-model, median about 170 nodes)
# against a synthetic proteome of 2.26 M residues (duet synth-db), whole processes timed
# in rounds: duet hmmscan --no-gpu and default, and HMMER's strongest arrangement, 16 x
# hmmscan --cpu 1 over the sequences split 16 ways (hmmscan uses extra threads poorly).
# The reported hits of both are counted (their --tblout rows). Run from the source root
# with .device carried and duet built in build-dev (bench/many_models.sh builds it), or
# set DUET. Writes times.tsv under $OUT.
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-2}
source bench/device_env.sh
duet=${DUET:-./build-dev/duet}
work=/tmp/scan; mkdir -p $work
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range($models)))")
$duet synth-model $lengths --seed 7 -o $work/models.hmm > /dev/null
$duet synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 \
  -o $work/proteome.fa > /dev/null
# hmmpress wants unique names; synth-model's may repeat.
awk '/^NAME / { $0 = "NAME  m" (++n) "_" $2 } { print }' $work/models.hmm > $work/unique.hmm
mv $work/unique.hmm $work/models.hmm
rm -f $work/models.hmm.h3?; hmmpress $work/models.hmm > /dev/null || exit 1
python3 - "$work" <<'EOF'
import sys
w = sys.argv[1]
seqs = open(w + "/proteome.fa").read().split("\n>")
seqs = [s if s.startswith(">") else ">" + s for s in seqs]
for i in range(16):
    open(f"{w}/q{i}.fa", "w").write("\n".join(seqs[i::16]) + "\n")
EOF
hmmer16() {
  for i in $(seq 0 15); do hmmscan --cpu 1 -o /dev/null --tblout $work/h$i.tbl $work/models.hmm $work/q$i.fa & done
  wait
}
seconds() { local s=$(date +%s%N); "$@" > /dev/null 2>&1; awk -v a=$s -v b=$(date +%s%N) 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
printf "case\tround\tseconds\n" > "$out/times.tsv"
for r in $(seq $rounds); do
  printf "scan-cpu\t$r\t%s\n" "$(seconds $duet hmmscan --quiet --no-gpu --tblout $work/d.tbl --h5 $work/d.h5 $work/models.hmm $work/proteome.fa)" >> "$out/times.tsv"
  printf "scan-default\t$r\t%s\n" "$(seconds $duet hmmscan --quiet --tblout $work/d2.tbl --h5 $work/d2.h5 $work/models.hmm $work/proteome.fa)" >> "$out/times.tsv"
  printf "scan-hmmer16\t$r\t%s\n" "$(seconds hmmer16)" >> "$out/times.tsv"
done
cat "$out/times.tsv"
echo "reported hits: duet $(grep -vc '^#' $work/d.tbl), hmmscan $(cat $work/h*.tbl | grep -vc '^#')"
