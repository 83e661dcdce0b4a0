/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "backoff.h"
#include "config.h"
#include "macro.h"
#include "plan.h"

/* What the daemon publishes: status.json (the plan JSON of report/ plus the
 * daemon's counters), the metrics textfile, systemd's STATUS= line, and the
 * watchdog's WATCHDOG=1. Owned by the Manager, which says what to publish
 * (PublishState); nothing here knows the Manager. */
typedef struct Publisher Publisher;

/* status.json is rewritten on every change, and at least this often so that
 * last_check_realtime_usec shows a monitor the daemon is alive. */
#define STATUS_REFRESH_USEC (60ULL * USEC_PER_SEC)

/* Everything published besides the Publisher's own state, borrowed for one call. */
typedef struct PublishState {
        const Config *config;
        const Plan *plan;
        unsigned drifts_corrected;
        unsigned conflicts;
        unsigned reload_failures;
        uint64_t last_check_usec;        /* CLOCK_REALTIME of the last drift check, 0: none yet */
        int irqbalance_pid;              /* 0: none */
        const char *irqbalance_state;    /* NULL: not known */
        const unsigned *banned;          /* the IRQs iotuned bans in irqbalance */
        size_t n_banned;
} PublishState;

/* root: the Tuner's ("" for the real system); status.json is resolved inside it. */
int publisher_new(sd_event *event, const char *root, Publisher **ret);
Publisher *publisher_free(Publisher *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Publisher *, publisher_free);

/* The metrics textfile (when configured), then status.json. */
void publisher_write_status(Publisher *p, const PublishState *s);
/* STATUS=: "6 devices: latency 4, throughput 2; 3 drifts corrected; 1 conflict",
 * and "; extra" when given. */
void publisher_notify_status(Publisher *p, const PublishState *s, const char *extra);
/* At stop: status.json and the metrics textfile of `c` removed. */
void publisher_unpublish(Publisher *p, const Config *c);

/* Something status.json shows changed outside a drift check: the next chance to
 * publish (a drift check, the end of an irqbalance exchange) does. */
void publisher_mark_dirty(Publisher *p);
/* Whether it was marked since, and no longer. */
bool publisher_take_dirty(Publisher *p);

/* WatchdogSec=: pinged by the drift checks when they come at least twice per
 * watchdog period (one wake-up for both), else by sd-event's own timer; and
 * during long work (a start, a burst of hundreds of disks) from within, at most
 * every quarter period, so that a busy loop is not taken for a hung one.
 * reassert_usec: the drift check's interval, its jitter added here. */
void publisher_setup_watchdog(Publisher *p, uint64_t reassert_usec);
void publisher_keepalive(Publisher *p);
/* Whether the drift checks ping the watchdog (publisher_keepalive() after each). */
bool publisher_watchdog_in_check(const Publisher *p);
