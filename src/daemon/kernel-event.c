/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A hot-added disk, tuned at the kernel's own event.
 *
 * udev's event for a new disk arrives once udevd has run its rules, ~150 ms
 * after the kernel's under emulation and tens of milliseconds on hardware;
 * until then a fresh NVMe drive runs with the kernel's defaults. So the
 * kernel's "add" (monitor group "kernel": the disk's queue directory is
 * registered before it is sent, block/genhd.c device_add_disk) has the disk's
 * queue rows written at once: scheduler, nr_requests, rq_affinity, read-ahead
 * and the rest of the queue section, nothing else. Vectors, NVMe features and
 * irqbalance follow at udev's event, when the disk is planned afresh with udev's
 * properties and every row is reconciled: a queue row a udev rule rewrote in
 * between is put back there and counted as drift (DRIFT_SEEN=udev-add, the
 * rule named), never silently undone.
 *
 * Only what is certain is done early: a disk whose plan could depend on udev
 * (rules that match udev properties; for non-NVMe disks, rules that match
 * identity udev supplies), a name still planned for another disk (its udev
 * "remove" has not been handled yet), a held disk, a multipath head: all wait
 * for udev. A disk whose udev event never comes is tuned fully by the drift
 * check once EARLY_WAIT_USEC old (drift.c).
 *
 * The kernel's events are heard and queued by the Manager's KernelQueue
 * (kernel-queue.c), which hands them here a chunk at a time. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "fileio.h"
#include "log.h"
#include "originals.h"
#include "manager-internal.h"
#include "timing.h"
#include "util.h"

bool manager_early_allowed(const Manager *m, const Device *d) {
        assert(m);
        assert(d);

        for (size_t i = 0; i < m->config->n_rules; i++) {
                const Match *x = &m->config->rules[i].match;
                if (x->n_udev > 0)
                        return false;
                /* NVMe identity is the controller's own (sysfs); others' comes from udev's
                 * ID_* where the kernel has none. */
                if (!d->nvme && (x->model || x->serial || x->firmware || x->wwn || x->transport))
                        return false;
        }
        return true;
}

/* Plan the queue rows of the disk of the kernel's event `u` beside the kept plans;
 * NULL when it waits for udev's event. The event's own device is probed: the
 * kernel's properties (DEVTYPE, DEVNAME, DISKSEQ) are in it, and no udev database
 * entry exists yet to be read. */
static DevicePlan *plan_early(Manager *m, struct udev_device *u, int targets[_KNOB_MAX]) {
        DiscoveryFilter f = tuner_discovery_filter(m->config);
        const char *name = udev_device_get_sysname(u);
        DevicePlan *p = NULL;
        Device *d = NULL;
        int r;

        if (!device_name_wanted(name, &f) || device_name_is_nvme_path(name))
                return NULL;
        if (manager_plan_index(m, name) >= 0)
                /* Planned: the same disk (start raced it, or twice in this chunk), or
                 * another whose remove is on its way. */
                return NULL;
        if (manager_disk_held(m, name))
                return NULL;
        r = device_probe_quick(u, &d);
        if (r < 0) {
                if (r != -ENODEV)
                        log_debug_errno(r, "%s: cannot probe it at the kernel's event: %m", name);
                return NULL;
        }
        if (!d->has_mq || d->multipath_head || !manager_early_allowed(m, d)) {
                device_free(d);
                return NULL;
        }
        r = tuner_plan_device(&m->tuner, m->config, d, &m->plan, &p, targets);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot plan it at the kernel's event: %m", name);
                return NULL;
        }
        if (p->excluded || p->error)
                return device_plan_free(p); /* said at udev's event */
        return p;
}

/* After its queue rows were reconciled (`r`): keep the plan until udev's event. */
static void keep_early(Manager *m, DevicePlan *p, int r) {
        unsigned changed = 0;

        timing_count_disk();
        if (r < 0) {
                /* Originals not recordable: nothing was written; udev's event says why. */
                device_plan_free(p);
                return;
        }
        p->early_usec = now_usec(CLOCK_MONOTONIC);
        manager_stamp_changes(m, p);
        for (size_t k = 0; k < p->n_settings; k++)
                changed += p->settings[k].state == STATE_CHANGED;
        log_debug("%s: %u queue setting%s written at the kernel's add event; the rest at udev's.", p->device->name,
                  changed, changed == 1 ? "" : "s");
        if (manager_plan_append(m, p) < 0)
                log_oom();
}

/* Only queue rows: the plan udev's event would make is this one, unless udev pins
 * a profile. */
static bool queue_rows_only(const DevicePlan *p) {
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].knob->scope != KNOB_SCOPE_QUEUE)
                        return false;
        return true;
}

int manager_verify_early(Manager *m, size_t i) {
        DevicePlan *p = m->plan.devices[i];
        _cleanup_free_ SettingState *early = NULL;
        _cleanup_free_ char *seq = NULL;
        int targets[_KNOB_MAX], r;
        bool replan;
        uint64_t now;

        assert(m);
        assert(i < m->plan.n);

        if (!p->early_usec || !queue_rows_only(p))
                return 0;
        /* Still the disk planned at the kernel's event, and no profile pinned by udev
         * (seen in udev's event itself: hotplug.c). */
        timing_enter(TIMING_PROBE_UDEV);
        replan = (m->udev && udev_batch_pinned(m->udev, p->device->syspath)) ||
                 (read_attr_at(p->device->syspath, "diskseq", &seq) >= 0 &&
                  !streq_ptr(strstrip(seq), p->device->diskseq));
        timing_leave();
        if (replan)
                return 0;

        early = calloc(p->n_settings ?: 1, sizeof(SettingState));
        _cleanup_free_ char **previous = calloc(p->n_settings ?: 1, sizeof(char *));
        if (!early || !previous)
                return -ENOMEM;
        now = manager_now(m, CLOCK_MONOTONIC);
        for (size_t k = 0; k < p->n_settings; k++) {
                early[k] = p->settings[k].state;
                p->settings[k].hold = backoff_held(&p->settings[k].rt, now);
        }
        for (size_t k = 0; k < p->n_settings; k++)
                previous[k] = TAKE_PTR(p->settings[k].previous);
        plan_module_targets(m->plan.devices, m->plan.n, targets);
        r = tuner_reconcile_device(&m->tuner, p, RECONCILE_APPLY, targets, false);
        timing_count_disk();
        if (r == -ENOMEM) {
                for (size_t k = 0; k < p->n_settings; k++)
                        free(previous[k]);
                return r;
        }
        p->early_usec = 0;
        for (size_t k = 0; k < p->n_settings; k++) {
                Setting *s = &p->settings[k];
                if (early[k] == STATE_CHANGED && manager_early_readahead_reset(p, s, previous[k]))
                        ; /* the kernel's own read-ahead set-up, not a writer: not drift */
                else if (s->state == STATE_CHANGED && !s->reset_by && early[k] == STATE_CHANGED) {
                        /* A udev rule rewrote it between the kernel's event and udev's: put
                         * back, and counted as drift, with who did it. */
                        s->rt.last_change_usec = manager_now(m, CLOCK_REALTIME);
                        manager_note_drift(m, p, s, now, DRIFT_SEEN_UDEV_ADD);
                } else if (s->state == STATE_OK && early[k] == STATE_CHANGED) {
                        /* As the kernel's event left it: reported as that change. */
                        s->state = STATE_CHANGED;
                        free(s->previous);
                        s->previous = TAKE_PTR(previous[k]);
                }
                s->rt.last_reported = s->state;
                s->hold = false;
                free(previous[k]);
        }
        /* A disk removed in the middle of a burst reads as unsupported here, as on
         * udev's path (tests/vm faults: disks_removed_mid_burst). */
        manager_pending_drop(m, p->device->name);
        manager_report_tuned(m, p);
        return 1;
}

int manager_early_overdue(Manager *m, size_t i, uint64_t now) {
        DevicePlan *p = m->plan.devices[i];
        _cleanup_free_ char *name = NULL;
        char *one[2] = {};
        DeviceList l = {};
        const char *bad;
        int r;

        assert(m);
        assert(i < m->plan.n);

        if (!p->early_usec)
                return 0;
        if (now - p->early_usec < EARLY_WAIT_USEC)
                return 1;
        name = strdup(p->device->name);
        if (!name)
                return -ENOMEM;
        log_warning("%s: udev's add event did not come within %llu s of the kernel's; tuning it fully now.", name,
                    (unsigned long long) (EARLY_WAIT_USEC / USEC_PER_SEC));
        one[0] = name;
        r = tuner_lookup(&m->tuner, one, &l, &bad);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || l.n == 0) {
                device_list_done(&l);
                p->early_usec = 0; /* gone: its remove follows; until then, checked as it is */
                return 1;
        }
        r = manager_tune_device(m, TAKE_PTR(l.items[0]));
        device_list_done(&l);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_error_errno(r, "Cannot tune %s: %m", name);
        publisher_mark_dirty(m->publisher);
        return 1;
}

/* A chunk of the kernel's adds (kernel-queue.c), under one originals lock, not one
 * per disk (a restore waits at most a chunk). */
static void on_kernel_adds(void *userdata, struct udev_device **devices, size_t n) {
        Manager *m = userdata;

        assert(m);

        _cleanup_close_ int lock = -1;
        timing_enter(TIMING_RECORD);
        bool locked = originals_lock(m->tuner.originals_dir, &lock) >= 0;
        timing_leave();
        /* Each disk planned and written before the next is probed: its writes wait
         * for nobody else's probe. Not reconcile_devices()'s threads: their start
         * cost more CPU under a burst (~6 ms a disk in the test-bed guest, measured
         * with 1024 null_blk disks) than a new disk's queue writes take; a start or
         * reload, where scheduler switches of settled disks dominate, is where
         * they pay. */
        for (size_t i = 0; i < n; i++) {
                int targets[_KNOB_MAX];
                DevicePlan *p = plan_early(m, devices[i], targets);
                devices[i] = udev_device_unref(devices[i]);
                if (p) {
                        ReconcileOptions o = tuner_options(&m->tuner, RECONCILE_APPLY, targets, false);
                        o.scopes = 1u << KNOB_SCOPE_QUEUE;
                        o.originals_locked = locked;
                        keep_early(m, p, reconcile_device(p, &o));
                }
                manager_keepalive(m);
        }
}

static void on_kernel_drained(void *userdata, size_t handled) {
        Manager *m = userdata;

        assert(m);

        heap_trimmer_later(m->trimmer, handled);
}

static const KernelQueueOps kernel_queue_ops = {
        .handle = on_kernel_adds,
        .drained = on_kernel_drained,
};

int manager_watch_kernel(Manager *m) {
        assert(m);

        return kernel_queue_new(m->event, m->tuner.udev, &kernel_queue_ops, m, &m->kernel);
}
