#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The floors of src/ point one way, and the source files call each other in no circle.

    check-layout.py SRC_DIR LIBRARY.a
    check-layout.py --self-test

The floors, lowest first (docs/ARCHITECTURE.md, "The floors of src/"):

    shared -> {probe, measure} -> knob -> {config, diagnose} -> plan -> apply -> {tuner, report} -> {cli, daemon} -> main

A file may use its own folder and the floors below it, never a floor above, nor
another folder of its own floor. Two checks, each with the file and the name:

  includes  every #include "x.h" of src/<folder>/*.[ch] and src/*.c;
  calls     every symbol an object of the library uses (nm: U) and the object
            that defines it (T, D, B, R): the same rule, and the graph of files
            has no cycle of any length (a.c calls b.c, b.c calls c.c, ... and
            the last calls a.c again). The strongly connected components of the
            graph (Tarjan) are its cycles; each is shown as paths of files, with
            one symbol for each call, until every call inside it is on one:

              cycle of 3 files: daemon/a.c -(b_run)-> daemon/b.c -(c_run)-> daemon/c.c -(a_done)-> daemon/a.c

Exit 0 when both hold; otherwise each violation on a line of its own, exit 1.
--self-test checks the cycle search on made-up graphs.
"""
import os
import re
import subprocess
import sys

FLOORS = {
    "shared": 0,
    "probe": 1,
    "measure": 1,
    "knob": 2,
    "diagnose": 3,
    "config": 3,
    "plan": 4,
    "apply": 5,
    "tuner": 6,
    "report": 6,
    "cli": 7,
    "daemon": 7,
    "": 8,  # src/iotunectl.c, src/iotuned.c
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path, src):
    rel = os.path.relpath(path, src)
    return os.path.dirname(rel)


def may_use(user, used):
    """Whether a file in folder `user` may use one in folder `used`."""
    return user == used or FLOORS[user] > FLOORS[used]


def strongly_connected(edges):
    """The strongly connected components of the graph `edges` ({a: {b: sym}}) with
    more than one file, each sorted, in a stable order (Tarjan's algorithm)."""
    index, low, stack, on_stack, sccs = {}, {}, [], set(), []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(set(edges) | {w for e in edges.values() for w in e}):
        if v not in index:
            strongconnect(v)
    return sorted(sccs)


def shortest_path(edges, start, goal, within):
    """The shortest path of files from start to goal inside `within` (breadth
    first, neighbours in sorted order), as a list with both ends; None if none."""
    prev = {start: None}
    queue = [start]
    for v in queue:
        if v == goal:
            path = []
            while v is not None:
                path.append(v)
                v = prev[v]
            return path[::-1]
        for w in sorted(edges.get(v, {})):
            if w in within and w not in prev:
                prev[w] = v
                queue.append(w)
    return None


def file_cycles(edges):
    """The cycles of the graph of files, as lists [a, b, ..., a]: for each
    strongly connected component, the shortest cycle through each of its calls
    that no cycle found before it takes, so that every call between two files of
    the component is shown on some cycle."""
    cycles = []
    for scc in strongly_connected(edges):
        within, covered = set(scc), set()
        for a in scc:
            for b in sorted(edges.get(a, {})):
                if b not in within or (a, b) in covered:
                    continue
                cycle = [a] + shortest_path(edges, b, a, within)
                covered.update(zip(cycle, cycle[1:]))
                cycles.append(cycle)
    return cycles


def cycle_text(cycle, edges):
    """'cycle of N files: a -(sym)-> b -(sym)-> a'."""
    text = cycle[0]
    for a, b in zip(cycle, cycle[1:]):
        text += f" -({edges[a][b]})-> {b}"
    return f"cycle of {len(cycle) - 1} files: {text}"


def self_test():
    """The cycle search on made-up graphs: exit 0 when it finds what it should."""
    ring = {f"r{i}.c": {f"r{(i + 1) % 9}.c": f"f{i}"} for i in range(9)}
    cases = [
        ("no cycle", {"a.c": {"b.c": "b1", "c.c": "c1"}, "b.c": {"c.c": "c2"}}, []),
        ("a pair", {"a.c": {"b.c": "b1"}, "b.c": {"a.c": "a1"}}, [["a.c", "b.c", "a.c"]]),
        ("three", {"a.c": {"b.c": "b1"}, "b.c": {"c.c": "c1"}, "c.c": {"a.c": "a1"}, "d.c": {"a.c": "a2"}},
         [["a.c", "b.c", "c.c", "a.c"]]),
        ("nine in a ring", ring, [[f"r{i % 9}.c" for i in range(10)]]),
        ("two circles through one file",
         {"a.c": {"b.c": "b1", "c.c": "c1"}, "b.c": {"a.c": "a1"}, "c.c": {"d.c": "d1"}, "d.c": {"a.c": "a2"}},
         [["a.c", "b.c", "a.c"], ["a.c", "c.c", "d.c", "a.c"]]),
        ("two components",
         {"a.c": {"b.c": "b1"}, "b.c": {"a.c": "a1", "x.c": "x1"}, "x.c": {"y.c": "y1"}, "y.c": {"z.c": "z1"},
          "z.c": {"x.c": "x2"}},
         [["a.c", "b.c", "a.c"], ["x.c", "y.c", "z.c", "x.c"]]),
    ]
    failed = 0
    for name, edges, want in cases:
        got = file_cycles(edges)
        if got != want:
            print(f"self-test {name}: found {got}, want {want}")
            failed += 1
    text = cycle_text(["a.c", "b.c", "a.c"], cases[1][1])
    if text != "cycle of 2 files: a.c -(b1)-> b.c -(a1)-> a.c":
        print(f"self-test text: {text!r}")
        failed += 1
    print(f"layout self-test: {len(cases) + 1} cases, {failed} failed")
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src, lib = sys.argv[1], sys.argv[2]
    problems = []

    headers, sources = {}, []
    for dirpath, _, files in os.walk(src):
        folder = os.path.relpath(dirpath, src)
        folder = "" if folder == "." else folder
        if folder not in FLOORS:
            problems.append(f"src/{folder}/: a folder with no floor: add it to FLOORS in {sys.argv[0]} "
                            "and to docs/ARCHITECTURE.md's floors")
            continue
        for f in sorted(files):
            if f.endswith(".h"):
                if f in headers:
                    problems.append(f"{f}: two headers of that name (src/{headers[f]}, src/{folder})")
                headers[f] = folder
            if f.endswith((".c", ".h")):
                sources.append(os.path.join(dirpath, f))

    # includes
    for path in sorted(sources):
        user = folder_of(path, src)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            used = headers.get(name)
            if used is None:
                continue  # a generated header (config.h of the build) or a system one
            if not may_use(user, used):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"src/{os.path.relpath(path, src)}:{line}: includes {name} of src/{used}/ "
                                f"(floor {FLOORS[used]}) from src/{user or '.'}/ (floor {FLOORS[user]})")

    # calls, from the objects of the library
    out = subprocess.run(["nm", "-A", lib], check=True, capture_output=True, text=True).stdout
    defined, undefined = {}, {}
    for line in out.splitlines():
        # "lib.a:member.o:0000000000000000 T name" or "lib.a:member.o:                 U name"
        m = re.match(r"^(?:[^:]*:)?([^:]+\.o):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        member = os.path.basename(obj)
        mm = re.match(r"^(?:([a-z]+)_)?(.+)\.c\.o$", member)
        if not mm or member.startswith("meson-generated"):
            continue
        source = (mm.group(1) + "/" if mm.group(1) else "") + mm.group(2) + ".c"
        if kind == "U":
            undefined.setdefault(source, set()).add(sym)
        elif kind.isupper():
            defined[sym] = source

    edges = {}
    for user_file, syms in undefined.items():
        for sym in sorted(syms):
            def_file = defined.get(sym)
            if not def_file or def_file == user_file:
                continue
            edges.setdefault(user_file, {}).setdefault(def_file, sym)
            user, used = os.path.dirname(user_file), os.path.dirname(def_file)
            if user in FLOORS and used in FLOORS and not may_use(user, used):
                problems.append(f"src/{user_file}: uses {sym} of src/{def_file} "
                                f"(floor {FLOORS[used]}) from floor {FLOORS[user]}")

    # cycles between files
    for cycle in file_cycles(edges):
        problems.append(cycle_text(cycle, edges))

    if not defined:
        problems.append(f"{lib}: no symbols read (nm found nothing): the check checked nothing")
    for p in problems:
        print(p)
    print(f"layout: {len(sources)} files, {sum(len(e) for e in edges.values())} file-to-file calls, "
          f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
