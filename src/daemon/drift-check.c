/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The drift check's timer and the state carried from one check to the next. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "drift-check.h"
#include "util.h"

struct DriftCheck {
        sd_event *event;
        sd_event_source *source;
        void (*run)(void *userdata);
        void *userdata;
        uint64_t interval_usec;          /* as last armed */
        DriftCounts counts;
        IrqCounts irq_counts;            /* the tuned disks' vectors at the last drift check (load.c) */
        bool has_irq_counts;
};

int drift_check_new(sd_event *event, void (*run)(void *userdata), void *userdata, DriftCheck **ret) {
        DriftCheck *c;

        assert(event);
        assert(run);
        assert(ret);

        c = calloc(1, sizeof(DriftCheck));
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(event);
        c->run = run;
        c->userdata = userdata;
        *ret = c;
        return 0;
}

DriftCheck *drift_check_free(DriftCheck *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->source);
        sd_event_unref(c->event);
        irq_counts_done(&c->irq_counts);
        free(c);
        return NULL;
}

static int on_drift_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        DriftCheck *c = userdata;

        assert(c);

        c->run(c->userdata);
        return drift_check_arm(c, c->interval_usec);
}

int drift_check_arm(DriftCheck *c, uint64_t interval_usec) {
        uint64_t interval = interval_usec, jitter = 0;
        int r;

        assert(c);

        c->interval_usec = interval_usec;
        /* Up to 10% jitter so a fleet's nodes do not all read sysfs in lockstep. */
        if (getrandom(&jitter, sizeof(jitter), GRND_NONBLOCK) != sizeof(jitter))
                jitter = 0;
        jitter %= interval / 10 + 1;

        if (c->source) {
                r = sd_event_source_set_time_relative(c->source, interval + jitter);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->source, SD_EVENT_ONESHOT);
                return r;
        }
        r = sd_event_add_time_relative(c->event, &c->source, CLOCK_MONOTONIC, interval + jitter, interval / 20,
                                       on_drift_timer, c);
        if (r < 0)
                return r;
        return sd_event_source_set_description(c->source, "drift-check");
}

const DriftCounts *drift_check_counts(const DriftCheck *c) {
        assert(c);

        return &c->counts;
}

void drift_check_count_drift(DriftCheck *c, bool conflict_begins) {
        assert(c);

        c->counts.drifts_corrected++;
        if (conflict_begins)
                c->counts.conflicts++;
}

void drift_check_published(DriftCheck *c, uint64_t realtime_usec) {
        assert(c);

        c->counts.last_check_usec = realtime_usec;
}

const IrqCounts *drift_check_irqs(const DriftCheck *c) {
        assert(c);

        return c->has_irq_counts ? &c->irq_counts : NULL;
}

void drift_check_keep_irqs(DriftCheck *c, IrqCounts *irqs, bool have) {
        assert(c);
        assert(irqs);

        irq_counts_done(&c->irq_counts);
        c->irq_counts = *irqs;
        c->has_irq_counts = have;
        *irqs = (IrqCounts) {};
}
