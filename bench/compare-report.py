#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Summarise and plot the samples of bench/vm/compare.sh: iotuned, TuneD and a udev rule.

usage: bench/compare-report.py DIR [--plots DIR2]

Input: DIR/boot-N/samples.tsv (N = 1, 2, ...), one sample a line, tab-separated:
    BOOT  TOOL  METRIC  VALUE
TOOL is iotuned, tuned, udev or calibrate; VALUE is a non-negative number or the
word `never` (the tool did not get there before the measure's deadline). Blank
lines are ignored; any other malformed line is an error (exit 1, file:line).

Output on stdout: a header, a Markdown table with one row per metric (median over
every sample of every boot, with n and min-max) and the ratio other/iotuned for
metrics where lower is better (5.0x: iotuned needs a fifth of the other's time),
`RATIO METRIC TOOL VALUE` lines for scripts, and a per-boot table of the medians
of hotplug_all_ms. PNG plots go to DIR2 (default DIR/plots): hotplug, timeline,
start, scale and resources; a plot with no data is skipped.
"""
import argparse
import os
import random
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

TOOLS = ("tuned", "udev", "iotuned")  # table column order
SCHED_NAME = "mq-deadline"  # bench/vm/compare.sh: SCHED
TOOL_NAMES = {"tuned": "TuneD", "udev": "udev rule", "iotuned": "iotuned"}
COLORS = {"tuned": "tab:orange", "udev": "tab:green", "iotuned": "tab:blue"}
KNOBS = ("scheduler", "read_ahead_kb", "nr_requests", "rq_affinity", "all")
FOOTNOTE = "QEMU/TCG guest, Debian 6.1 kernel; read ratios"
NEVER = None  # how a `never` sample is stored
MAX_FILE = 16 << 20

# metric -> (label, ratio?); ratio: lower is better, print other/iotuned.
METRICS = {
    "start_ms": ("start: tool started -> 4 disks, all 4 knobs set (ms)", True),
    "exec_to_tuned_ms": ("iotuned: exec -> 4 disks tuned (ms)", True),
    "main_to_ready_ms": ("iotuned: main() -> READY=1, own timing (ms)", True),
    "hotplug_scheduler_ms": ("hot-added NVMe: present -> scheduler set (ms)", True),
    "hotplug_read_ahead_kb_ms": ("hot-added NVMe: present -> read_ahead_kb set (ms)", True),
    "hotplug_nr_requests_ms": ("hot-added NVMe: present -> nr_requests set (ms)", True),
    "hotplug_rq_affinity_ms": ("hot-added NVMe: present -> rq_affinity set (ms)", True),
    "hotplug_all_ms": ("hot-added NVMe: present -> all four knobs set (ms)", True),
    "rss_kb": ("resident memory, RSS (kB)", True),
    "pss_kb": ("proportional memory, PSS (kB)", True),
    "threads": ("threads", False),
    "idle_wakeups_per_s": ("idle: wake-ups per second (voluntary context switches)", True),
    "drift_restore_ms": ("hand-made read_ahead_kb change put back (ms)", True),
    "scale_load_ms": ("scale: modprobe null_blk -> last disk present (ms)", False),
    "scale_sched_ra_after_last_ms": ("scale: last disk present -> scheduler and read-ahead of all set (ms)", True),
    "scale_after_last_ms": ("scale: last disk present -> all disks, all four knobs set (ms)", True),
    "scale_untuned_after_90s": ("scale: disks without all four knobs 90 s after the last appeared", False),
    "scale_untuned_at_end": ("scale: disks seen tuned, no longer tuned at the end", False),
    "scale_cpu_ms_per_disk": ("scale: tool CPU per disk (ms)", True),
    "scale_rss_kb": ("scale: RSS with all disks (kB)", True),
    "scale_drift_check_cpu_ms": ("scale: one drift check over all disks, CPU (ms)", True),
    "scale_stop_ms": ("scale: stop, restoring every disk (ms)", True),
}


def die(msg):
    print(f"compare-report: {msg}", file=sys.stderr)
    sys.exit(1)


def read_samples(top):
    """-> (paths, {N: [(tool, metric, value or NEVER)]}), each list in file order."""
    if not os.path.isdir(top):
        die(f"{top}: not a directory")
    files = []
    for name in os.listdir(top):
        m = re.fullmatch(r"boot-([0-9]+)", name)
        path = os.path.join(top, name, "samples.tsv")
        if m and os.path.isfile(path):
            files.append((int(m.group(1)), path))
    if not files:
        die(f"no boot-N/samples.tsv found under {top}")
    boots, mismatch = {}, set()
    for n, path in sorted(files):
        with open(path, "rb") as f:  # isfile() above: a regular file, never a FIFO
            data = f.read(MAX_FILE + 1)
        if len(data) > MAX_FILE:
            die(f"{path}: larger than {MAX_FILE} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            die(f"{path}: not UTF-8 ({e})")
        for no, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            where = f"{path}:{no}"
            fields = line.split("\t")
            if len(fields) != 4:
                die(f"{where}: expected 4 tab-separated fields (BOOT TOOL METRIC VALUE), got {len(fields)}")
            boot, tool, metric, value = fields
            if not re.fullmatch(r"[0-9]+", boot):
                die(f"{where}: BOOT {boot!r} is not a number")
            if tool not in TOOLS + ("calibrate",):
                die(f"{where}: unknown TOOL {tool!r} (want iotuned, tuned, udev or calibrate)")
            if not re.fullmatch(r"[a-z0-9_]+", metric):
                die(f"{where}: bad METRIC name {metric!r}")
            if value == "never":
                v = NEVER
            elif not re.fullmatch(r"-?[0-9]+(\.[0-9]*)?", value):
                die(f"{where}: VALUE {value!r} is neither a decimal number nor 'never'")
            elif (v := float(value)) < 0:
                die(f"{where}: VALUE {value!r} is negative")
            if int(boot) != n and n not in mismatch:
                mismatch.add(n)
                print(f"compare-report: warning: {where}: BOOT {boot} in boot-{n}, counted as {n}", file=sys.stderr)
            boots.setdefault(n, []).append((tool, metric, v))
    if not boots:
        die(f"no samples in {', '.join(p for _, p in sorted(files))}")
    return [p for _, p in sorted(files)], boots


class Stat:
    """The samples of one tool for one metric."""

    def __init__(self, values):
        self.values = values
        self.nums = sorted(v for v in values if v is not NEVER)
        self.never = len(values) - len(self.nums)
        self.median = statistics.median(self.nums) if self.nums else None

    def cell(self):
        if not self.values:
            return "-"
        if not self.nums:
            return f"never ({self.never}/{len(self.values)})"
        n, lo, hi = len(self.values), self.nums[0], self.nums[-1]
        s = f"{fmt(self.median)} (n={n}" + (f", {fmt(lo)}-{fmt(hi)})" if len(self.nums) > 1 else ")")
        return s + (f", {self.never} never" if self.never else "")


def fmt(v):
    if v == int(v):
        return str(int(v))
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def ratio(other, iot):
    """-> (cell text, numeric ratio or None): how many times iotuned is lower."""
    if not other.values or not iot.values:
        return "-", None
    if iot.median is None:
        return ("both never" if other.median is None else "iotuned never"), None
    if other.median is None:
        return "iotuned only", None
    if iot.median <= 0:
        return "-", None
    r = other.median / iot.median
    text = f"{r:.0f}x" if r >= 10 else f"{r:.1f}x" if r >= 0.1 else f"{r:.2f}x"
    return text + (" *" if other.never or iot.never else ""), r


def collect(boots):
    """-> {(tool, metric): [values]} over every boot."""
    out = {}
    for samples in boots.values():
        for tool, metric, v in samples:
            out.setdefault((tool, metric), []).append(v)
    return out


def stat(data, tool, metric):
    return Stat(data.get((tool, metric), []))


def report(files, boots, data):
    n = sum(len(s) for s in boots.values())
    print(f"Read {len(files)} boot(s) ({', '.join(str(b) for b in sorted(boots))}), {n} samples, from:")
    for p in files:
        print(f"  {p}")
    extra = sorted({m for t, m in data if t != "calibrate"} - set(METRICS))
    print("\n| metric | TuneD | udev rule | iotuned | iotuned vs TuneD | iotuned vs udev |")
    print("|---|---|---|---|---|---|")
    ratios, star = [], False
    for metric in list(METRICS) + extra:
        label, lower_better = METRICS.get(metric, (metric, False))
        stats = {t: stat(data, t, metric) for t in TOOLS}
        if not any(s.values for s in stats.values()):
            continue
        cells = [stats[t].cell() for t in TOOLS]
        for other in ("tuned", "udev"):
            text, r = ratio(stats[other], stats["iotuned"]) if lower_better else ("-", None)
            cells.append(text)
            star |= text.endswith("*")
            if r is not None:
                ratios.append(f"RATIO {metric} {other} {r:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nCells: median (n = samples, `never` included; min-max of the numeric ones).")
    print("Ratios are other/iotuned medians: 5.0x means iotuned takes a fifth of the other's time or memory.")
    if star:
        print("*: some samples were `never`; the ratio is that of the medians of the numeric samples.")
    calibration = (
        ("fork_exec_true_ms", "fork+exec of /bin/true in the guest"),
        ("exec_iotuned_version_ms",
         "fork+exec of `iotuned --version` (its binary and shared libraries loaded, nothing done)"),
        ("dynamic_loader_ms", "the dynamic loader's own time in that exec, LD_DEBUG=statistics"),
        ("elevator_switch_ms",
         f"the kernel's own switch none -> {SCHED_NAME} on one NVMe disk, written by a shell builtin"),
        ("four_knobs_ms", "the four knobs written by shell builtins (no fork) on a settled disk's "
                          "queue: the kernel's own cost of the writes"),
    )
    for metric, label in calibration:
        cal = stat(data, "calibrate", metric)
        if cal.values:
            print(f"Calibration, {label} (ms): {cal.cell()}")
    print("\n" + "\n".join(ratios) if ratios else "")
    print("\nPer boot, hot-added NVMe: present -> all four knobs set, median (ms):\n")
    print("| boot | order | TuneD | udev rule | iotuned |")
    print("|---|---|---|---|---|")
    for b in sorted(boots):
        order = list(dict.fromkeys(t for t, _, _ in boots[b] if t in TOOLS))
        one = collect({b: boots[b]})
        cells = [stat(one, t, "hotplug_all_ms").cell() for t in TOOLS]
        print(f"| {b} | {', '.join(order)} | " + " | ".join(cells) + " |")


# --- plots -------------------------------------------------------------------------
def new_fig(title, ncols=1):
    fig, axes = plt.subplots(1, ncols, figsize=(9, 4.5), dpi=100, squeeze=False)
    fig.suptitle(title)
    fig.text(0.01, 0.01, FOOTNOTE, fontsize=7, color="0.35")
    return fig, list(axes[0])


def tool_handles(tools):
    return [Patch(color=COLORS[t], label=TOOL_NAMES[t]) for t in tools]


def save(fig, plots, name, written):
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = os.path.join(plots, name)
    fig.savefig(path)
    plt.close(fig)
    written.append(path)


def plot_hotplug(data, plots, written):
    tools = [t for t in TOOLS if any(data.get((t, f"hotplug_{k}_ms")) for k in KNOBS)]
    if not tools:
        return print("hotplug.png: skipped, no hotplug samples")
    fig, (ax,) = new_fig("Hot-added NVMe disk: time until each knob is set, every sample")
    nums = [v for t in tools for k in KNOBS for v in data.get((t, f"hotplug_{k}_ms"), []) if v is not NEVER]
    top = max(nums, default=1) or 1
    log = bool(nums) and max(nums) > 20 * max(min(nums), 1)
    never_y = top * (2 if log else 1.12)
    rnd = random.Random(1)
    width = 0.8 / len(tools)
    for i, k in enumerate(KNOBS):
        for j, t in enumerate(tools):
            s = stat(data, t, f"hotplug_{k}_ms")
            x0 = i - 0.4 + width * (j + 0.5)
            for marker, ys in (("o", [max(v, 0.5) if log else v for v in s.nums]), ("x", [never_y] * s.never)):
                xs = [x0 + rnd.uniform(-0.3, 0.3) * width for _ in ys]
                ax.scatter(xs, ys, marker=marker, s=18, color=COLORS[t], alpha=0.7, linewidths=1)
            if s.median is not None:
                ax.hlines(s.median, x0 - 0.45 * width, x0 + 0.45 * width, color="black", lw=2)
    if log:
        ax.set_yscale("log")
    floor = stat(data, "calibrate", "four_knobs_ms")
    if floor.median is not None:
        # The kernel's own cost of the four writes on a settled disk's queue (a
        # queue still in its first moments can take them faster: see the README).
        ax.axhline(floor.median, color="0.3", ls="--", lw=1)
        ax.text(len(KNOBS) - 0.52, floor.median, f"the four writes by shell builtins, settled disk: {fmt(floor.median)} ms",
                ha="right", va="bottom", fontsize=7, color="0.3")
    ax.axhline(never_y, color="0.6", ls=":", lw=1)
    ax.text(-0.01, never_y, "never", transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=8)
    ax.set_ylim(None if log else 0, never_y * (1.6 if log else 1.06))
    if not log:
        ax.set_yticks([y for y in ax.get_yticks() if 0 <= y < never_y * 0.95])
    ax.set_xlim(-0.5, len(KNOBS) - 0.5)
    ax.set_xticks(range(len(KNOBS)), [f"{k}" if k != "all" else "all four" for k in KNOBS])
    ax.set_xlabel("knob")
    ax.set_ylabel("ms after the disk appeared" + (" (log)" if log else ""))
    handles = tool_handles(tools) + [plt.Line2D([], [], color="black", lw=2, label="median")]
    ax.legend(handles=handles, fontsize=8, loc="upper left", ncol=len(handles))
    save(fig, plots, "hotplug.png", written)


def plot_timeline(data, plots, written):
    tools = [t for t in TOOLS if any(data.get((t, f"hotplug_{k}_ms")) for k in KNOBS[:4])]
    if not tools:
        return print("timeline.png: skipped, no hotplug samples")
    fig, (ax,) = new_fig("One hot-add at median times: when each knob of the new disk became set")
    meds = {(t, k): stat(data, t, f"hotplug_{k}_ms") for t in tools for k in KNOBS}
    end = max((s.median for s in meds.values() if s.median is not None), default=1) or 1
    never_x = end * 1.12
    markers = dict(zip(KNOBS[:4], "o^sD"))
    floor = stat(data, "calibrate", "four_knobs_ms")
    if floor.median is not None:
        ax.axvline(floor.median, color="0.3", ls="--", lw=1)
        ax.text(floor.median, -0.45, f" the four writes by shell\n builtins, settled disk: {fmt(floor.median)} ms",
                ha="left", va="top", fontsize=7, color="0.3")
    ax.axvline(never_x, color="0.6", ls=":", lw=1)
    ax.text(never_x, -0.42, "never", ha="center", va="top", fontsize=8, backgroundcolor="white")
    for row, t in enumerate(tools):
        a = meds[(t, "all")]
        last = never_x if a.median is None else a.median
        ax.hlines(row, 0, last, color=COLORS[t], lw=3, alpha=0.35, ls="--" if a.median is None else "-")
        never = []
        for i, k in enumerate(KNOBS[:4]):
            s = meds[(t, k)]
            if not s.values:
                continue
            x = never_x if s.median is None else s.median
            ax.scatter(x, row + (i - 1.5) * 0.12, marker=markers[k], s=50, color=COLORS[t], edgecolors="black",
                       linewidths=0.6, zorder=3)
            if s.median is None:
                never.append(k)
        note = f"never: {', '.join(never)}" if never else f"all set: {fmt(last)} ms" if a.values else ""
        left = last < end * 0.6
        ax.text(last + end * (0.03 if left else -0.03), row + 0.3, note, fontsize=8, ha="left" if left else "right")
    ax.set_yticks(range(len(tools)), [TOOL_NAMES[t] for t in tools])
    ax.set_ylim(len(tools) - 0.5, -0.5)  # first tool on top
    ax.set_xlim(0, never_x * 1.05)
    ax.set_xlabel("ms after the hot-added disk appeared (linear)")
    ax.set_ylabel("tool")
    handles = [plt.Line2D([], [], ls="", marker=markers[k], color="white", markeredgecolor="black", label=k)
               for k in KNOBS[:4]]
    handles += tool_handles(tools)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    save(fig, plots, "timeline.png", written)


def bars(ax, items, unit, scale=1.0):
    """items: [(label, tool, Stat)]; median bars with min-max whiskers, never annotated."""
    top = max((s.nums[-1] * scale for _, _, s in items if s.nums), default=1) or 1
    for x, (_, t, s) in enumerate(items):
        if s.median is None:
            ax.bar(x, top * 1.05, color="white", edgecolor=COLORS[t], hatch="//")
            ax.text(x, top * 1.07, f"never ({s.never}/{len(s.values)})", ha="center", fontsize=8)
            continue
        m, lo, hi = s.median * scale, s.nums[0] * scale, s.nums[-1] * scale
        ax.bar(x, m, color=COLORS[t], yerr=[[m - lo], [hi - m]], capsize=4, ecolor="0.3")
        note = fmt(m) + (f"\n+{s.never} never" if s.never else "")
        ax.text(x, hi + top * 0.02, note, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(items)), [lb for lb, _, _ in items], fontsize=8)
    ax.set_ylim(0, top * 1.25)
    ax.set_ylabel(unit)


def plot_bars(data, plots, written, name, title, panels):
    """panels: [(subtitle, unit, scale, [(label, tool, metric)])]; skip empty ones."""
    filled = []
    for sub, unit, scale, rows in panels:
        items = [(lb, t, stat(data, t, m)) for lb, t, m in rows if data.get((t, m))]
        if items:
            filled.append((sub, unit, scale, items))
    if not filled:
        return print(f"{name}: skipped, no samples for it")
    fig, axes = new_fig(title, len(filled))
    for ax, (sub, unit, scale, items) in zip(axes, filled):
        bars(ax, items, unit, scale)
        ax.set_title(sub, fontsize=10)
        ax.set_xlabel("tool")
        ax.legend(handles=tool_handles(dict.fromkeys(t for _, t, _ in items)), fontsize=8, loc="upper right")
    save(fig, plots, name, written)


def per_tool(metric):
    return [(TOOL_NAMES[t], t, metric) for t in TOOLS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="directory holding boot-N/samples.tsv")
    ap.add_argument("--plots", help="where to write the PNGs (default DIR/plots)")
    args = ap.parse_args()
    files, boots = read_samples(args.dir)
    data = collect(boots)
    report(files, boots, data)
    plots = args.plots or os.path.join(args.dir, "plots")
    os.makedirs(plots, exist_ok=True)
    written = []
    print()
    plot_hotplug(data, plots, written)
    plot_timeline(data, plots, written)
    start = per_tool("start_ms") + [("iotuned\nexec->tuned", "iotuned", "exec_to_tuned_ms"),
                                    ("iotuned\nmain->READY", "iotuned", "main_to_ready_ms")]
    plot_bars(data, plots, written, "start.png", "Start: until 4 disks have all 4 knobs set (median, min-max)",
              [("tool started -> all set", "ms", 1.0, start)])
    plot_bars(data, plots, written, "scale.png", "Scale: many null_blk disks at once (median, min-max)",
              [("scheduler + read-ahead", "ms after the last disk appeared", 1.0,
                per_tool("scale_sched_ra_after_last_ms")),
               ("all four knobs", "ms after the last disk appeared", 1.0, per_tool("scale_after_last_ms")),
               ("tool CPU per disk", "ms CPU per disk", 1.0, per_tool("scale_cpu_ms_per_disk"))])
    plot_bars(data, plots, written, "resources.png", "Resources while idle (median, min-max)",
              [("resident memory (RSS)", "MB", 1 / 1024, per_tool("rss_kb")),
               ("idle wake-ups", "voluntary context switches per second", 1.0, per_tool("idle_wakeups_per_s"))])
    print("PNG files written:" if written else "No PNG file written.")
    for p in written:
        print(f"  {p}")


if __name__ == "__main__":
    main()
