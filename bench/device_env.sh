# Sourced first by the scripts that run on the GPU machine (with .device carried, see
# shared/device/README.md): the carried Debian packages, HMMER and the example data where
# duet's defaults look for them, and what the machine is. Sets $out (from $OUT).
out=${OUT:-device-out}; mkdir -p "$out"
source .device/setup.sh
export PATH=/opt/deps/usr/bin:$PATH
# On a machine set up before these packages were carried: unpack them now.
[ -x /opt/deps/usr/bin/hmmsearch ] || for f in .device/debs/{hmmer,libdivsufsort3,hmmer-examples,mmseqs2-examples}_*.deb; do dpkg -x "$f" /opt/deps; done
# The tutorial models and the MMseqs2 database where duet's defaults look for them.
for d in hmmer mmseqs2; do
  [ -e /usr/share/doc/$d ] || { mkdir -p /usr/share/doc && ln -s /opt/deps/usr/share/doc/$d /usr/share/doc/$d; }
done
nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)"; date -u | tee "$out/date.txt"
# packed_synth_db DUET DB RESIDUES: a packed database at DB of about RESIDUES residues, duet
# synth-db's (seed 5; at most 100 M residues, repeated up to RESIDUES: names repeat, which
# the search does not mind), made once.
packed_synth_db() {
  local duet=$1 db=$2 residues=$3 part copies
  [ -f "$db" ] && return
  part=$(python3 -c "print(min(1e8, $residues))")
  "$duet" synth-db --residues "$part" --seed 5 -o "$db.part.fa" > /dev/null
  copies=$(python3 -c "print(max(1, round($residues / $part)))")
  for _ in $(seq 1 "$copies"); do cat "$db.part.fa"; done > "$db.fa"
  rm "$db.part.fa"
  "$duet" makedb "$db.fa" "$db" | tail -1
  rm "$db.fa"
}
