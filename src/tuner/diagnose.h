/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "blockstat.h"
#include "finding.h"
#include "tuner.h"

/* `iotunectl diagnose`: what the files iotuned reads anyway say about each disk,
 * over two samples `interval_usec` apart, read-only. */
typedef struct DiagnoseOptions {
        uint64_t interval_usec;  /* between the two samples of stat, interrupts, hctx counters */
        bool health;             /* read the NVMe SMART / health log and APST (admin commands) */
} DiagnoseOptions;

#define DIAGNOSE_INTERVAL_DEFAULT_USEC (1000ULL * 1000ULL)
/* /sys/block/X/inflight is sampled this many times within the interval. */
#define DIAGNOSE_INFLIGHT_SAMPLES 10u

typedef struct DiagnoseDevice {
        DevicePlan *plan;        /* the disk's plan, verified (desired against observed), never written */
        FindingList findings;    /* most severe first */
        BlockLoad load;
        bool has_load;
} DiagnoseDevice;

typedef struct DiagnoseReport {
        DiagnoseDevice *items;
        size_t n;
        double seconds;          /* the interval actually sampled */
} DiagnoseReport;

void diagnose_report_done(DiagnoseReport *r);

/* The named disks (every disk when `names` is empty): plan and verify them, then
 * sample, then collect the findings of diagnose/: load, interrupt balance and
 * queue maps, poll-queue use, drive health (once per controller), other writers
 * of the knobs, settings not as planned. On a lookup failure
 * *ret_bad names the disk (see tuner_lookup()). */
int tuner_diagnose(Tuner *t, const Config *c, char *const *names, const DiagnoseOptions *o, DiagnoseReport *ret,
                   const char **ret_bad);
