#!/usr/bin/env python3
"""tests/check_layers.py: the include graph of the library reads bottom to top.

Each source folder is one layer (LAYERS, lowest first). A file may include its own folder's
headers, the public headers (src/include) and the headers of lower layers; a quoted include
that resolves to a higher layer, or any "../" include, is an upward (or hidden) arrow and
fails the check. The tools (src/tools) may include only the public headers, their own
libraries and the headers of TOOLS_SHARED: header-only formulas and constants the library
and a tool must agree on, which must include nothing but public headers (checked).
--graph prints the layer-to-layer arrows that exist.
Usage: check_layers.py [--graph] [repo root]
"""
import os
import re
import sys

LAYERS = [  # (folder, layer), lowest first; the public headers are below everything
    ("src/include", 0),
    ("src/base", 1),
    ("src/backend", 2),
    ("cache", 3),
    ("node", 4),
    ("src/level3", 5),
    ("src/lapack", 6),  # factorizations on the tile runtime (uses level3.h's helpers)
    ("comm", 6),
    ("src", 7),  # the C API's face: api.c, info.c
    ("src/blas", 7),
    ("scalapack_glue", 7),
    ("src/tools", 8),
]
RANK = dict(LAYERS)
TOOLS_MAY = {"src/include", "src/tools"}
# What a tool may share with a lower layer: the drop-in's crossover model (the formula
# tessera-crossover fits, route.c decides with), its built-in parameters, the parallel for,
# the glue's public header (tessera-solve reads its counters).
TOOLS_SHARED = {
    "src/blas/crossover_model.h",
    "src/base/dropin_defaults.h",
    "src/base/par.h",
    "scalapack_glue/tessera_scalapack.h",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(root, path):
    return os.path.relpath(os.path.dirname(path), root)


def resolve(root, here, name):
    """The folder (one of LAYERS) holding the header `name`, searched from `here` first."""
    if os.path.isfile(os.path.join(root, here, name)):
        return os.path.normpath(os.path.join(here, os.path.dirname(name)))
    hits = [d for d, _ in LAYERS if os.path.isfile(os.path.join(root, d, name))]
    return os.path.normpath(os.path.join(hits[0], os.path.dirname(name))) if hits else None


def self_contained(root, folder, name):
    """True for a header in `folder` whose quoted includes all resolve to the public headers."""
    path = os.path.join(root, folder, os.path.basename(name))
    if not name.endswith(".h") or not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8") as fh:
        for inc in INCLUDE.findall(fh.read()):
            if "../" in inc or resolve(root, folder, inc) not in (None, "src/include"):
                return False
    return True


def main(argv):
    graph = "--graph" in argv
    args = [a for a in argv if a != "--graph"]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    bad, arrows = [], set()
    for d, rank in LAYERS:
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(full, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for name in INCLUDE.findall(text):
                where = f"{d}/{f}: #include \"{name}\""
                if name.startswith("../") or "/../" in name:
                    bad.append(f"{where}: a relative path out of the folder")
                    continue
                to = resolve(root, d, name)
                if to is None:
                    continue  # a system or generated header
                if to not in RANK:
                    bad.append(f"{where}: resolves to {to}, which is no layer")
                    continue
                shared = os.path.join(to, os.path.basename(name)) in TOOLS_SHARED
                if d == "src/tools" and to not in TOOLS_MAY and not shared:
                    bad.append(f"{where}: a tool may use only the public API, src/tools and "
                               f"TOOLS_SHARED")
                elif shared and not self_contained(root, to, name):
                    bad.append(f"{where}: {name} (TOOLS_SHARED) includes more than the "
                               f"public headers")
                elif RANK[to] > rank:
                    bad.append(f"{where}: {d} (layer {rank}) reaches up to {to} "
                               f"(layer {RANK[to]})")
                if to != d:
                    arrows.add((d, to))
    if graph:
        for a, b in sorted(arrows, key=lambda x: (RANK[x[0]], x[0], RANK[x[1]], x[1])):
            print(f"{a} -> {b}")
    for b in bad:
        print("check_layers: " + b, file=sys.stderr)
    if not bad:
        print(f"check_layers: {len(arrows)} arrows between folders, none upward")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
