/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The drift check: every reassert interval (with jitter) each kept plan is
 * reconciled again; what was put back is drift, counted and backed off from by
 * backoff.c, and a first tuning that waited to be reported is reported. */
#include <assert.h>

#include "events.h"
#include "fileio.h"
#include "hold.h"
#include "log.h"
#include "manager-internal.h"
#include "timing.h"
#include "util.h"

/* A multipath path whose controller is not live (connecting, resetting) is not
 * written: changing its queue freezes it, which waits for the I/O the fabric
 * holds until the controller reconnects (up to ctrl_loss_tmo, 600 s by
 * default), and the daemon with it. Its "connected" event has it tuned again
 * (hotplug.c). */
static bool path_not_live(const DevicePlan *p) {
        _cleanup_free_ char *state = NULL;
        const NvmeCtrl *c = p->device->nvme;

        if (!p->device->multipath_head_name || !c || !c->syspath || read_attr_at(c->syspath, "state", &state) < 0)
                return false;
        return !streq(strstrip(state), "live");
}

static bool any_failed(const DevicePlan *p) {
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].state == STATE_FAILED)
                        return true;
        return false;
}

int manager_check_drift(Manager *m) {
        int targets[_KNOB_MAX];
        uint64_t now;
        bool changed = false;
        int r;

        assert(m);

        /* The event's time for the accounting; the durations below are measured. */
        now = manager_now(m, CLOCK_MONOTONIC);
        r = manager_release_holds(m);
        if (r == -ENOMEM)
                return r;
        /* A disk can be held only while a hold file exists (or was seen). */
        bool holds = m->held || hold_any(m->tuner.hold_dir);
        /* One read of /proc/interrupts for every disk's vectors (load.c). */
        _cleanup_(irq_counts_done) IrqCounts irqs = {};
        bool have_irqs = tuner_read_irq_counts(&m->tuner, NULL, 0, &irqs) >= 0;
        /* And one of /proc/diskstats for every disk's stat. */
        _cleanup_(diskstats_done) DiskStats stats = {};
        bool have_stats = tuner_read_diskstats(&m->tuner, &stats) >= 0;
        plan_module_targets(m->plan.devices, m->plan.n, targets);
        for (size_t i = 0; i < m->plan.n; i++) {
                DevicePlan *p = m->plan.devices[i];

                r = manager_early_overdue(m, i, now);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                ssize_t pi = manager_pending_index(m, p->device->name);
                if (pi >= 0) {
                        /* Its first tuning waits to be reported (or forgotten with the disk). */
                        if (now - m->report_pending_since[pi] < PENDING_REPORT_USEC)
                                continue;
                        if (device_vanished(p->device)) {
                                log_debug("%s was removed while it was being tuned; its remove event follows.",
                                          p->device->name);
                                continue;
                        }
                        manager_pending_drop(m, p->device->name);
                        event_log_tuned(p);
                        changed = true;
                        continue; /* corrected, if needed, from the next check on */
                }
                if (path_not_live(p) || (holds && manager_disk_held(m, p->device->name))) {
                        /* Not looked at: the next load sample starts afresh (a hold's
                         * load is tune's own measuring). */
                        p->has_stat = false;
                        continue;
                }
                if (p->error && strv_contains(m->unrecorded, p->device->name)) {
                        r = manager_retry_unrecorded(m, p, targets);
                        if (r == -ENOMEM)
                                return r;
                        changed = changed || r > 0;
                        continue;
                }
                if (p->excluded || p->error)
                        continue;
                changed = manager_sample_load(m, p, have_stats ? &stats : NULL,
                                              drift_check_irqs(m->drift), have_irqs ? &irqs : NULL) ||
                          changed;
                for (size_t k = 0; k < p->n_settings; k++)
                        p->settings[k].hold = backoff_held(&p->settings[k].rt, now);
                r = tuner_reconcile_device(&m->tuner, p, RECONCILE_APPLY, targets, false);
                if (r == -ENOMEM)
                        return r;
                /* A disk removed since the last check fails its reads (its kept
                 * descriptors answer ENODEV): asked only then whether it is gone,
                 * not with a path lookup per disk and check (a fifth of a check's
                 * CPU with 1024 disks in the test-bed guest). Its remove event is on
                 * the way; its failures are not reported. */
                if (any_failed(p) && device_vanished(p->device)) {
                        p->has_stat = false;
                        continue;
                }
                timing_count_disk();
                /* Every 32 disks: each call reads the clock (a system call and an HPET
                 * read in a guest without a usable TSC), and 32 disks take milliseconds. */
                if (i % 32 == 31)
                        manager_keepalive(m);
                for (size_t k = 0; k < p->n_settings; k++) {
                        Setting *s = &p->settings[k];
                        if (s->state == STATE_CHANGED) {
                                s->rt.last_change_usec = manager_now(m, CLOCK_REALTIME);
                                if (s->reset_by)
                                        log_debug("%s: %s written again: the %s correction reset it.",
                                                  p->device->name, setting_label(s), s->reset_by->name);
                                else
                                        manager_note_drift(m, p, s, now, DRIFT_SEEN_CHECK);
                                changed = true;
                        } else if (s->state == STATE_FAILED && s->rt.last_reported != STATE_FAILED) {
                                event_setting(EVENT_FAILED, LOG_WARNING, p, s, "%s: %s: %s", p->device->name,
                                              setting_label(s), s->note ?: "failed");
                                changed = true;
                        } else if (s->state != s->rt.last_reported)
                                changed = true;
                        s->rt.last_reported = s->state;
                        s->hold = false;
                }
        }
        /* This check's counts are the next one's "before". */
        drift_check_keep_irqs(m->drift, &irqs, have_irqs);
        manager_sync_irqbalance(m);
        bool dirty = publisher_take_dirty(m->publisher);
        if (changed || dirty ||
            manager_now(m, CLOCK_REALTIME) - drift_check_counts(m->drift)->last_check_usec >= STATUS_REFRESH_USEC) {
                drift_check_published(m->drift, manager_now(m, CLOCK_REALTIME));
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
        /* A check over hundreds of disks frees as much as it allocates (every value
         * read, the status document): handed back, or the heap keeps the high
         * water mark of the largest check (26 of 30 MB free with 1024 disks). */
        heap_trim(m->plan.n);
        return 0;
}

void manager_run_drift_check(void *userdata) {
        Manager *m = userdata;
        int r;

        assert(m);

        timing_begin(0, "drift check");
        r = manager_check_drift(m);
        if (publisher_watchdog_in_check(m->publisher))
                manager_keepalive(m);
        timing_end_log();

        if (r < 0)
                log_error_errno(r, "Drift check failed: %m");
}
