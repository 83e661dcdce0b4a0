/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the Manager hands its Publisher: the plans, the configuration in force,
 * the counters and irqbalance's state, as they are now. */
#include <assert.h>

#include "manager-internal.h"

static PublishState publish_state(const Manager *m) {
        size_t n_banned;
        const unsigned *banned = bankeeper_banned(m->bans, &n_banned);
        const DriftCounts *dc = drift_check_counts(m->drift);

        return (PublishState) {
                .config = m->config,
                .plan = &m->plan,
                .drifts_corrected = dc->drifts_corrected,
                .conflicts = dc->conflicts,
                .reload_failures = m->reload_failures,
                .last_check_usec = dc->last_check_usec,
                .irqbalance_pid = bankeeper_pid(m->bans),
                .irqbalance_state = bankeeper_state(m->bans),
                .banned = banned,
                .n_banned = n_banned,
        };
}

void manager_write_status(Manager *m) {
        PublishState s;

        assert(m);

        s = publish_state(m);
        publisher_write_status(m->publisher, &s);
}

void manager_notify_status(Manager *m, const char *extra) {
        PublishState s;

        assert(m);

        s = publish_state(m);
        publisher_notify_status(m->publisher, &s, extra);
}
