/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "blockstat.h"
#include "finding.h"
#include "histogram.h"
#include "knob.h"
#include "stats.h"
#include "tuner.h"

/* Measured tuning (`iotunectl tune`): each knob's candidates are set through the
 * reconcile path (originals recorded first), a read-only io_uring load runs on
 * the disk under each, in rounds that alternate the candidates, and a
 * candidate replaces the profile's value only when it wins beyond the noise
 * (stats.h). Every value measured is put back at the end. iotunectl(8),
 * "Measured tuning", documents the method and its limits. */

#define MEASURE_MAX_DEPTHS 4
#define MEASURE_MAX_ROUNDS 32 /* <= STATS_MAX_ROUNDS */
#define MEASURE_MAX_CANDIDATES 6

/* The knobs measured, in this order (the scheduler first: switching it resets
 * nr_requests). */
#define MEASURE_KNOBS                                                                                                  \
        (KNOB_MASK(KNOB_SCHEDULER) | KNOB_MASK(KNOB_NR_REQUESTS) | KNOB_MASK(KNOB_RQ_AFFINITY) |                       \
         KNOB_MASK(KNOB_NOMERGES) | KNOB_MASK(KNOB_WBT_LAT_USEC))

typedef struct MeasureProgress {
        const char *disk;
        const char *knob;
        const char *candidate;
        unsigned round; /* 1-based */
        unsigned rounds;
        unsigned depth;
        uint64_t left_usec; /* estimated time left for this disk */
} MeasureProgress;

typedef struct MeasureOptions {
        unsigned block_size;
        unsigned depths[MEASURE_MAX_DEPTHS];
        size_t n_depths;
        unsigned rounds;
        uint64_t runtime_usec;   /* per probe */
        uint64_t warmup_usec;    /* per probe, not counted */
        uint64_t offset, length; /* the range read; length 0: to the end */
        bool hipri;
        double min_effect;       /* the smallest relative gain acted on */
        double alpha;            /* the sign test's level */
        unsigned knobs;          /* KNOB_MASK()s within MEASURE_KNOBS */
        bool poll;               /* also measure interrupt against polled reads, where the disk polls */
        double busy_utilisation; /* refuse a disk busier than this (0..1) ... */
        bool force;              /* ... unless forced */
        const volatile sig_atomic_t *stop;
        void (*progress)(const MeasureProgress *p, void *userdata);
        void *userdata;
} MeasureOptions;

typedef struct DepthResult {
        Histogram latency; /* every round's counted reads */
        double iops[MEASURE_MAX_ROUNDS];
        double p99_usec[MEASURE_MAX_ROUNDS];
        PairedEffect iops_effect; /* against the baseline; zero for the baseline */
        PairedEffect p99_effect;
        EffectVerdict iops_verdict, p99_verdict;
} DepthResult;

typedef enum CandidateVerdict {
        CANDIDATE_BASELINE, /* the profile's value (or the current one where the profile sets none) */
        CANDIDATE_TIE,
        CANDIDATE_BETTER,
        CANDIDATE_WORSE,
        CANDIDATE_MIXED,  /* better on one measure, worse on another: kept out */
        CANDIDATE_FAILED, /* the kernel refused it */
        CANDIDATE_SAME,   /* the kernel resolves it to another candidate's value: measured once */
        CANDIDATE_WINNER, /* better, and the best of the better ones */
        _CANDIDATE_VERDICT_MAX,
} CandidateVerdict;

const char *candidate_verdict_to_string(CandidateVerdict v);

typedef struct Candidate {
        char *value;    /* canonical: "none", "max", "2" */
        char *observed; /* what the kernel read back under it */
        CandidateVerdict verdict;
        char *note; /* why failed */
        /* Each round's gain averaged over every measure (IOPS and p99 at each depth):
         * the one test a candidate must pass; the measures' own verdicts only keep
         * out a candidate that is worse on one of them ("mixed"). */
        PairedEffect combined;
        DepthResult depth[MEASURE_MAX_DEPTHS];
} Candidate;

typedef struct KnobTrial {
        KnobId knob; /* _KNOB_INVALID for the poll trial */
        bool poll;   /* not a knob: interrupt-driven against polled reads (candidates
                      * "interrupt", the baseline, and "polled") on a disk with poll queues */
        char *from;  /* where the baseline came from: "profile latency", "current value" */
        Candidate candidates[MEASURE_MAX_CANDIDATES]; /* [0] is the baseline */
        size_t n;
        size_t chosen; /* the winner, or 0 */
        char *skipped; /* why the knob was not measured, or NULL */
        bool judged;   /* every round measured and the verdicts given (not when interrupted) */
} KnobTrial;

/* "scheduler", ..., or "poll". */
const char *knob_trial_name(const KnobTrial *kt);

typedef struct MeasureReport {
        char *disk;
        char *model, *serial;
        char *profile;  /* the disk's profile */
        char *rule;     /* the rule that chose it */
        bool pinned;    /* IOTUNED_PROFILE chose it: a rule's set: would not apply */
        BlockLoad load; /* before: the busy check */
        unsigned rounds_done;
        KnobTrial trials[_KNOB_MAX + 1]; /* the knobs, then poll */
        size_t n_trials;
        char *restore_error; /* what could not be put back, NULL when all was */
        bool interrupted;
        FindingList health;  /* an NVMe drive's critical health findings (throttling, a SMART
                              * critical warning): what was measured may not be the software path */
} MeasureReport;

void measure_report_done(MeasureReport *r);

/* Measure disk `name` under `c`. -EBUSY when it is busier than
 * o->busy_utilisation and !o->force (r->load says how busy); -EINTR when
 * o->stop was set (what was measured is restored and reported); a lookup
 * failure as tuner_lookup() returns it, with *ret_why NULL; other -errno with
 * *ret_why (static text, or NULL for -ENOMEM). The disk is held against the daemon
 * (hold.h) from before the first write until everything is restored. */
int tuner_measure(Tuner *t, const Config *c, const char *name, const MeasureOptions *o, MeasureReport *r,
                  const char **ret_why);

/* The values a knob is measured with besides the baseline (iotunectl(8)). */
int measure_candidates(KnobId k, const Device *d, char ***ret);
