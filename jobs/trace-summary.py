#!/usr/bin/env python3
"""jobs/trace-summary.py: what a TESSERA_TRACE timeline says per call and device, in text.

  trace-summary.py TRACE.json[.gz] [--gap-ms 200]

Calls are told apart by gaps of more than --gap-ms with no kernel on any device; every
other event goes to the call whose kernels it is nearest. For each call and device: tasks run (worker intervals), when its first kernel started and its last
ended (ms from the call's first event), the time with at least one kernel in flight
(kernel-busy), the idle time after its last kernel until the call's end (the end-game
tail), the bytes' intervals (H2D, P2P, D2H copies) and how long N kernels ran at once.
Kernels are the stream tracks' intervals that are not copies. Used on the GPU machines'
traces (docs/benchmarks.md): e.g. a 19 / 17 tile split shows as one device's tail.
"""
import gzip
import json
import sys
from collections import defaultdict

COPIES = ("H2D", "D2H", "P2P")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)["traceEvents"]


def union(iv):
    tot, cur = 0.0, None
    for a, b in sorted(iv):
        if cur is None or a > cur[1]:
            if cur:
                tot += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur:
        tot += cur[1] - cur[0]
    return tot


def concurrency(iv):
    pts = sorted([(a, 1) for a, b in iv] + [(b, -1) for a, b in iv], key=lambda p: (p[0], -p[1]))
    prof, cur, last = defaultdict(float), 0, None
    for t, d in pts:
        if last is not None:
            prof[cur] += t - last
        cur += d
        last = t
    return prof


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    gap = 200.0
    if "--gap-ms" in argv:
        gap = float(argv[argv.index("--gap-ms") + 1])
    ev = load(argv[0])
    pname = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    X = [e for e in ev if e.get("ph") == "X"]

    def on_stream(e):
        return tname.get((e["pid"], e.get("tid")), "").startswith("stream")

    kern = sorted((e for e in X if on_stream(e) and not e["name"].startswith(COPIES)),
                  key=lambda e: e["ts"])
    if not kern:
        print("no kernels in the trace")
        return 1
    calls, end = [[kern[0]]], kern[0]["ts"] + kern[0]["dur"]
    for e in kern[1:]:
        if e["ts"] - end > gap * 1e3:
            calls.append([e])
        else:
            calls[-1].append(e)
        end = max(end, e["ts"] + e["dur"])
    # every event belongs to the call whose kernels it is nearest: the boundaries are the
    # midpoints of the gaps between calls
    spans = [(min(e["ts"] for e in c), max(e["ts"] + e["dur"] for e in c)) for c in calls]
    cuts = [(spans[i][1] + spans[i + 1][0]) / 2 for i in range(len(spans) - 1)]
    owned = [[] for _ in calls]
    for e in X:
        i = 0
        while i < len(cuts) and e["ts"] >= cuts[i]:
            i += 1
        owned[i].append(e)
    for ci, c in enumerate(calls):
        inside = owned[ci]
        s = min(e["ts"] for e in inside)
        t = max(e["ts"] + e["dur"] for e in inside)
        print(f"call {ci}: {(t - s) / 1e3:.0f} ms from first to last event, "
              f"{len(c)} kernels")
        for pid in sorted(pname):
            kk = [(e["ts"], e["ts"] + e["dur"]) for e in c if e["pid"] == pid]
            if not kk:
                print(f"   {pname[pid]}: no kernels")
                continue
            tasks = sum(1 for e in inside if e["pid"] == pid and e["name"].startswith("task"))
            copies = {k: sum(e["dur"] for e in inside if e["pid"] == pid and e["name"].startswith(k)) / 1e3
                      for k in COPIES}
            first, last = min(a for a, b in kk), max(b for a, b in kk)
            prof = concurrency(kk)
            print(f"   {pname[pid]}: {tasks} tasks, first kernel +{(first - s) / 1e3:.0f} ms, last "
                  f"ends +{(last - s) / 1e3:.0f} ms, kernel-busy {union(kk) / 1e3:.0f} ms, tail "
                  f"{(t - last) / 1e3:.0f} ms; copy intervals (ms, summed over streams) "
                  + " ".join(f"{k} {v:.0f}" for k, v in copies.items()))
            print("      ms with N kernels at once: "
                  + " ".join(f"{n}:{v / 1e3:.0f}" for n, v in sorted(prof.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
