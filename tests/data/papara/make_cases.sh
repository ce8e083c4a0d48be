#!/usr/bin/env bash
# Regenerate the PaPaRa 2.5 reference cases in this directory.
#
#   PAPARA=/path/to/papara [PAPARA_SCORES=/path/to/papara_scores] ./make_cases.sh [outdir]
#
# Needs python3, INDELible (Debian package `indelible`) and a PaPaRa 2.5 binary
# (sim82/papara_nt 242b717 + sim82/ivy_mike 3269b7b). PAPARA_SCORES, if set, is the
# same build with one added block that writes each query's best edge and score; it
# produces best_<mode>.txt ("name edge score" per query; default, c and p only) and
# must write the same alignment as PAPARA.
#
# Each caseNN/ gets ref.tre, ref.phy, queries.fa, expected_<mode>.{phy,fa},
# and cmd.txt listing the simulator arguments and the PaPaRa command per mode.
# A case made with --protein (amino acids) runs every PaPaRa mode with -a.
# A case whose PaPaRa run fails is retried with the seed plus 1000.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
: "${PAPARA:?set PAPARA to the papara 2.5 binary}"
PAPARA=$(readlink -f "$PAPARA")
[[ -n "${PAPARA_SCORES:-}" ]] && PAPARA_SCORES=$(readlink -f "$PAPARA_SCORES")
command -v indelible >/dev/null || { echo "indelible not found (apt-get install indelible)" >&2; exit 1; }

# mode name -> PaPaRa options; output file suffix
mode_opts() {
  case $1 in
    default) echo "" ;;
    c) echo "-c" ;;
    r) echo "-r" ;;
    p) echo "-p $2" ;;
    g) echo "-g" ;;
  esac
}

# run one PaPaRa mode for case directory $1 ($4: -a for a protein case, or empty)
run_mode() {
  local dir=$1 mode=$2 p=$3 alphabet=$4 ext tmp
  local -a opts
  read -ra opts <<<"$alphabet $(mode_opts "$mode" "$p")"
  ext=phy; [[ $mode == g ]] && ext=fa
  tmp=$(mktemp -d)
  (cd "$tmp" && timeout 120 "$PAPARA" -t "$dir/ref.tre" -s "$dir/ref.phy" -q "$dir/queries.fa" \
      -n run "${opts[@]}" >stdout.txt 2>&1) || { cat "$tmp/stdout.txt" >&2; rm -rf "$tmp"; return 1; }
  cp "$tmp/papara_alignment.run" "$dir/expected_$mode.$ext"
  # thread count must not matter
  (cd "$tmp" && timeout 120 "$PAPARA" -t "$dir/ref.tre" -s "$dir/ref.phy" -q "$dir/queries.fa" \
      -n run2 -j 2 "${opts[@]}" >/dev/null 2>&1) || { rm -rf "$tmp"; return 1; }
  cmp -s "$tmp/papara_alignment.run" "$tmp/papara_alignment.run2" || { echo "-j 2 differs" >&2; rm -rf "$tmp"; return 1; }
  if [[ -n "${PAPARA_SCORES:-}" ]]; then
    (cd "$tmp" && timeout 120 "$PAPARA_SCORES" -t "$dir/ref.tre" -s "$dir/ref.phy" -q "$dir/queries.fa" \
        -n run3 "${opts[@]}" >/dev/null 2>&1) || { rm -rf "$tmp"; return 1; }
    cmp -s "$tmp/papara_alignment.run" "$tmp/papara_alignment.run3" || { echo "papara_scores differs" >&2; rm -rf "$tmp"; return 1; }
    # -r and -g do not change scoring: their best edges equal default mode's
    [[ $mode == r || $mode == g ]] || cp "$tmp/papara_bestscores.run3" "$dir/best_$mode.txt"
  fi
  echo "expected_$mode.$ext: papara -t ref.tre -s ref.phy -q queries.fa ${opts[*]}" >>"$dir/cmd.txt"
  rm -rf "$tmp"
}

# make_case NN SEED "MODES" "P-PARAMS" SIMULATOR-ARGS...
make_case() {
  local nn=$1 seed=$2 modes=$3 p=$4; shift 4
  local dir=$out/case$nn try m ok alphabet=
  [[ " $* " == *" --protein "* ]] && alphabet=-a
  for try in 0 1 2 3 4; do
    rm -rf "$dir"; mkdir -p "$dir"
    python3 "$here/papara_sim.py" --outdir "$dir" --seed $((seed + 1000 * try)) "$@"
    echo "inputs: papara_sim.py --seed $((seed + 1000 * try)) $*" >"$dir/cmd.txt"
    ok=1
    for m in $modes; do
      run_mode "$dir" "$m" "$p" "$alphabet" || { ok=0; break; }
    done
    if ((ok)); then echo "case$nn: seed $((seed + 1000 * try)), modes: $modes"; return 0; fi
    echo "case$nn: PaPaRa failed with seed $((seed + 1000 * try)); retrying" >&2
  done
  echo "case$nn: giving up" >&2; return 1
}

#          NN seed modes                 -p values      simulator arguments
make_case 01 101 "default c r p g"      -4:-2:3:-4     --taxa 4  --cols 30  --reads 5  --sources 3
make_case 02 102 "default c r"          -               --taxa 6  --cols 50  --reads 8  --rooted
make_case 03 103 "default c p"          -2:-1:3:-5     --taxa 8  --cols 80  --reads 10 --iupac --dirty 0.3
make_case 04 104 "default c r g"        -               --taxa 10 --cols 120 --reads 15 --allgap
make_case 05 105 "default c"            -               --taxa 12 --cols 100 --reads 12 --rooted --iupac
make_case 06 106 "default c r p"        -5:-2:2:-4     --taxa 16 --cols 150 --reads 20 --phy-queries 5
make_case 07 107 "default c"            -               --taxa 20 --cols 200 --reads 25 --dirty 0.5 --fasta-desc
make_case 08 108 "default c p"          -3:-2:1:-2     --taxa 25 --cols 180 --reads 30 --allgap --iupac --uracil
make_case 09 109 "default c"            -               --taxa 30 --cols 200 --reads 30 --interleaved --read-max 120
make_case 10 110 "default c"            -               --taxa 40 --cols 300 --reads 60 --read-max 100 --bl-max 0.1
make_case 11 111 "default c r p g"      -4:-1:2:-3     --taxa 5  --cols 40  --reads 6  --dirty 1 --long-names --uracil --fasta-desc
make_case 12 112 "default c p"          -6:-1:3:-4     --taxa 14 --cols 160 --reads 20 --iupac --phy-queries 2 --interleaved
# protein (-a)
make_case 13 113 "default c r p g"      -4:-1:3:-5     --protein --taxa 5  --cols 40  --reads 6  --dirty 0.5 --iupac
make_case 14 114 "default c"            -               --protein --taxa 9  --cols 90  --reads 12 --rooted --allgap
make_case 15 115 "default c p"          -3:-2:1:-2     --protein --taxa 14 --cols 140 --reads 18 --phy-queries 2 --interleaved --iupac
