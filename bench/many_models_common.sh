# Sourced by bench/many_models.sh, bench/many_models_db.sh and bench/pass_shape.sh (after
# bench/device_env.sh, which sets $out; hmmer16 and time_it use $work).
# synth_models DUET WORK COUNT: WORK/models.hmm, COUNT duet synth-model models with a
#   Pfam-like length spread (log-normal, median about 170, 20 to 1200; seed 7).
synth_models() {
  local lengths
  lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range($3)))")
  "$1" synth-model $lengths --seed 7 -o "$2/models.hmm" > /dev/null
}
# split_models WORK: WORK/models.hmm split 16 ways (WORK/part0.hmm to part15.hmm), for
#   16 HMMER processes.
split_models() {
  python3 - "$1" <<'PY'
import sys
w = sys.argv[1]
models = [m for m in open(w + "/models.hmm").read().split("//\n") if m.strip()]
for i in range(16):
    open(f"{w}/part{i}.hmm", "w").write("".join(m + "//\n" for m in models[i::16]))
PY
}
# hmmer16 DATABASE: 16 single-thread hmmsearch processes, one per WORK/part*.hmm, at once.
hmmer16() {
  for i in $(seq 0 15); do
    hmmsearch --cpu 1 -o /dev/null --tblout $work/hmmer$i.tbl $work/part$i.hmm "$1" &
  done
  wait
}
# time_it NAME COMMAND...: runs COMMAND (its output in $work/NAME.log) and adds
#   "NAME <tab> $round <tab> seconds" to $out/times.tsv, printing it too.
time_it() {
  local name=$1; shift
  local s=$(date +%s%N)
  "$@" > "$work/$name.log" 2>&1 || echo "$name failed: $(tail -2 "$work/$name.log")"
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%d.%03d\n" "$name" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
