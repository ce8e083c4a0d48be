#!/usr/bin/env bash
# CPU worker scaling of a whole search: duet hmmsearch --no-gpu --cpu N against HMMER's
# hmmsearch --cpu N in the same run, alternating the two tools, for each N given.
# Prints one line per run and a summary table (best time of each tool and N, speedup over
# N=1, efficiency = speedup / N, hmmsearch / duet). Checks its answers: duet's reported
# targets are the same for every N, and the same as hmmsearch's.
#   usage: bench/cpu_scaling.sh DUET HMMSEARCH MODEL.hmm DB.fasta "1 2 4" [repeats]
set -euo pipefail
duet=${1:?usage: cpu_scaling.sh DUET HMMSEARCH MODEL DB "N..." [repeats]}
hmmsearch=${2:?}; model=${3:?}; db=${4:?}; counts=${5:?}; repeats=${6:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() {  # wall seconds of a command, its output discarded
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
targets() { grep -v '^#' "$1" | awk '{print $1}' | sort; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# model $model, database $db ($(stat -c %s "$db") bytes)"
declare -A best
for n in $counts; do
  for r in $(seq "$repeats"); do
    t=$(seconds "$hmmsearch" --cpu "$n" --nonull2 --tblout "$work/h$n.tbl" -o /dev/null "$model" "$db")
    echo "hmmsearch --cpu $n run $r: $t s"
    if [ -z "${best[h$n]:-}" ] || less "$t" "${best[h$n]}"; then best[h$n]=$t; fi
    t=$(seconds "$duet" hmmsearch --quiet --no-gpu --cpu "$n" --tblout "$work/d$n.tbl" --h5 "$work/d$n.h5" "$model" "$db")
    echo "duet --cpu $n run $r: $t s"
    if [ -z "${best[d$n]:-}" ] || less "$t" "${best[d$n]}"; then best[d$n]=$t; fi
  done
done

first=${counts%% *}
status=0
for n in $counts; do
  if ! cmp -s <(targets "$work/d$n.tbl") <(targets "$work/d$first.tbl"); then
    echo "ERROR: duet --cpu $n reported other targets than --cpu $first" >&2; status=1
  fi
  if ! cmp -s <(targets "$work/d$n.tbl") <(targets "$work/h$n.tbl"); then
    echo "ERROR: duet and hmmsearch --cpu $n reported different targets" >&2; status=1
  fi
done
echo "# reported targets: $(targets "$work/d$first.tbl" | wc -l) (duet, every N; checked against hmmsearch)"
echo
echo "| N | hmmsearch (s) | speedup | efficiency | duet (s) | speedup | efficiency | hmmsearch / duet |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for n in $counts; do
  h=${best[h$n]}; d=${best[d$n]}; h1=${best[h$first]}; d1=${best[d$first]}
  awk -v n="$n" -v f="$first" -v h="$h" -v d="$d" -v h1="$h1" -v d1="$d1" 'BEGIN {
    printf "| %s | %.2f | %.2f | %.0f%% | %.2f | %.2f | %.0f%% | %.2f |\n", n, h, h1 / h, 100 * h1 / h / (n / f),
           d, d1 / d, 100 * d1 / d / (n / f), h / d }'
done
exit $status
