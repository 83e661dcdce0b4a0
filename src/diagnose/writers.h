/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "device.h"
#include "finding.h"

/* "Who else writes this knob": the udev rules, TuneD profile entries and
 * processes (irqbalance, a second iotuned) that write one of a disk's knobs, each
 * with whether it applies to that disk and why. Everything read is untrusted:
 * rules and profiles are capped in size, count and line length, FIFOs and other
 * non-regular files are skipped without blocking. Nothing here logs. */

typedef enum WriterMatch {
        WRITER_MATCH_NO,    /* a match key of the rule rules this disk out */
        WRITER_MATCH_MAYBE, /* no key rules it out, but some could not be evaluated */
        WRITER_MATCH_YES,   /* every key was evaluated and matches this disk */
} WriterMatch;

typedef enum WriterKind {
        WRITER_UDEV_RULE,  /* finding kind "udev-rule-writer" */
        WRITER_TUNED,      /* "tuned-writer" */
        WRITER_IRQBALANCE, /* "irqbalance-writer" */
        WRITER_IOTUNED,    /* "iotuned-writer" */
} WriterKind;

typedef struct Writer {
        WriterKind kind;
        char *who;         /* "udev rule", "TuneD profile 'throughput-performance'", "irqbalance (pid 412)",
                            * "another iotuned (pid 77)" */
        char *knob;        /* knob_table name ("scheduler", "nr_requests", "irq_affinity" for /proc/irq
                            * files), or "*" (another iotuned: every knob) */
        char *value;       /* the value it writes, NULL when unknown (inside a RUN program, a process) */
        char *source;      /* file:line as seen on the system ("/etc/udev/rules.d/60-sched.rules:3",
                            * without the scan's root prefix), NULL for a process */
        WriterMatch match; /* whether it applies to this disk */
        char *why;         /* why it matches, may match or does not: 'KERNEL=="nvme[0-9]*" matches nvme0n1' */
        bool on_add;       /* udev: the rule runs on "add" events (no ACTION key, or ACTION matches add) */
        bool on_change;    /* udev: the rule also runs on "change" events (no ACTION key, or ACTION matches
                            * change): it comes back on every `udevadm trigger` */
        bool dormant;      /* TuneD: the daemon does not run, so the entry writes only once it starts */
} Writer;

typedef struct WriterList {
        Writer *items;
        size_t n;
} WriterList;

void writer_list_done(WriterList *l);

/* Everything found under `root` ("" or NULL for the real system, a fixture tree in
 * tests) that writes one of d's knobs, in the order they act:
 *  - udev rules from {/etc,/run,/usr/local/lib,/usr/lib,/lib}/udev/rules.d/ *.rules
 *    (a base name in an earlier directory masks later ones, a link to /dev/null
 *    masks), in lexical order of base name, then line order: ATTR{[...]queue/<attr>}
 *    assignments and RUN programs whose text names queue/<attr> or /proc/irq;
 *  - the active TuneD profile(s) with their includes: [disk] elevator=/readahead=
 *    (devices= decides the match), [sysfs] /sys/block/.../queue/<attr> keys,
 *    [scheduler] isolated_cores= (it moves IRQs);
 *  - an irqbalance process (always added, knob "irq_affinity": the caller knows
 *    whether the disk has IRQ vectors that irqbalance may move);
 *  - iotuned processes other than the caller (knob "*"): when the caller is
 *    itself iotuned, any other one; otherwise (iotunectl) only when there are two
 *    or more, since one is the daemon.
 * The device's own ATTR/ATTRS/DRIVER facts are read below d->syspath as it is
 * (it is not prefixed with root). Entries that do not apply (WRITER_MATCH_NO) are
 * listed too. 0, or -ENOMEM; unreadable directories and files are skipped. */
int writers_scan(const char *root, const Device *d, WriterList *ret);

/* The writer most likely responsible for `knob` on this disk: a YES before a MAYBE,
 * one naming the knob before "*" (another iotuned), and among equals the last in
 * the list (it acts last: udev rules run in lexical order, TuneD after udev).
 * NULL when none matches. */
const Writer *writers_for_knob(const WriterList *l, const char *knob);

/* The writer most likely to have changed `knob` to `value_seen` (normalized as
 * the knob reads back; NULL: unknown): writers_for_knob()'s ranking, without a
 * TuneD entry whose daemon does not run, or one that writes another value; one
 * that writes exactly that value first, and, when the change was seen at a udev
 * "change" event, a udev rule that runs on those. NULL when none is left. */
const Writer *writers_for_drift(const WriterList *l, const char *knob, const char *value_seen, const char *udev_action);

/* Append one Finding per writer that matches (YES or MAYBE) to `out`, kind
 * "udev-rule-writer", "tuned-writer", "irqbalance-writer" or "iotuned-writer",
 * with knob and source set. WARNING for a YES udev rule or running TuneD entry that
 * writes a queue knob, and for another iotuned; NOTICE for the rest (irqbalance,
 * MAYBE matches, IRQ writes, TuneD entries while TuneD does not run). The summary
 * names file:line, knob, value and reason, e.g.
 * '/etc/udev/rules.d/60-io.rules:3 sets scheduler=mq-deadline on add|change events
 * (KERNEL=="nvme*" matches nvme0n1)'. 0 or -ENOMEM. */
int writers_findings(const WriterList *l, const char *device, FindingList *out);
