#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Cost of `iotunectl plan` and `iotunectl verify` as the number of disks grows.

Builds umockdev fixture trees of 16, 128 and 1024 NVMe-like disks (each in its own
process, under umockdev-wrapper), applies once so verify has a full plan to check,
then times plan and verify (median of several runs) and a tree with no disks (the
fixed process cost). It prints the per-disk cost, (t(N) - t(0)) / N, and the growth
ratio of the per-disk cost against the smallest tree: about 1.0 means linear.

usage: bench/plan-verify-cost.py BUILD_DIR [--sizes 16,128,1024] [--runs 5]

Fixture attribute reads go through umockdev's LD_PRELOAD, so absolute times are
higher than on real sysfs; the ratios are what this measures.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(iotunectl, n, runs):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
    from testbed import Testbed
    bed = Testbed()
    # Spread disks over controllers the way a JBOF looks: 8 namespaces each.
    for c in range((n + 7) // 8):
        bed.nvme(c, namespaces=min(8, n - 8 * c))
    root = tempfile.mkdtemp(prefix="iotuned-bench-")
    try:
        subprocess.run([iotunectl, "--root", root, "-q", "apply"], check=True, stdout=subprocess.DEVNULL)
        out = {}
        for verb in ("plan", "verify"):
            samples = []
            for _ in range(runs):
                t = time.perf_counter()
                subprocess.run([iotunectl, "--root", root, "-q", verb], check=True, stdout=subprocess.DEVNULL)
                samples.append(time.perf_counter() - t)
            out[verb] = statistics.median(samples)
        # Sanity: the plan really covers n disks.
        doc = json.loads(subprocess.run([iotunectl, "--root", root, "--json", "plan"], check=True,
                                        capture_output=True, text=True).stdout)
        assert doc["summary"]["devices"] == n, (doc["summary"]["devices"], n)
        print(json.dumps(out))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--sizes", default="16,128,1024")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    iotunectl = os.path.abspath(os.path.join(a.build_dir, "src", "iotunectl"))

    if a.child is not None:
        child(iotunectl, a.child, a.runs)
        return 0

    sizes = [int(s) for s in a.sizes.split(",")]
    results = {}
    for n in [0] + sizes:
        p = subprocess.run(["umockdev-wrapper", "/usr/bin/python3", os.path.abspath(__file__), a.build_dir,
                            "--child", str(n), "--runs", str(a.runs)], check=True, capture_output=True, text=True)
        results[n] = json.loads(p.stdout.strip().splitlines()[-1])

    print(f"iotunectl plan/verify cost over umockdev fixture trees (median of {a.runs} runs each)")
    print(f"{'disks':>6}  {'plan s':>8}  {'verify s':>8}  {'plan us/disk':>12}  {'verify us/disk':>14}")
    per = {}
    for n in sizes:
        pp = (results[n]["plan"] - results[0]["plan"]) / n * 1e6
        vp = (results[n]["verify"] - results[0]["verify"]) / n * 1e6
        per[n] = (pp, vp)
        print(f"{n:>6}  {results[n]['plan']:>8.3f}  {results[n]['verify']:>8.3f}  {pp:>12.1f}  {vp:>14.1f}")
    print(f"{0:>6}  {results[0]['plan']:>8.3f}  {results[0]['verify']:>8.3f}  (fixed process cost)")
    base = sizes[0]
    for n in sizes[1:]:
        print(f"growth ratio of per-disk cost, {n} vs {base} disks: plan {per[n][0] / per[base][0]:.2f}, "
              f"verify {per[n][1] / per[base][1]:.2f}  (1.0 = linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
