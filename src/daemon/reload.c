/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Configuration: loaded at start (an invalid one refuses the start) and on
 * SIGHUP (an invalid one is refused and the configuration in force kept; a
 * valid one re-plans every disk, restores what it no longer tunes, and keeps the
 * drift history of what it still does). */
#include <assert.h>
#include <systemd/sd-daemon.h>

#include "events.h"
#include "log.h"
#include "manager-internal.h"
#include "timing.h"
#include "util.h"

int manager_load_config(Manager *m, bool reload, Config **ret) {
        TIMING_SCOPE(TIMING_CONFIG);
        Diag diag = {};
        int r;

        assert(m);
        assert(ret);

        r = tuner_load_config(&m->tuner, ret, &diag);
        for (size_t i = 0; i < diag.n; i++)
                event_config_error(&diag.items[i], reload);
        diag_done(&diag);
        return r;
}

int manager_reload(Manager *m) {
        _cleanup_(config_freep) Config *c = NULL;
        Plan old;
        int r;

        assert(m);

        log_info("Reloading configuration.");
        r = manager_load_config(m, true, &c);
        if (r < 0) {
                m->reload_failures++;
                manager_notify_status(m, "last reload refused: invalid configuration (journalctl -u iotuned)");
                return 0; /* keep running with the old configuration */
        }

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec(CLOCK_MONOTONIC));
        config_free(m->config);
        m->config = TAKE_PTR(c);
        /* CPUs may have been isolated or brought online since start. */
        (void) tuner_reload_topology(&m->tuner);
        old = m->plan;
        m->plan = (Plan) {};
        manager_plan_names_drop(m);
        /* Each disk's drift history, holds and load carry over into its new plan
         * (manager_tune_device): a setting in conflict stays held. */
        m->replaced = &old;
        r = manager_tune_all(m);
        m->replaced = NULL;
        for (size_t i = 0; i < old.n; i++) {
                ssize_t idx = manager_plan_index(m, old.devices[i]->device->name);
                manager_restore_dropped_knobs(m, old.devices[i], idx >= 0 ? m->plan.devices[idx] : NULL);
        }
        plan_done(&old);
        manager_arm_path_poll(m);
        heap_trim(m->plan.n);
        manager_sync_irqbalance(m);
        (void) manager_arm_drift_timer(m);
        publisher_setup_watchdog(m->publisher, m->config->reassert_usec);
        manager_write_status(m);
        manager_notify_status(m, NULL);
        (void) sd_notify(false, "READY=1");
        return r;
}
