# Sourced by bench/hybrid_rounds.sh and bench/pairhmm_rounds.sh.
# compare_with_first DIR RUN...: every run's DIR/NAME.h5 against the first run's
# (bench/compare_results.py), a line per run; RUN is "NAME|BINARY|OPTIONS".
compare_with_first() {
  local dir=$1 first=${2%%|*} run name
  shift 2
  for run in "$@"; do
    name=${run%%|*}
    printf '%-24s ' "$name"
    python3 "$(dirname "${BASH_SOURCE[0]}")/compare_results.py" "$dir/$first.h5" "$dir/$name.h5" 2>&1 | tail -1
  done
}
