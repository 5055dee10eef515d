#!/usr/bin/env python3
"""jobs/pcie-meter.py: bytes over each GPU's PCIe link, measured by the driver, for rows that
keep no counters of their own (cuBLAS-XT). Two modes:

  pcie-meter.py record FILE
      Until killed: every 20 ms reads NVML's cumulative PCIe byte counters of every GPU
      (nvmlDeviceGetFieldValues, fields NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197 and _RX_BYTES =
      198; "value can be wrapped": deltas are taken modulo the value's width) and every
      100 ms appends "epoch_s tx0 rx0 tx1 rx1 ..." (bytes since start, GPU view: rx is
      host-to-device) to FILE. Exits 77 with a line on stderr where NVML or the fields are
      missing.
  pcie-meter.py split METER STAMPED_STDERR
      Attributes the bytes to tessera-bench's rows. STAMPED_STDERR is the bench's progress
      (stderr) with each line prefixed by its epoch time (gpu-check.sh does it). A row's
      window runs from the line before its warm-up line to its last run's line; between
      rows only the CPU works (fills, checks), so the window holds the row's warm-up and
      timed runs. Prints per row and GPU the GB received (H2D) and sent (D2H) per run.
"""
import ctypes
import re
import sys
import time

F_TX, F_RX = 197, 198


class Value(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong),
                ("ull", ctypes.c_ulonglong), ("sll", ctypes.c_longlong), ("si", ctypes.c_int),
                ("us", ctypes.c_ushort)]


class Field(ctypes.Structure):  # nvmlFieldValue_t
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", Value)]


def raw(f):
    """(value, width in bits) of a field by its type; None if unusable."""
    if f.nvmlReturn != 0:
        return None
    t = f.valueType
    if t == 1:
        return f.value.ui, 32
    if t in (2, 3):
        return f.value.ull, 64
    if t == 4:
        return f.value.sll, 64
    return None


def record(path):
    try:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        print(f"pcie-meter: no NVML ({e})", file=sys.stderr)
        return 77
    if nv.nvmlInit_v2() != 0:
        print("pcie-meter: nvmlInit failed", file=sys.stderr)
        return 77
    cnt = ctypes.c_uint()
    nv.nvmlDeviceGetCount_v2(ctypes.byref(cnt))
    handles = []
    for i in range(cnt.value):
        h = ctypes.c_void_p()
        nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h))
        handles.append(h)
    arr = (Field * 2)()

    def read(h):
        arr[0].fieldId, arr[1].fieldId = F_TX, F_RX
        arr[0].scopeId = arr[1].scopeId = 0
        if nv.nvmlDeviceGetFieldValues(h, 2, arr) != 0:
            return None
        a, b = raw(arr[0]), raw(arr[1])
        return None if a is None or b is None else (a, b)

    prev = [read(h) for h in handles]
    if not handles or any(p is None for p in prev):
        print("pcie-meter: PCIe byte counters not supported here", file=sys.stderr)
        return 77
    tot = [[0, 0] for _ in handles]
    last_write = 0.0
    with open(path, "w", buffering=1) as out:
        while True:
            for i, h in enumerate(handles):
                cur = read(h)
                if cur is None:
                    continue
                for j in (0, 1):
                    v, bits = cur[j]
                    tot[i][j] += (v - prev[i][j][0]) % (1 << bits)
                prev[i] = cur
            now = time.time()
            if now - last_write >= 0.1:
                out.write(f"{now:.3f} " + " ".join(f"{t[0]} {t[1]}" for t in tot) + "\n")
                last_write = now
            time.sleep(0.02)


def at(samples, t):
    """Counters at time t (the last sample at or before t)."""
    best = samples[0][1]
    for ts, v in samples:
        if ts > t:
            break
        best = v
    return best


def split(meter, stamped):
    samples = []
    for line in open(meter):
        p = line.split()
        if len(p) >= 3:
            samples.append((float(p[0]), [int(x) for x in p[1:]]))
    if not samples:
        print("pcie-meter: no samples")
        return 1
    lines = []
    for line in open(stamped):
        ts, _, rest = line.partition(" ")
        try:
            lines.append((float(ts), rest.rstrip("\n")))
        except ValueError:
            pass
    rowre = re.compile(r"^\s*\S+\s+(\d+)\s+(.+?)\s+(warm-up|run \d+)\s")
    rows = []  # [name, n, start, end, runs]
    for k, (ts, text) in enumerate(lines):
        m = rowre.match(text)
        if not m:
            continue
        name = f"{m.group(2)} n={m.group(1)}"
        if m.group(3) == "warm-up":
            rows.append([name, int(m.group(1)), lines[k - 1][0] if k else ts, ts, 1])
        elif rows and rows[-1][0] == name:
            rows[-1][3] = ts
            rows[-1][4] += 1
    ngpu = len(samples[0][1]) // 2
    print(f"PCIe bytes by NVML's counters, GB per run (warm-up and timed runs averaged); "
          f"GPU view: H2D = received")
    print(f"{'row':<30} {'runs':>4} " + " ".join(f"{'H2D' + str(g):>8} {'D2H' + str(g):>8}"
                                                    for g in range(ngpu)) +
          f" {'H2D all':>8} {'D2H all':>8}")
    for name, n, t0, t1, runs in rows:
        a, b = at(samples, t0), at(samples, t1 + 0.15)
        d = [(b[i] - a[i]) / runs * 1e-9 for i in range(len(a))]
        tx = d[0::2]
        rx = d[1::2]
        print(f"{name:<30} {runs:>4} " + " ".join(f"{rx[g]:8.2f} {tx[g]:8.2f}" for g in range(ngpu))
              + f" {sum(rx):8.2f} {sum(tx):8.2f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "record":
        sys.exit(record(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "split":
        sys.exit(split(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
