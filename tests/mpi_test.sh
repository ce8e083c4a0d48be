#!/usr/bin/env bash
# duet under mpirun (builds with MPI; CTest label mpi): `mpirun -np N duet ...` gives the
# /results of a single process, bit for bit (datasets and attributes), for hmmsearch on
# a FASTA and a packed database, hmmscan and pairhmm, with 1, 2 and 4 ranks
# (--oversubscribe: this machine may have fewer cores), and with ranks given no work. A
# bad input stops every rank with one message; a rank that dies and a Ctrl-C leave no
# output and no temporary file.
#
# usage: mpi_test.sh DUET COMPARE_RESULTS_PY PAIRHMM_INPUT
# The inputs are made by duet synth-model and synth-db from a seed: DUET_TEST_SEED, else
# a fresh one (printed).
set -uo pipefail
duet=$1 compare=$2 pairhmm_input=$3
python=/usr/bin/python3
seed=${DUET_TEST_SEED:-$((RANDOM * 32768 + RANDOM + 1))}
echo "mpi_test: seed $seed (DUET_TEST_SEED=$seed to replay)"
# Root may run mpirun in a container or CI machine; without it, Open MPI refuses.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Quiet Open MPI's own banners about the aborted jobs these tests make on purpose.
export OMPI_MCA_orte_base_help_aggregate=1
work=$(mktemp -d "${TMPDIR:-/tmp}/duet-mpi-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mpi() { local np=$1; shift; mpirun --oversubscribe -np "$np" "$duet" "$@"; }

# The same /results (datasets and their attributes) in two files.
same_results() {
  "$python" "$compare" "$1" "$2" >compare.out 2>&1 || { cat compare.out; return 1; }
  "$python" - "$1" "$2" <<'EOF' || return 1
import sys, h5py
def attributes(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for k, v in obj.attrs.items():
                out[name + "@" + k] = repr(v)
        f["/results"].visititems(visit)
    return out
a, b = attributes(sys.argv[1]), attributes(sys.argv[2])
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in bad:
    print("attribute differs:", k, a.get(k), b.get(k))
sys.exit(1 if bad else 0)
EOF
}

# How many ranks ran batches, from a result file's /trace.
ranks_with_work() {
  "$python" - "$1" <<'EOF'
import sys, h5py, numpy as np
ranks = set()
with h5py.File(sys.argv[1], "r") as f:
    for g in f["/trace"].values():
        if "rank" in g: ranks |= set(np.unique(g["rank"][()]).tolist())
print(len(ranks))
EOF
}

# Text tables without their comment lines (the command line differs).
same_table() { cmp -s <(grep -v '^#' "$1") <(grep -v '^#' "$2"); }

# Nothing but the inputs and `keep` in the folder: no output, no temporary file.
no_outputs() {
  local extra
  extra=$(ls -A | grep -v -x -e models.hmm -e db.fa -e db.packed -e tiny.fa -e big.fa \
    -e seqs.fa -e single.h5 -e single.tbl -e single.dom -e single_scan.h5 -e pairs_single.h5 \
    -e tiny_single.h5 -e err.txt -e out.txt -e compare.out -e m120.hmm)
  [ -z "$extra" ] || { echo "left behind: $extra"; return 1; }
}

"$duet" synth-model -L 60 120 200 90 300 --seed "$seed" -o models.hmm >/dev/null || exit 1
"$duet" synth-db --model models.hmm --homologs 0.05 --residues 2e6 --seed "$seed" -o db.fa \
  >/dev/null || exit 1
"$duet" makedb db.fa db.packed >/dev/null || exit 1
"$duet" hmmsearch --cpu 2 --h5 single.h5 --tblout single.tbl --domtblout single.dom \
  models.hmm db.fa >/dev/null || exit 1

echo "== hmmsearch, FASTA and packed database, 1, 2 and 4 ranks"
for np in 1 2 4; do
  mpi "$np" hmmsearch --cpu 1 --block-residues 20000 --h5 fa$np.h5 --tblout fa$np.tbl \
    --domtblout fa$np.dom \
    models.hmm db.fa >/dev/null 2>err.txt || { cat err.txt; fail "hmmsearch -np $np exited $?"; }
  same_results single.h5 fa$np.h5 || fail "hmmsearch -np $np: /results differ"
  same_table single.tbl fa$np.tbl || fail "hmmsearch -np $np: --tblout differs"
  same_table single.dom fa$np.dom || fail "hmmsearch -np $np: --domtblout differs"
  ranks=$("$python" -c "import h5py; print(h5py.File('fa$np.h5')['/run'].attrs['ranks'])")
  [ "$ranks" = "$np" ] || fail "hmmsearch -np $np: /run ranks is $ranks"
  working=$(ranks_with_work fa$np.h5)
  [ "$np" -eq 1 ] || [ "$working" -ge 2 ] || fail "hmmsearch -np $np: $working rank(s) had work"
  rm -f fa$np.*
done
for np in 2 4; do
  mpi "$np" hmmsearch --cpu 1 --h5 packed$np.h5 models.hmm db.packed >/dev/null 2>err.txt ||
    { cat err.txt; fail "hmmsearch packed -np $np exited"; }
  same_results single.h5 packed$np.h5 || fail "hmmsearch packed -np $np: /results differ"
  rm -f packed$np.h5
done

echo "== several passes (2 models each), gzip database re-read for each pass, 3 ranks"
gzip -c db.fa >db.fa.gz
DUET_DEBUG_MODELS_PER_PASS=2 mpirun --oversubscribe -x DUET_DEBUG_MODELS_PER_PASS -np 3 "$duet" \
  hmmsearch --cpu 1 --block-residues 20000 --reuse-memory 0 --h5 passes3.h5 models.hmm \
  db.fa.gz >/dev/null 2>err.txt || { cat err.txt; fail "passes -np 3 exited"; }
same_results single.h5 passes3.h5 || fail "passes -np 3: /results differ"
rm -f passes3.h5 db.fa.gz

echo "== test-double GPUs (the CPU kernels on feeder threads) with faults, 2 ranks"
DUET_DEBUG_TEST_GPU=1 DUET_DEBUG_GPU_FAULT_EVERY=3 mpirun --oversubscribe -x DUET_DEBUG_TEST_GPU \
  -x DUET_DEBUG_GPU_FAULT_EVERY -np 2 "$duet" hmmsearch --cpu 1 --block-residues 20000 \
  --gpu-min-database 0 --h5 double2.h5 models.hmm db.fa >/dev/null 2>err.txt ||
  { cat err.txt; fail "test-double GPUs -np 2 exited"; }
same_results single.h5 double2.h5 || fail "test-double GPUs -np 2: /results differ"
gpu_rows=$("$python" -c "
import h5py, numpy as np
f = h5py.File('double2.h5')
print(sum(int((g['device'][()] == 1).sum()) for g in f['/trace'].values() if 'device' in g))")
[ "$gpu_rows" -ge 1 ] || fail "test-double GPUs -np 2: no GPU batch in /trace"
rm -f double2.h5

echo "== ranks given no work: a database of one block among 3 ranks"
head -n 40 db.fa | awk '/^>/ { n++ } n <= 4' >tiny.fa
"$duet" hmmsearch --cpu 1 --h5 tiny_single.h5 models.hmm tiny.fa >/dev/null || exit 1
mpi 3 hmmsearch --cpu 1 --h5 tiny3.h5 models.hmm tiny.fa >/dev/null 2>err.txt ||
  { cat err.txt; fail "tiny -np 3 exited"; }
same_results tiny_single.h5 tiny3.h5 || fail "tiny -np 3: /results differ"
working=$(ranks_with_work tiny3.h5)
[ "$working" -lt 3 ] || fail "tiny -np 3: every rank had work (expected at least one idle rank)"
rm -f tiny3.h5

echo "== hmmscan, 2 ranks"
awk '/^>/ { n++ } n <= 30' db.fa >seqs.fa
"$duet" hmmscan --cpu 2 --h5 single_scan.h5 models.hmm seqs.fa >/dev/null || exit 1
mpi 2 hmmscan --cpu 1 --h5 scan2.h5 models.hmm seqs.fa >/dev/null 2>err.txt ||
  { cat err.txt; fail "hmmscan -np 2 exited"; }
same_results single_scan.h5 scan2.h5 || fail "hmmscan -np 2: /results differ"
rm -f scan2.h5

echo "== pairhmm, 1, 2 and 4 ranks"
"$duet" pairhmm --cpu 2 --h5 pairs_single.h5 "$pairhmm_input" >/dev/null || exit 1
for np in 1 2 4; do
  mpi "$np" pairhmm --cpu 1 --block-cells 1000000 --h5 pairs$np.h5 "$pairhmm_input" \
    >/dev/null 2>err.txt || { cat err.txt; fail "pairhmm -np $np exited"; }
  same_results pairs_single.h5 pairs$np.h5 || fail "pairhmm -np $np: /results differ"
  working=$(ranks_with_work pairs$np.h5)
  [ "$np" -eq 1 ] || [ "$working" -ge 2 ] || fail "pairhmm -np $np: $working rank(s) had work"
  rm -f pairs$np.h5
done

echo "== a bad input: one message, every rank stops, nothing written"
mpi 3 hmmsearch --cpu 1 --h5 bad.h5 models.hmm missing.fa >out.txt 2>err.txt
status=$?
[ "$status" -ne 0 ] || fail "a missing database: exit 0"
n=$(grep -c "missing.fa" err.txt)
[ "$n" -eq 1 ] || { cat err.txt; fail "a missing database: $n messages naming it, not 1"; }
no_outputs || fail "a missing database left files"
mpi 2 papara -t a.tre -s a.phy >out.txt 2>err.txt
[ $? -ne 0 ] && grep -q "runs in one process" err.txt ||
  { cat err.txt; fail "papara under 2 ranks did not refuse"; }

echo "== a rank that dies: the job fails naming it, nothing written"
DUET_DEBUG_KILL_RANK=2 mpirun --oversubscribe -x DUET_DEBUG_KILL_RANK -np 3 "$duet" hmmsearch \
  --cpu 1 --h5 dead.h5 --tblout dead.tbl models.hmm db.fa >out.txt 2>err.txt
status=$?
[ "$status" -ne 0 ] || fail "a dead rank: exit 0"
grep -q "rank 1" err.txt || { cat err.txt; fail "a dead rank: rank 1 not named"; }
no_outputs || fail "a dead rank left files"

echo "== Ctrl-C (SIGINT to mpirun): every rank stops, nothing written"
# 120 models (two passes), so that the job is still searching when the signal comes on a
# fast machine (30 models ended before it on a 2-core AMD EPYC).
"$duet" synth-model $(for _ in 1 2 3 4; do printf -- '-L %s ' $(seq 100 10 390); done) \
  --seed "$seed" -o m120.hmm >/dev/null || exit 1
"$duet" synth-db --model m120.hmm --residues 2e7 --seed "$seed" -o big.fa >/dev/null || exit 1
DUET_TIMES=1 mpirun --oversubscribe -x DUET_TIMES -np 2 "$duet" hmmsearch --cpu 1 \
  --h5 stopped.h5 --tblout stopped.tbl m120.hmm big.fa >out.txt 2>err.txt &
job=$!
for _ in $(seq 1 300); do
  [ "$(grep -c 'search starts' err.txt)" -ge 2 ] && break
  sleep 0.1
done
sleep 0.5
kill -INT "$job"
wait "$job"
status=$?
[ "$status" -ne 0 ] || fail "Ctrl-C: exit 0"
n=$(grep -c -e "terminated; no output written" -e "interrupted; no output written" err.txt)
[ "$n" -ge 1 ] || { tail -20 err.txt; fail "Ctrl-C: no rank said it stopped"; }
no_outputs || fail "Ctrl-C left files"

if [ "$failures" -ne 0 ]; then
  echo "mpi_test: $failures failure(s) (seed $seed)"
  exit 1
fi
echo "mpi_test: all passed"
