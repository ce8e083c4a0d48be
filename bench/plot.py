#!/usr/bin/python3
"""Plots for duet throughput studies, from `duet bench` summaries and result files.

  plot.py lengths SUMMARY.csv -o lengths.png   Gc/s against model length per device/ISA/strategy
  plot.py split SUMMARY.csv -o split.png       hybrid throughput and efficiency against the
                                               static CPU fraction, dynamic policy marked
  plot.py timeline RUN.h5 [--query Q] -o t.png every worker's batches over time, from /trace

Needs Debian's python3-matplotlib, python3-h5py and python3-numpy (/usr/bin/python3).
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_summary(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    if not rows:
        sys.exit(f"{path}: no successful runs to plot")
    return rows


def mean(values):
    values = list(values)
    return sum(values) / len(values)


def label_of(row):
    parts = [row["devices"]]
    for key in ("isa", "gpu_strategy", "policy", "cpu"):
        if row.get(key):
            parts.append(f"{key}={row[key]}")
    return ", ".join(parts)


def plot_lengths(args):
    rows = read_summary(args.summary)
    series = defaultdict(lambda: defaultdict(list))
    for r in rows:
        series[label_of(r)][int(r["M"])].append(float(r["gcups"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, points in sorted(series.items()):
        xs = sorted(points)
        ax.plot(xs, [mean(points[x]) for x in xs], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("model length M (nodes)")
    ax.set_ylabel("Gcells/s (whole search)")
    ax.set_title("duet hmmsearch throughput against model length")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


def plot_split(args):
    rows = read_summary(args.summary)
    cpu = mean(float(r["gcups"]) for r in rows if r["devices"] == "cpu") if any(r["devices"] == "cpu" for r in rows) else None
    gpu = mean(float(r["gcups"]) for r in rows if r["devices"] == "gpu") if any(r["devices"] == "gpu" for r in rows) else None
    static = defaultdict(list)
    static_eff = defaultdict(list)
    dynamic, dynamic_eff = [], []
    for r in rows:
        if r["devices"] != "hybrid":
            continue
        if r["policy"] == "static":
            static[float(r["static_cpu_fraction"])].append(float(r["gcups"]))
            if r["hybrid_efficiency"]:
                static_eff[float(r["static_cpu_fraction"])].append(float(r["hybrid_efficiency"]))
        else:
            dynamic.append(float(r["gcups"]))
            if r["hybrid_efficiency"]:
                dynamic_eff.append(float(r["hybrid_efficiency"]))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = sorted(static)
    if xs:
        ax.plot(xs, [mean(static[x]) for x in xs], marker="o", label="hybrid, static split")
    if dynamic:
        ax.axhline(mean(dynamic), color="C1", linestyle="-", label="hybrid, dynamic policy")
    if cpu is not None:
        ax.axhline(cpu, color="C2", linestyle=":", label="CPU only")
    if gpu is not None:
        ax.axhline(gpu, color="C3", linestyle=":", label="GPU only")
    if cpu is not None and gpu is not None:
        ax.axhline(cpu + gpu, color="gray", linestyle="--", label="CPU + GPU")
    ax.set_xlabel("static CPU fraction of residues")
    ax.set_ylabel("Gcells/s")
    ax.set_title("hybrid throughput")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    xe = sorted(static_eff)
    if xe:
        ax2.plot(xe, [mean(static_eff[x]) for x in xe], marker="o", label="static split")
    if dynamic_eff:
        ax2.axhline(mean(dynamic_eff), color="C1", label="dynamic policy")
    ax2.axhline(1.0, color="gray", linestyle="--")
    ax2.set_xlabel("static CPU fraction of residues")
    ax2.set_ylabel("throughput / (CPU-only + GPU-only)")
    ax2.set_title("hybrid efficiency")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


def plot_timeline(args):
    import h5py

    with h5py.File(args.result) as f:
        queries = list(f["/trace"].keys())
        query = args.query or queries[0]
        t = f["/trace"][query]
        worker = t["worker"][:]
        device = t["device"][:]
        stage = t["stage"].asstr()[:]
        start = t["start"][:]
        end = t["end"][:]
        failed = t["failed"][:]
        test_double = int(f["/run"].attrs.get("test_double_output", 0))
    lanes = sorted({(int(d), int(w)) for d, w in zip(device, worker)})
    lane_of = {lane: i for i, lane in enumerate(lanes)}
    colors = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(lanes) + 1.5))
    for d, w, s, a, b, bad in zip(device, worker, stage, start, end, failed):
        key = ("GPU " if d else "CPU ") + s
        if bad:
            key = "fault (requeued)"
        if key not in colors:
            colors[key] = "red" if bad else palette[len(colors) % len(palette)]
        ax.barh(lane_of[(int(d), int(w))], b - a, left=a, height=0.8, color=colors[key], label=key)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper right")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([("GPU feeder " if d else "CPU worker ") + str(w) for d, w in lanes])
    ax.set_xlabel("seconds from the start of the query")
    note = "  [GPU rows from the CPU test double, not a GPU]" if test_double else ""
    ax.set_title(f"{args.result}: {query}{note}")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("lengths")
    a.add_argument("summary")
    a.add_argument("-o", "--out", required=True)
    a.set_defaults(run=plot_lengths)
    b = sub.add_parser("split")
    b.add_argument("summary")
    b.add_argument("-o", "--out", required=True)
    b.set_defaults(run=plot_split)
    c = sub.add_parser("timeline")
    c.add_argument("result")
    c.add_argument("--query")
    c.add_argument("-o", "--out", required=True)
    c.set_defaults(run=plot_timeline)
    args = p.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
