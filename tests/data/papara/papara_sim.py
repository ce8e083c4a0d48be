#!/usr/bin/env python3
"""Random inputs for `duet papara` tests and benchmarks.

Builds a random tree over reference taxa plus "source" taxa, lets INDELible
evolve sequences along it, and writes
  ref.tre     the tree restricted to the references (Newick, trifurcating
              root, or a bifurcating root with --rooted)
  ref.phy     the true alignment of the references (PHYLIP), optionally
              with IUPAC codes, N ? . and lower case sprinkled in, all-gap
              columns, extra non-tip rows (queries) and interleaved layout
  queries.fa  reads: fragments of the source taxa's sequences with a few
              substitutions and indels, optionally with characters that
              PaPaRa filters out (lower case, N, U, -)

With --protein the sequences are amino acids (INDELible's WAG model), for
PaPaRa's -a: references may get B, Z and lower case (--iupac), reads B, Z,
lower case, X, * and - (--dirty), all of which PaPaRa drops from reads.

Every branch is at least --bl-min long (no zero-length branches). Every read
keeps at least 15 upper-case bases, so none is emptied by PaPaRa's filter.
Reads never come from reference taxa.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

IUPAC = "RYKMSWBDHV"
AMINO = "ARNDCQEGHILKMFPSTWYV"


class Tree:
    """Unrooted tree as an adjacency map: node -> {neighbour: length}."""

    def __init__(self):
        self.adj = {}
        self.names = {}  # leaf node -> name
        self.next_id = 0

    def node(self, name=None):
        n = self.next_id
        self.next_id += 1
        self.adj[n] = {}
        if name is not None:
            self.names[n] = name
        return n

    def link(self, a, b, length):
        self.adj[a][b] = length
        self.adj[b][a] = length

    def unlink(self, a, b):
        del self.adj[a][b]
        del self.adj[b][a]

    def edges(self):
        return [(a, b) for a in self.adj for b in self.adj[a] if a < b]


def random_tree(names, rng, bl_min, bl_max):
    """Random topology by sequential addition on uniformly chosen edges."""
    assert len(names) >= 3
    t = Tree()
    centre = t.node()
    edges = []
    for nm in names[:3]:
        leaf = t.node(nm)
        t.link(centre, leaf, 0.0)
        edges.append((centre, leaf))
    for nm in names[3:]:
        k = rng.randrange(len(edges))
        a, b = edges[k]
        t.unlink(a, b)
        w = t.node()
        leaf = t.node(nm)
        t.link(a, w, 0.0)
        t.link(w, b, 0.0)
        t.link(w, leaf, 0.0)
        edges[k] = (a, w)
        edges += [(w, b), (w, leaf)]
    for a, b in t.edges():
        t.link(a, b, round(rng.uniform(bl_min, bl_max), 5))
    return t


def prune(t, keep):
    """Remove leaves not in keep; merge the branches of degree-2 nodes."""
    for leaf, nm in list(t.names.items()):
        if nm in keep:
            continue
        (w,) = t.adj[leaf].keys()
        t.unlink(leaf, w)
        del t.adj[leaf]
        del t.names[leaf]
        if len(t.adj[w]) == 2:
            (a, la), (b, lb) = t.adj[w].items()
            t.unlink(w, a)
            t.unlink(w, b)
            del t.adj[w]
            t.link(a, b, round(la + lb, 5))


def _fmt(x):
    return "%.5f" % x


def _sub(t, n, parent):
    if n in t.names:
        return t.names[n]
    kids = [c for c in t.adj[n] if c != parent]
    return "(" + ",".join(_sub(t, c, n) + ":" + _fmt(t.adj[n][c]) for c in kids) + ")"


def newick(t, rng, rooted=False):
    inner = [n for n in t.adj if n not in t.names]
    if not rooted:
        r = rng.choice(inner)
        kids = list(t.adj[r])
        return "(" + ",".join(_sub(t, c, r) + ":" + _fmt(t.adj[r][c]) for c in kids) + ");"
    # bifurcating root placed inside a random branch (both parts > 0)
    a, b = rng.choice(t.edges())
    length = t.adj[a][b]
    la = round(length * rng.uniform(0.25, 0.75), 5)
    lb = round(length - la, 5)
    assert la > 0 and lb > 0
    return "(" + _sub(t, a, b) + ":" + _fmt(la) + "," + _sub(t, b, a) + ":" + _fmt(lb) + ");"


def read_fasta(path):
    seqs, name = {}, None
    order = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                name = line[1:].strip()
                order.append(name)
                seqs[name] = []
            else:
                seqs[name].append(line)
    return order, {k: "".join(v) for k, v in seqs.items()}


def run_indelible(tree_str, length, seed, indel_rate, workdir, protein=False):
    if protein:
        kind, model = "AMINOACID", "  [submodel] WAG"
    else:
        kind, model = "NUCLEOTIDE", "  [submodel] HKY 2.5\n  [statefreq] 0.3 0.2 0.2 0.3"
    ctl = f"""[TYPE] {kind} 1
[SETTINGS]
  [output] FASTA
  [randomseed] {seed}
  [printrates] FALSE
  [markdeletedinsertions] FALSE
[MODEL] m1
{model}
  [rates] 0.2 1.0 0
  [indelmodel] POW 1.8 20
  [indelrate] {indel_rate}
[TREE] t1 {tree_str}
[PARTITIONS] p1 [t1 m1 {length}]
[EVOLVE] p1 1 sim
"""
    with open(os.path.join(workdir, "control.txt"), "w") as f:
        f.write(ctl)
    r = subprocess.run(["indelible"], cwd=workdir, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    out = os.path.join(workdir, "sim_TRUE.fas")
    if r.returncode != 0 or not os.path.exists(out):
        sys.stderr.write(r.stdout[-2000:])
        raise SystemExit("indelible failed")
    return read_fasta(out)[1]


def mutate_read(s, rng, sub_rate, indel_p, dirty, iupac, protein=False):
    s = list(s)
    residues = AMINO if protein else "ACGT"
    for i in range(len(s)):
        if rng.random() < sub_rate:
            s[i] = rng.choice(residues)
    if rng.random() < indel_p:  # insertion of 1-3 random bases
        p = rng.randrange(len(s) + 1)
        s[p:p] = [rng.choice(residues) for _ in range(rng.randint(1, 3))]
    if rng.random() < indel_p and len(s) > 25:  # deletion of 1-3 bases
        p = rng.randrange(len(s) - 4)
        del s[p:p + rng.randint(1, 3)]
    if iupac and rng.random() < 0.4:
        s[rng.randrange(len(s))] = rng.choice("BZ" if protein else IUPAC)
    if protein:
        if dirty and rng.random() < dirty:
            # characters PaPaRa 2.5 deletes from protein queries: lower case, B, Z, X, *, '-'
            for _ in range(rng.randint(1, 4)):
                p = rng.randrange(len(s))
                if rng.randrange(2) == 0:
                    s[p] = s[p].lower()
                else:
                    s.insert(p, rng.choice("BZX*-"))
    elif dirty and rng.random() < dirty:
        # characters PaPaRa 2.5 deletes from queries: lower case, N, U, '-'
        for _ in range(rng.randint(1, 4)):
            p = rng.randrange(len(s))
            kind = rng.randrange(4)
            if kind == 0:
                s[p] = s[p].lower()
            elif kind == 1:
                s.insert(p, rng.choice("Nn"))
            elif kind == 2:
                s.insert(p, rng.choice("Uu"))
            else:
                s.insert(p, "-")
    return "".join(s)


def write_phylip(path, rows, interleaved=False, block=60):
    ncols = len(rows[0][1])
    assert all(len(r) == ncols for _, r in rows)
    w = max(len(n) for n, _ in rows) + 2
    with open(path, "w") as f:
        f.write(f"{len(rows)} {ncols}\n")
        if not interleaved:
            for n, r in rows:
                f.write(n.ljust(w) + r + "\n")
            return

        def spaced(s):
            return " ".join(s[i:i + 10] for i in range(0, len(s), 10))

        for n, r in rows:
            f.write(n.ljust(w) + spaced(r[:block]) + "\n")
        for b in range(block, ncols, block):
            f.write("\n")
            for n, r in rows:
                f.write(spaced(r[b:b + block]) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--taxa", type=int, required=True, help="reference taxa (tree tips)")
    ap.add_argument("--sources", type=int, default=0,
                    help="taxa that only feed reads (default max(3, taxa/3))")
    ap.add_argument("--cols", type=int, required=True, help="target alignment columns")
    ap.add_argument("--reads", type=int, required=True)
    ap.add_argument("--read-min", type=int, default=20)
    ap.add_argument("--read-max", type=int, default=150)
    ap.add_argument("--rooted", action="store_true", help="bifurcating root")
    ap.add_argument("--bl-min", type=float, default=0.01)
    ap.add_argument("--bl-max", type=float, default=0.15)
    ap.add_argument("--indel-rate", type=float, default=0.06)
    ap.add_argument("--iupac", action="store_true",
                    help="IUPAC codes, N ? . and lower case in references, IUPAC in reads")
    ap.add_argument("--uracil", action="store_true", help="some U/u in references")
    ap.add_argument("--allgap", action="store_true",
                    help="keep columns that are gaps in all references, and add a few")
    ap.add_argument("--dirty", type=float, default=0.0,
                    help="fraction of reads given characters PaPaRa filters (lower case, N, U, -)")
    ap.add_argument("--phy-queries", type=int, default=0,
                    help="extra PHYLIP rows (not tree tips) holding aligned source fragments")
    ap.add_argument("--interleaved", action="store_true")
    ap.add_argument("--protein", action="store_true", help="amino acids (PaPaRa's -a)")
    ap.add_argument("--long-names", action="store_true")
    ap.add_argument("--fasta-desc", action="store_true",
                    help="some FASTA headers carry a description after the name")
    ap.add_argument("--overhang", type=float, default=0.3,
                    help="fraction of reads that may reach past the reference window")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    nsrc = a.sources or max(3, a.taxa // 3)
    if a.long_names:
        refs = [f"Ref_taxon_{i:02d}" if i % 3 else f"t{i}" for i in range(1, a.taxa + 1)]
    else:
        width = 2 if a.taxa < 100 else len(str(a.taxa))
        refs = [f"t{i:0{width}d}" for i in range(1, a.taxa + 1)]
    srcs = [f"s{i:03d}" for i in range(1, nsrc + 1)]
    allnames = refs + srcs
    rng.shuffle(allnames)

    full = random_tree(allnames, rng, a.bl_min, a.bl_max)
    full_nwk = newick(full, rng)
    prune(full, set(refs))
    ref_nwk = newick(full, rng, rooted=a.rooted)

    work = tempfile.mkdtemp(prefix="papara_sim_")
    try:
        seqs = run_indelible(full_nwk, a.cols, rng.randrange(1, 1 << 30), a.indel_rate, work,
                             a.protein)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = len(seqs[refs[0]])

    # window of at most `cols` alignment columns
    w0 = rng.randrange(0, total - a.cols + 1) if total > a.cols else 0
    w1 = min(total, w0 + a.cols)
    keep_cols = [j for j in range(w0, w1)
                 if a.allgap or any(seqs[r][j] != "-" for r in refs)]

    ref_rows = {r: [seqs[r][j] for j in keep_cols] for r in refs}
    ncols = len(keep_cols)

    if a.allgap:  # a few explicit all-gap columns, using the gap-like characters
        for _ in range(3):
            p = rng.randrange(ncols + 1)
            for r in refs:
                ref_rows[r].insert(p, "-" if a.protein else rng.choice("-N?.n"))
            keep_cols.insert(p, None)
        ncols += 3
    if a.iupac and a.protein:  # B, Z and lower case (PaPaRa's amino-acid model has no X)
        for r in refs:
            row = ref_rows[r]
            for j in range(ncols):
                if row[j] == "-":
                    continue
                x = rng.random()
                if x < 0.02:
                    row[j] = rng.choice("BZ")
                elif x < 0.04:
                    row[j] = row[j].lower()
    elif a.iupac:
        for r in refs:
            row = ref_rows[r]
            for j in range(ncols):
                if row[j] == "-":
                    continue
                x = rng.random()
                if x < 0.02:
                    row[j] = rng.choice(IUPAC)
                elif x < 0.03:
                    row[j] = rng.choice("N?.")
                elif x < 0.05:
                    row[j] = row[j].lower()
    if a.uracil:
        for r in refs:
            row = ref_rows[r]
            for j in range(ncols):
                if row[j] == "T" and rng.random() < 0.1:
                    row[j] = rng.choice("Uu")

    phy_rows = [(r, "".join(ref_rows[r])) for r in refs]
    rng.shuffle(phy_rows)

    # extra PHYLIP rows: aligned fragments of source taxa over the same columns
    for k in range(a.phy_queries):
        s = rng.choice(srcs)
        row = ["-" if j is None else seqs[s][j] for j in keep_cols]
        res = [j for j, c in enumerate(row) if c != "-"]
        if k > 0 and len(res) > 40:  # fragment; the first stays full length
            ln = rng.randint(30, min(len(res), 120))
            st = rng.randrange(len(res) - ln + 1)
            lo, hi = res[st], res[st + ln - 1]
            row = [c if lo <= j <= hi else "-" for j, c in enumerate(row)]
        if k == 1:
            row = [c.lower() if c != "-" and rng.random() < 0.05 else c for c in row]
        phy_rows.insert(rng.randrange(len(phy_rows) + 1), (f"pq{k + 1:02d}", "".join(row)))

    write_phylip(os.path.join(a.outdir, "ref.phy"), phy_rows, a.interleaved)
    with open(os.path.join(a.outdir, "ref.tre"), "w") as f:
        f.write(ref_nwk + "\n")

    # reads from source taxa only
    with open(os.path.join(a.outdir, "queries.fa"), "w") as f:
        for i in range(a.reads):
            s = rng.choice(srcs)
            lo, hi = w0, w1
            if rng.random() < a.overhang:
                lo = max(0, w0 - rng.randint(0, 15))
                hi = min(total, w1 + rng.randint(0, 15))
            raw = seqs[s][lo:hi].replace("-", "")
            for _ in range(100):
                if len(raw) >= a.read_min:
                    break
                s = rng.choice(srcs)
                raw = seqs[s][lo:hi].replace("-", "")
            ln = rng.randint(min(a.read_min, len(raw)), min(a.read_max, len(raw)))
            st = rng.randrange(len(raw) - ln + 1)
            read = mutate_read(raw[st:st + ln], rng, 0.03, 0.3, a.dirty, a.iupac, a.protein)
            if sum(c in (AMINO if a.protein else "ACGT") for c in read) < 15:
                read = raw[st:st + ln]
            name = f"q{i + 1:03d}_{s}"
            if a.long_names and i == 0:
                name = "query_with_a_rather_long_name_" + name
            hdr = name
            if a.fasta_desc and i % 4 == 1:
                hdr = name + " from " + s + " len=" + str(ln)
            f.write(">" + hdr + "\n")
            for p in range(0, len(read), 60):
                f.write(read[p:p + 60] + "\n")


if __name__ == "__main__":
    sys.setrecursionlimit(100000)
    main()
