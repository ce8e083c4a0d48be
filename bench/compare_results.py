#!/usr/bin/env python3
"""Compares the /results groups of two duet result files bit for bit (NaN equals NaN).
usage: compare_results.py A.h5 B.h5   (exit 1 and a line per difference when they differ)"""
import sys
import h5py
import numpy as np

def datasets(f):
    out = {}
    f["/results"].visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out

a, b = (datasets(h5py.File(p, "r")) for p in sys.argv[1:3])
bad = [k for k in sorted(set(a) | set(b))
       if k not in a or k not in b or a[k].shape != b[k].shape
       or not (np.array_equal(a[k], b[k], equal_nan=True) if a[k].dtype.kind == "f" else np.array_equal(a[k], b[k]))]
for k in bad:
    print("differs:", k)
print(f"{len(a)} datasets compared: {'identical' if not bad else 'DIFFERENT'}")
sys.exit(1 if bad else 0)
