/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where the time of one trigger goes: the daemon opens a span for each thing it
 * reacts to (start, a udev batch, a kernel event, a drift check, a reload), and
 * the code it calls marks its phases with timing_enter()/timing_leave(). The
 * accounting is exclusive: a phase entered inside another pauses the outer one,
 * so the phases add up to the span's wall time, the rest being "other" (the
 * marks count x86's time-stamp counter, shared out over the wall time at the
 * end; see ticks() in timing.c). Outside a span the marks cost one branch. One span at a time, on the thread that
 * opened it; marks on other threads (reconcile_devices()'s) do nothing. */

#include <stdbool.h>
#include <stdint.h>

typedef enum TimingPhase {
        TIMING_CONFIG,     /* parsing configuration and profiles */
        TIMING_ENUMERATE,  /* listing disks (libudev enumerate) */
        TIMING_PROBE_UDEV, /* a disk's udev device and sysfs attributes */
        TIMING_PROBE_NVME, /* its controller: sysfs, and Identify through libnvme */
        TIMING_PROBE_IRQS, /* /proc/interrupts and MSI vector lists */
        TIMING_PROBE_TOPO, /* CPU and NUMA topology */
        TIMING_LOAD,       /* a disk's I/O statistics and their findings (drift check) */
        TIMING_PLAN,       /* rules, profiles, vector placement */
        TIMING_READ,       /* reconcile: reading what is in place */
        TIMING_WRITE,      /* reconcile: writing */
        TIMING_RECORD,     /* recording originals under /run/iotuned */
        TIMING_IRQBALANCE, /* irqbalance's bans */
        TIMING_PUBLISH,    /* status.json and metrics */
        TIMING_JOURNAL,    /* structured journal messages */
        TIMING_NOTIFY,     /* sd_notify */
        _TIMING_MAX,
} TimingPhase;

typedef struct TimingSpan {
        char trigger[64];
        uint64_t start_usec, cpu_start_usec, wall_usec, cpu_usec;
        uint64_t usec[_TIMING_MAX + 1]; /* the last: "other" */
        unsigned disks;
} TimingSpan;

const char *timing_phase_name(TimingPhase p);

/* Open the span (closing any open one first, unlogged). `start_usec` is when the
 * trigger began on CLOCK_MONOTONIC (0: now): a start begins at main(). Only when
 * timing_log_level is logged (iotuned -v or --timing): otherwise nothing is
 * measured and the marks cost one branch. */
void timing_begin(uint64_t start_usec, const char *trigger);
bool timing_active(void);
void timing_enter(TimingPhase p);
void timing_leave(void);
/* A disk was tuned (or verified) in this span. */
void timing_count_disk(void);
/* Close the span; *ret (may be NULL) gets it. */
void timing_end(TimingSpan *ret);
/* Close the span and log it at timing_log_level (debug unless iotuned --timing
 * made it info): "timing: TRIGGER: W ms wall, C ms CPU, N disks; config ...,
 * other ..." (phases under 0.05 ms left out), with TIMING_* journal fields.
 * Nothing when no span is open or that level is not logged. */
void timing_end_log(void);
extern int timing_log_level;
/* The line's text after "timing: " (for tests). */
int timing_format(const TimingSpan *s, char **ret);

/* CLOCK_MONOTONIC at main()'s first line: the daemon's start span begins there. */
extern uint64_t timing_main_usec;

static inline void timing_leavep(int *unused) {
        timing_leave();
}
/* Time the rest of the enclosing block as phase `p`. */
#define TIMING_SCOPE(p) __attribute__((cleanup(timing_leavep), unused)) int _timing_scope_ = (timing_enter(p), 0)
