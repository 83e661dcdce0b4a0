/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

/* Drift accounting (see iotuned(8)): a setting reverted CONFLICT_DRIFTS times
 * within CONFLICT_WINDOW is in conflict with something; iotuned stops writing it
 * for BACKOFF_BASE << level (capped at BACKOFF_MAX), reports that once, and tries
 * again afterwards. An episode ends after CONFLICT_QUIET without drift. Times are
 * CLOCK_MONOTONIC microseconds; nothing here logs or reads a clock. */
#define USEC_PER_SEC 1000000ULL
#define CONFLICT_WINDOW_USEC (60ULL * USEC_PER_SEC)
#define CONFLICT_DRIFTS 5u
#define BACKOFF_BASE_USEC (30ULL * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (3600ULL * USEC_PER_SEC)
#define CONFLICT_QUIET_USEC (5ULL * 60ULL * USEC_PER_SEC)

typedef enum DriftVerdict {
        DRIFT_COUNTED,          /* one more drift, no hold */
        DRIFT_CONFLICT_BEGINS,  /* a new conflict episode: held, to be reported */
        DRIFT_CONFLICT_HOLDS,   /* within an episode: held again, for longer */
} DriftVerdict;

/* Before a drift check writes `rt`'s setting: whether it is held (back-off), and
 * the end of a conflict episode after CONFLICT_QUIET_USEC without drift. */
bool backoff_held(SettingRuntime *rt, uint64_t now);

/* The setting drifted and was put back at `now`: count it, and hold it when it
 * has drifted CONFLICT_DRIFTS times within the window. *ret_hold_usec: how long
 * it is held, 0 when it is not. */
DriftVerdict backoff_note_drift(SettingRuntime *rt, uint64_t now, uint64_t *ret_hold_usec);
