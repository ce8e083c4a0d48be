#!/usr/bin/env python3
"""Pair-HMM benchmark inputs in the batch format, from a real batch file (10s.in).

  python3 bench/pairhmm_inputs.py copies SOURCE N OUT      SOURCE's batches N times over
  python3 bench/pairhmm_inputs.py small SOURCE BATCHES OUT [SEED]
      BATCHES small batches as one active region gives them: each takes 10 to 40 reads
      and 1 to 4 haplotypes of one batch of SOURCE, drawn with a seeded generator (the
      seed is printed), reads repeated when the batch has fewer.
"""
import random
import sys


def read_batches(path):
    with open(path) as f:
        lines = [line.rstrip('\n') for line in f if line.strip()]
    batches, i = [], 0
    while i < len(lines):
        reads, haplotypes = (int(x) for x in lines[i].split())
        batches.append((lines[i + 1:i + 1 + reads],
                        lines[i + 1 + reads:i + 1 + reads + haplotypes]))
        i += 1 + reads + haplotypes
    return batches


def write_batch(out, reads, haplotypes):
    out.write('%d %d\n' % (len(reads), len(haplotypes)))
    for line in reads + haplotypes:
        out.write(line + '\n')


def main(argv):
    if len(argv) >= 4 and argv[0] == 'copies':
        batches = read_batches(argv[1])
        with open(argv[3], 'w') as out:
            for _ in range(int(argv[2])):
                for reads, haplotypes in batches:
                    write_batch(out, reads, haplotypes)
        return 0
    if len(argv) >= 4 and argv[0] == 'small':
        batches = read_batches(argv[1])
        seed = int(argv[4]) if len(argv) > 4 else 21
        print('pairhmm_inputs.py small: seed %d' % seed)
        rng = random.Random(seed)
        pairs = 0
        with open(argv[3], 'w') as out:
            for _ in range(int(argv[2])):
                reads, haplotypes = rng.choice(batches)
                r = [rng.choice(reads) for _ in range(rng.randint(10, 40))]
                h = [rng.choice(haplotypes) for _ in range(rng.randint(1, 4))]
                pairs += len(r) * len(h)
                write_batch(out, r, h)
        print('%s: %s batches, %d pairs' % (argv[3], argv[2], pairs))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
