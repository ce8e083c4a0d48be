#!/usr/bin/env python3
"""Throughput figures of duet result files, from /trace and /run: per query pass, the
workers, pass time, mean busy time per worker, first block start, cells per second per
CPU worker, GPU share and the idle tails (see the README's Output section).

    python3 bench/trace_summary.py [--phases] result.h5 [more.h5 ...]
(--phases: also the span and busy time of the CPU blocks, the post-queue and each GPU batch;
 --timeline: how many CPU workers were busy in each twentieth of the pass, and where the
 pass began and ended against the whole process, /run's wall_seconds)
"""
import sys

import h5py
import numpy as np

for path in [a for a in sys.argv[1:] if not a.startswith("--")]:
    with h5py.File(path, "r") as f:
        run = f["/run"].attrs
        for query in f["/trace"]:
            t = f["/trace"][query]
            if "trace_in" in t.attrs:  # a later model of a pass: its rows are with the first
                continue
            start, end, worker, device = t["start"][:], t["end"][:], t["worker"][:], t["device"][:]
            cpu = sorted(set(worker[device == 0]))
            busy = [float((end[worker == w] - start[worker == w]).sum()) for w in cpu]
            cells = t["cells"][:][(device == 0) & (t["stage"].asstr()[:] == "all")]
            seconds = (end - start)[(device == 0) & (t["stage"].asstr()[:] == "all")]
            per_worker = cells.sum() / seconds.sum() / 1e9 if seconds.sum() > 0 else 0.0
            print(f"{path} {query}: isa={run.get('isa', '?')} cpu_workers={len(cpu)} "
                  f"gpu_feeders={int(run.get('gpu_feeders', 0))} pass={t.attrs['wall_seconds']:.3f}s "
                  f"busy_per_worker={np.mean(busy) if busy else 0:.3f}s first_start={start.min() if len(start) else 0:.3f}s "
                  f"cpu_Gc/s_per_worker={per_worker:.2f} gpu_share={run.get('gpu_share', 0):.2f} "
                  f"idle_tail={t.attrs['idle_tail_seconds']:.3f}s worker_idle_tail={t.attrs['worker_idle_tail_seconds']:.3f}s "
                  f"reused_blocks={int(t.attrs.get('reused_blocks', 0))}/{int(t.attrs.get('blocks', 0))}")
        if "--phases" in sys.argv:
            # Where a hybrid pass went: the CPU's own blocks, its post-queue work, each GPU batch.
            for query in f["/trace"]:
                t = f["/trace"][query]
                if "trace_in" in t.attrs:  # rows with the pass's first model
                    continue
                start, end, device = t["start"][:], t["end"][:], t["device"][:]
                stage = t["stage"].asstr()[:]
                own = (device == 0) & (stage == "all")
                post = (device == 0) & (stage == "post")
                gpu = device == 1
                span = lambda m: f"{start[m].min():.3f}..{end[m].max():.3f}s" if m.any() else "none"
                print(f"  {query}: CPU blocks {span(own)} busy {float((end - start)[own].sum()):.3f}s; "
                      f"post {span(post)} busy {float((end - start)[post].sum()):.3f}s; GPU batches "
                      + " ".join(f"{a:.3f}-{b:.3f}" for a, b in zip(start[gpu], end[gpu])))
        if "--timeline" in sys.argv:
            # Busy CPU workers per twentieth of the pass: a ramp at the start, a tail at the end.
            for query in f["/trace"]:
                t = f["/trace"][query]
                if "trace_in" in t.attrs:
                    continue
                start, end, device = t["start"][:], t["end"][:], t["device"][:]
                cpu = device == 0
                workers = len(set(t["worker"][:][cpu]))
                total = float(t.attrs["wall_seconds"])
                edges = np.linspace(0.0, total, 21)
                busy = []
                for a, b in zip(edges[:-1], edges[1:]):
                    overlap = np.clip(np.minimum(end[cpu], b) - np.maximum(start[cpu], a), 0.0, None)
                    busy.append(overlap.sum() / (b - a) if b > a else 0.0)
                firsts = sorted(float(start[t["worker"][:] == w].min()) for w in set(t["worker"][:]))
                print(f"  {query}: workers' first starts {firsts[0]:.3f}/{firsts[len(firsts) // 2]:.3f}/"
                      f"{firsts[-1]:.3f}s (first/median/last), GPU batches "
                      f"{int((device == 1).sum())}, first GPU start "
                      f"{float(start[device == 1].min()) if (device == 1).any() else 0:.3f}s")
                print(f"  {query}: pass {total:.3f}s of process {float(run.get('wall_seconds', 0)):.3f}s, "
                      f"{workers} CPU workers, {int(cpu.sum())} batches, last end {end.max() if len(end) else 0:.3f}s; "
                      "busy workers per twentieth: " + " ".join(f"{x:.1f}" for x in busy))
