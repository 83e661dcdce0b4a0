/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "irq-counts.h"
#include "macro.h"

/* The drift check's timer (every reassert interval, with up to 10% jitter) and
 * what one check leaves the next: the tuned disks' vectors' interrupt counts,
 * the drift counters, the time of the last check that published. The check
 * itself, over the plans, is its owner's: the Manager's run callback
 * (manager_check_drift()). */
typedef struct DriftCheck DriftCheck;

typedef struct DriftCounts {
        unsigned drifts_corrected;
        unsigned conflicts;
        uint64_t last_check_usec;        /* CLOCK_REALTIME of the last drift check that published, 0: none */
} DriftCounts;

/* run: one drift check, when the timer fires; it is armed again after it. */
int drift_check_new(sd_event *event, void (*run)(void *userdata), void *userdata, DriftCheck **ret);
DriftCheck *drift_check_free(DriftCheck *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(DriftCheck *, drift_check_free);

/* (Re)arm the timer: the next check in interval_usec and a jitter of up to a
 * tenth of it; later ones at the same interval. */
int drift_check_arm(DriftCheck *c, uint64_t interval_usec);

const DriftCounts *drift_check_counts(const DriftCheck *c);
/* A setting drifted and was put back; conflict_begins: a new conflict episode. */
void drift_check_count_drift(DriftCheck *c, bool conflict_begins);
/* A check published its state at realtime_usec. */
void drift_check_published(DriftCheck *c, uint64_t realtime_usec);

/* The interrupt counts of the last check (NULL: none read), and this check's,
 * taken (*irqs emptied) as the next one's "before"; have: they were read. */
const IrqCounts *drift_check_irqs(const DriftCheck *c);
void drift_check_keep_irqs(DriftCheck *c, IrqCounts *irqs, bool have);
