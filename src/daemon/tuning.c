/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A disk's plan in the daemon, from hotplug to removal: planned and applied
 * through the Tuner, kept with its drift history, re-planned on "change" and
 * reload (knobs no longer planned go back to their originals), forgotten on
 * "remove". */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/linkhash.h>

#include "events.h"
#include "hold.h"
#include "log.h"
#include "manager-internal.h"
#include "originals.h"
#include "timing.h"
#include "util.h"

ssize_t manager_plan_index(const Manager *m, const char *name) {
        void *v;

        assert(m);
        assert(name);

        if (m->plan_names) {
                if (!lh_table_lookup_ex(m->plan_names, name, &v))
                        return -1;
                size_t i = (uintptr_t) v - 1;
                assert(i < m->plan.n && streq(m->plan.devices[i]->device->name, name));
                return (ssize_t) i;
        }
        for (size_t i = 0; i < m->plan.n; i++)
                if (streq(m->plan.devices[i]->device->name, name))
                        return (ssize_t) i;
        return -1;
}

void manager_plan_names_drop(Manager *m) {
        assert(m);

        if (m->plan_names)
                lh_table_free(m->plan_names);
        m->plan_names = NULL;
}

static void plan_name_free(struct lh_entry *e) {
        free(lh_entry_k(e));
}

/* Point the name of plan i at i; false when out of memory. */
static bool plan_name_put(struct lh_table *t, const Plan *plan, size_t i) {
        const char *name = plan->devices[i]->device->name;
        struct lh_entry *e = lh_table_lookup_entry(t, name);
        char *k;

        if (e) {
                lh_entry_set_val(e, (void *) (uintptr_t) (i + 1));
                return true;
        }
        k = strdup(name);
        if (!k)
                return false;
        if (lh_table_insert(t, k, (void *) (uintptr_t) (i + 1)) < 0) {
                free(k);
                return false;
        }
        return true;
}

/* After plans [from, n) were added or moved: their entries, or the whole index
 * built afresh when there is none. Out of memory: no index, disks are found by
 * a scan. */
static void plan_names_update(Manager *m, size_t from) {
        assert(m);

        if (!m->plan_names) {
                m->plan_names = lh_kchar_table_new(64, plan_name_free);
                if (!m->plan_names)
                        return;
                from = 0;
        }
        for (size_t i = from; i < m->plan.n; i++)
                if (!plan_name_put(m->plan_names, &m->plan, i)) {
                        manager_plan_names_drop(m);
                        return;
                }
}

int manager_plan_append(Manager *m, DevicePlan *p) {
        DevicePlan **n;

        assert(m);
        assert(p);

        n = realloc(m->plan.devices, (m->plan.n + 1) * sizeof(DevicePlan *));
        if (!n) {
                device_plan_free(p);
                return -ENOMEM;
        }
        m->plan.devices = n;
        m->plan.devices[m->plan.n++] = p;
        plan_names_update(m, m->plan.n - 1);
        return 0;
}

void manager_stamp_changes(Manager *m, DevicePlan *p) {
        uint64_t now;

        assert(m);
        assert(p);

        now = manager_now(m, CLOCK_REALTIME);
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].state == STATE_CHANGED)
                        p->settings[k].rt.last_change_usec = now;
}

/* Carry drift history over to a new plan of the same disk, knob by knob. */
static void keep_runtime(const DevicePlan *old, DevicePlan *new) {
        assert(old);
        assert(new);

        for (size_t a = 0; a < old->n_settings; a++)
                for (size_t b = 0; b < new->n_settings; b++)
                        if (old->settings[a].knob == new->settings[b].knob &&
                            old->settings[a].irq == new->settings[b].irq) {
                                SettingRuntime keep = old->settings[a].rt;
                                if (new->settings[b].rt.last_change_usec)
                                        keep.last_change_usec = new->settings[b].rt.last_change_usec;
                                keep.last_reported = new->settings[b].state;
                                new->settings[b].rt = keep;
                                if (!new->settings[b].writer && old->settings[a].writer)
                                        new->settings[b].writer = strdup(old->settings[a].writer);
                        }
}

/* The same disk, not another one that took its name (a remove and an add in one
 * batch, a multipath path replaced): the same diskseq, or, before 5.15, the same
 * sysfs path. */
bool manager_same_disk(const Device *a, const Device *b) {
        if (a->diskseq && b->diskseq)
                return streq(a->diskseq, b->diskseq);
        return streq_ptr(a->syspath, b->syspath);
}

/* A new plan of the same disk (a udev event, a reload) goes on from the old one:
 * its drift history (a setting in conflict stays held), its load samples and
 * the findings already reported (moved: not logged again). */
static void take_over(DevicePlan *old, DevicePlan *new, uint64_t now) {
        keep_runtime(old, new);
        new->last_stat = old->last_stat;
        new->has_stat = old->has_stat;
        new->load = old->load;
        new->has_load = old->has_load;
        new->warning_seen_usec = old->warning_seen_usec;
        finding_list_done(&new->findings);
        new->findings = old->findings;
        old->findings = (FindingList) {};
        for (size_t k = 0; k < new->n_settings; k++)
                new->settings[k].hold = backoff_held(&new->settings[k].rt, now);
}

/* During a reload, the plan the disk had before it. */
static DevicePlan *replaced_plan(Manager *m, const char *name) {
        for (size_t i = 0; m->replaced && i < m->replaced->n; i++)
                if (streq(m->replaced->devices[i]->device->name, name))
                        return m->replaced->devices[i];
        return NULL;
}

static const Setting *old_setting(const DevicePlan *old, const Setting *s) {
        for (size_t k = 0; k < old->n_settings; k++)
                if (old->settings[k].knob == s->knob && old->settings[k].irq == s->irq)
                        return &old->settings[k];
        return NULL;
}

/* A re-plan of a known disk at a udev event ("change", typically) found `s` away
 * from the value it had in place before, with the same value wanted: somebody
 * changed it (a udev rule that runs on the event, which udev runs before the
 * event reaches iotuned), and this reconcile put it back. That is drift, as a
 * drift check would have counted it; a row written again because iotuned's own
 * write before it reset it is not. Vectors are left to the drift checks: a
 * re-plan may place them anew. */
static bool replan_found_drift(const DevicePlan *old, const Setting *s) {
        const Setting *o;

        if (s->state != STATE_CHANGED || s->reset_by || s->irq >= 0 || !(o = old_setting(old, s)))
                return false;
        return (o->state == STATE_OK || o->state == STATE_CHANGED) && streq_ptr(o->effective, s->effective) &&
               streq_ptr(o->observed, o->effective);
}

bool manager_early_readahead_reset(const DevicePlan *p, Setting *s, const char *before_early) {
        char *v;

        assert(p);
        assert(s);

        if (s->knob->id != KNOB_READ_AHEAD_KB || s->state != STATE_CHANGED || s->reset_by || !before_early ||
            !s->previous || !streq(s->previous, before_early))
                return false;
        log_info("%s: %s back at %s when udev's add event arrived: the kernel sets a new disk's read-ahead after "
                 "its add event; written again.",
                 p->device->name, setting_label(s), s->previous);
        /* Reported as the kernel's event's change: from the value before it. */
        v = strdup(before_early);
        if (v) {
                free(s->previous);
                s->previous = v;
        }
        return true;
}

/* The disk's queue rows were written at the kernel's "add" event (kernel-event.c)
 * and udev's event found `s` as they were left: what this pass reports (the
 * journal's "tuned" rows, status.json) is that change, not "already ok". */
static void carry_early_change(const DevicePlan *early, Setting *s) {
        const Setting *o = old_setting(early, s);

        if (!o || s->state != STATE_OK || o->state != STATE_CHANGED || !streq_ptr(o->effective, s->effective))
                return;
        free(s->previous);
        s->previous = strdup_or_null(o->previous);
        s->state = STATE_CHANGED;
        s->rt.last_change_usec = o->rt.last_change_usec;
}

/* Knobs a disk had in its old plan and does not have in the new one (NULL: it is
 * not planned any more) go back to their originals; everything else is simply
 * re-planned. */
void manager_restore_dropped_knobs(Manager *m, const DevicePlan *old, const DevicePlan *new) {
        bool drop[_KNOB_MAX] = {}, any = false;
        _cleanup_free_ int *irqs = NULL;
        size_t n_irqs = 0;
        DevicePlan *rp = NULL;

        assert(m);
        assert(old);

        irqs = calloc(old->n_settings ?: 1, sizeof(int));
        if (!irqs)
                return;
        for (size_t k = 0; k < old->n_settings; k++) {
                const Setting *s = &old->settings[k];
                bool kept = false;
                for (size_t j = 0; new && !new->excluded && !new->error && j < new->n_settings; j++)
                        kept = kept || (new->settings[j].knob == s->knob && new->settings[j].irq == s->irq);
                if (kept)
                        continue;
                any = true;
                if (s->irq >= 0)
                        irqs[n_irqs++] = s->irq;
                else
                        drop[s->knob->id] = true;
        }
        if (!any || tuner_restore_knobs(&m->tuner, old->device->name, drop, irqs, n_irqs, &rp) < 0)
                return;
        for (size_t k = 0; k < rp->n_settings; k++)
                if (rp->settings[k].state == STATE_CHANGED)
                        event_setting(EVENT_RESTORE, LOG_INFO, rp, &rp->settings[k],
                                      "%s: %s%s%s no longer tuned by the new configuration; restored %s",
                                      rp->device->name, setting_label(&rp->settings[k]), "", "",
                                      rp->settings[k].observed);
        device_plan_free(rp);
}

/* Remove every copy of `s` from the NULL-terminated list `l` (freeing them). */
static void strv_drop(char **l, const char *s) {
        size_t j = 0;
        for (size_t i = 0; l && l[i]; i++) {
                if (streq(l[i], s))
                        free(l[i]);
                else
                        l[j++] = l[i];
        }
        if (l)
                l[j] = NULL;
}

/* The disk is gone, or its queue directory is (block/genhd.c del_gendisk ->
 * blk_unregister_queue removes it before the disk itself). */
bool device_vanished(const Device *d) {
        _cleanup_free_ char *q = NULL;

        assert(d);

        if (asprintf_safe(&q, "%s/queue", d->syspath) < 0)
                return false;
        return access(q, F_OK) < 0 && errno == ENOENT;
}

/* A disk removed while its "add" is being handled fails in ways that look like
 * problems: on 6.1 its scheduler, nr_requests and read_ahead_kb fail (ENOENT,
 * ENODEV, or a write that cannot be read back) for a second or more while the
 * rest of its queue directory still reads fine, and its udev "remove" follows
 * later still. Seen with null_blk unloaded during a burst (tests/vm faults).
 * Such a first tuning of a hot-added disk is reported only once it is
 * PENDING_REPORT_USEC old and the disk is still there; a "remove" before that
 * forgets it silently, after its "removed" entry. */
static bool failure_may_be_removal(const DevicePlan *p) {
        assert(p);

        for (size_t k = 0; k < p->n_settings; k++) {
                const Setting *s = &p->settings[k];
                if (s->state == STATE_FAILED)
                        return true;
                /* Attributes every blk-mq queue has: "unsupported" means unreadable. */
                if (s->state == STATE_UNSUPPORTED && s->irq < 0 && p->device->has_mq && s->knob->on_every_mq_queue)
                        return true;
        }
        return false;
}

static int pending_add(Manager *m, const char *name);

void manager_report_tuned(Manager *m, const DevicePlan *p) {
        assert(m);
        assert(p);

        if (device_vanished(p->device))
                log_debug("%s was removed while it was being tuned; its remove event follows.", p->device->name);
        else if (m->in_batch && failure_may_be_removal(p) && pending_add(m, p->device->name) >= 0)
                log_debug("%s: tuning failed in part; reporting it in %llu s unless the disk is removed meanwhile.",
                          p->device->name, (unsigned long long) (PENDING_REPORT_USEC / USEC_PER_SEC));
        else
                event_log_tuned(p);
}

ssize_t manager_pending_index(const Manager *m, const char *name) {
        assert(m);
        assert(name);

        for (size_t i = 0; m->report_pending && m->report_pending[i]; i++)
                if (streq(m->report_pending[i], name))
                        return (ssize_t) i;
        return -1;
}

void manager_pending_drop(Manager *m, const char *name) {
        ssize_t i;
        size_t n;

        assert(m);
        assert(name);

        i = manager_pending_index(m, name);
        if (i < 0)
                return;
        n = strv_length(m->report_pending);
        free(m->report_pending[i]);
        memmove(m->report_pending + i, m->report_pending + i + 1, (n - i) * sizeof(char *)); /* with the NULL */
        memmove(m->report_pending_since + i, m->report_pending_since + i + 1, (n - i - 1) * sizeof(uint64_t));
}

static int pending_add(Manager *m, const char *name) {
        size_t n = strv_length(m->report_pending);
        uint64_t *since;

        assert(m);
        assert(name);

        if (manager_pending_index(m, name) >= 0)
                return 0;
        since = realloc(m->report_pending_since, (n + 1) * sizeof(uint64_t));
        if (!since)
                return -ENOMEM;
        m->report_pending_since = since;
        if (strv_extend(&m->report_pending, name) < 0)
                return -ENOMEM;
        since[n] = manager_now(m, CLOCK_MONOTONIC);
        return 0;
}

/* reconcile refused to write anything to the disk because its original values
 * could not be recorded (a full or read-only /run): the plan carries the error
 * for the journal and status.json, and the disk is remembered so that every
 * drift check tries again (see manager_retry_unrecorded), without a restart. */
static void set_unrecorded(Manager *m, DevicePlan *p, int r) {
        assert(m);
        assert(p);

        free(p->error);
        p->error = NULL;
        (void) asprintf_safe(&p->error, "cannot record its original values in %s (%s); nothing was written, retrying at "
                                        "every drift check",
                             m->tuner.originals_dir, strerror(-r));
        if (!strv_contains(m->unrecorded, p->device->name))
                (void) strv_extend(&m->unrecorded, p->device->name);
}

/* One disk on its way through manager_tune_devices(): planned, reconciled (alone
 * or with the others), then reported and kept. */
typedef struct TuneJob {
        DevicePlan *p;  /* NULL: nothing (more) to do with it */
        DevicePlan *prev;
        ssize_t idx;
        bool same;
        int targets[_KNOB_MAX];
        int r;          /* its reconcile's */
} TuneJob;

/* Plan `d` (taken) beside `view`, the kept plans and those planned before it in
 * this batch. j->p stays NULL for a disk `iotunectl tune` holds. */
static int tune_prepare(Manager *m, Device *d, const Plan *view, TuneJob *j) {
        DevicePlan *p = NULL;
        int r;

        assert(m);
        assert(d);
        assert(view);
        assert(j);

        *j = (TuneJob) { .idx = -1 };
        if (manager_disk_held(m, d->name)) {
                device_free(d);
                return 0;
        }
        r = tuner_plan_device(&m->tuner, m->config, d, view, &p, j->targets);
        if (r < 0)
                return r;
        j->idx = manager_plan_index(m, p->device->name);
        j->prev = j->idx >= 0 ? m->plan.devices[j->idx] : replaced_plan(m, p->device->name);
        j->same = j->prev && manager_same_disk(j->prev->device, p->device);
        if (j->same)
                take_over(j->prev, p, manager_now(m, CLOCK_MONOTONIC));
        j->p = p;
        return 0;
}

/* After its reconcile: report the disk and keep its plan. 1 when its controller
 * was rebound, 0, or -errno. */
static int tune_finish(Manager *m, TuneJob *j) {
        DevicePlan *p = TAKE_PTR(j->p);
        int r = j->r;

        assert(m);
        assert(p);

        timing_count_disk();
        if (p->rebound) {
                event_log_tuned(p); /* the rebind's own row: changed, or failed with why */
                event_rebound(p, p->device->nvme->name);
                /* Every plan of that controller is stale now (its namespaces, its vectors):
                 * drop them before a drift check can write to what replaced them. */
                tuner_forget_controller(&m->plan, p->device->nvme->address);
                manager_plan_names_drop(m);
                device_plan_free(p);
                return r == -ENOMEM ? r : 1;
        }
        if (r == -ENOMEM) {
                device_plan_free(p);
                return r;
        }
        if (r < 0 && !p->error)
                set_unrecorded(m, p, r);
        else if (r >= 0)
                strv_drop(m->unrecorded, p->device->name);
        manager_stamp_changes(m, p);
        for (size_t k = 0; k < p->n_settings; k++) {
                Setting *s = &p->settings[k];
                const Setting *o = j->same && j->idx >= 0 && j->prev->early_usec ? old_setting(j->prev, s) : NULL;
                if (o && o->state == STATE_CHANGED && m->udev_action && streq(m->udev_action, "add") &&
                    manager_early_readahead_reset(p, s, o->previous))
                        ; /* the kernel's own read-ahead set-up, not a writer: not drift */
                else if (j->same && j->idx >= 0 && m->udev_action && replan_found_drift(j->prev, s))
                        manager_note_drift(m, p, s, manager_now(m, CLOCK_MONOTONIC),
                                           streq(m->udev_action, "add") ? DRIFT_SEEN_UDEV_ADD
                                                                        : DRIFT_SEEN_UDEV_CHANGE);
                else if (j->same && j->idx >= 0 && j->prev->early_usec)
                        carry_early_change(j->prev, s);
                s->rt.last_reported = s->state;
                s->hold = false;
        }
        manager_pending_drop(m, p->device->name);
        manager_report_tuned(m, p);

        /* Its index again: an earlier disk of the batch may have been kept since. */
        ssize_t idx = manager_plan_index(m, p->device->name);
        if (idx >= 0) {
                manager_restore_dropped_knobs(m, m->plan.devices[idx], p);
                device_plan_free(m->plan.devices[idx]);
                m->plan.devices[idx] = p;
                return 0;
        }
        return manager_plan_append(m, p);
}

static void tune_jobs_done(TuneJob *jobs, size_t n) {
        for (size_t i = 0; i < n; i++)
                device_plan_free(jobs[i].p);
        free(jobs);
}

/* Plan and apply disks from scratch (start, reload, hotplug; `devices` taken,
 * entries may be NULL) and keep their plans. A re-plan of a known disk (udev
 * "change") also restores knobs the new plan no longer sets, exactly as a reload
 * does. The disks are planned one after the other, each beside the ones before
 * it, then reconciled at once where they can be (reconcile_devices(): their
 * scheduler switches, tens of ms of the kernel's each, overlap), then reported
 * in order. A profile that may rebind a controller has them reconciled in turn,
 * and a rebound controller's other disks of the batch are left to the "add"
 * events that bring them back. A disk that cannot be tuned is logged and the
 * others go on: 0 or -ENOMEM; for a batch of one, that disk's 1 (rebound), 0 or
 * -errno, unlogged. */
static int tune_devices(Manager *m, Device **devices, size_t n_devices) {
        TuneJob *jobs = NULL;
        DevicePlan **plans = NULL, **view = NULL;
        _cleanup_strv_free_ char **rebound = NULL;
        size_t n = 0;
        bool together = true;
        int r = 0;

        assert(m);
        assert(devices || n_devices == 0);

        jobs = calloc(n_devices ?: 1, sizeof(TuneJob));
        plans = calloc(n_devices ?: 1, sizeof(DevicePlan *));
        view = calloc(m->plan.n + n_devices + 1, sizeof(DevicePlan *));
        if (!jobs || !plans || !view) {
                r = -ENOMEM;
                goto out;
        }
        if (m->plan.n)
                memcpy(view, m->plan.devices, m->plan.n * sizeof(DevicePlan *));
        for (size_t i = 0; i < n_devices; i++) {
                Device *d = TAKE_PTR(devices[i]);
                if (!d)
                        continue;
                Plan current = { .devices = view, .n = m->plan.n + n };
                _cleanup_free_ char *name = strdup(d->name);
                r = tune_prepare(m, d, &current, &jobs[n]);
                manager_keepalive(m);
                if (r == -ENOMEM || (r < 0 && n_devices == 1))
                        goto out;
                if (r < 0) {
                        log_error_errno(r, "Cannot tune %s: %m", name ?: "?");
                        r = 0;
                        continue;
                }
                if (!jobs[n].p)
                        continue; /* held */
                together = together && !jobs[n].p->nvme_rebind;
                view[m->plan.n + n] = jobs[n].p;
                plans[n] = jobs[n].p;
                n++;
        }
        if (together && n > 1) {
                /* What every disk of the batch wants together: the last one's. */
                _cleanup_free_ int *results = calloc(n, sizeof(int));
                if (!results) {
                        r = -ENOMEM;
                        goto out;
                }
                r = tuner_reconcile_devices(&m->tuner, plans, n, RECONCILE_APPLY, jobs[n - 1].targets, true, results);
                if (r < 0)
                        goto out;
                for (size_t i = 0; i < n; i++)
                        jobs[i].r = results[i];
        }
        for (size_t i = 0; i < n; i++) {
                DevicePlan *p = jobs[i].p;
                const NvmeCtrl *c = p->device->nvme;
                if (c && c->address && strv_contains(rebound, c->address)) {
                        /* Its controller was rebound by a disk before it: gone, and back
                         * through an "add" event. */
                        jobs[i].p = device_plan_free(p);
                        continue;
                }
                if (!together || n == 1)
                        /* A rebind brings the disks back as new devices, which come through here
                         * again: once per controller and set of counts (the Tuner's rebound
                         * list), so one that comes back short is not rebound forever. */
                        jobs[i].r = tuner_reconcile_device(&m->tuner, p, RECONCILE_APPLY, jobs[i].targets, true);
                _cleanup_free_ char *name = strdup(p->device->name), *address = c ? strdup_or_null(c->address) : NULL;
                r = tune_finish(m, &jobs[i]);
                manager_keepalive(m);
                if (r == -ENOMEM || (r < 0 && n == 1 && n_devices == 1))
                        goto out;
                if (r < 0) {
                        log_error_errno(r, "Cannot tune %s: %m", name ?: "?");
                        r = 0;
                } else if (r > 0) {
                        if (address && strv_extend(&rebound, address) < 0) {
                                r = -ENOMEM;
                                goto out;
                        }
                        r = n == 1 ? 1 : 0;
                }
        }
out:
        for (size_t i = 0; i < n_devices; i++) /* those not reached */
                devices[i] = device_free(devices[i]);
        tune_jobs_done(jobs, jobs ? n_devices : 0);
        free(plans);
        free(view);
        return r;
}

/* Plan and apply one disk from scratch (start, hotplug, reload) and keep its plan.
 * 1 when the disk's controller was rebound (its disks come back as udev "add"
 * events), 0, or -errno. */
int manager_tune_device(Manager *m, Device *d) {
        assert(m);
        assert(d);

        return tune_devices(m, &d, 1);
}

bool manager_disk_held(Manager *m, const char *name) {
        Hold h;
        int r;

        assert(m);
        assert(name);

        r = hold_check(m->tuner.hold_dir, name, manager_now(m, CLOCK_REALTIME), &h);
        if (r < 0) {
                /* Not honoured: a file that cannot be trusted must not switch the daemon off.
                 * Said once per file, not at every drift check. */
                if (!strv_contains(m->hold_ignored, name)) {
                        log_warning_errno(r, "%s: ignoring its hold file in %s: %m", name, m->tuner.hold_dir);
                        if (strv_extend(&m->hold_ignored, name) < 0)
                                log_oom();
                }
                return false;
        }
        strv_drop(m->hold_ignored, name);
        if (r == 0)
                return false;
        if (!strv_contains(m->held, name)) {
                if (strv_extend(&m->held, name) < 0)
                        return log_oom(), true;
                event_hold(name, true, (int) h.pid,
                           (h.until_usec - manager_now(m, CLOCK_REALTIME)) / USEC_PER_SEC + 1);
        }
        return true;
}

int manager_release_holds(Manager *m) {
        _cleanup_strv_free_ char **ended = NULL;
        int r;

        assert(m);

        for (char **n = m->held; n && *n; n++) {
                Hold h;
                if (hold_check(m->tuner.hold_dir, *n, manager_now(m, CLOCK_REALTIME), &h) > 0)
                        continue;
                if (strv_extend(&ended, *n) < 0)
                        return -ENOMEM;
        }
        for (char **n = ended; n && *n; n++) {
                DeviceList l = {};
                const char *bad;
                char *one[] = { *n, NULL };

                strv_drop(m->held, *n);
                event_hold(*n, false, 0, 0);
                r = tuner_lookup(&m->tuner, one, &l, &bad);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || l.n == 0) {
                        device_list_done(&l);
                        continue; /* gone meanwhile: its remove event says so */
                }
                r = manager_tune_device(m, TAKE_PTR(l.items[0]));
                device_list_done(&l);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        log_error_errno(r, "Cannot tune %s: %m", *n);
                publisher_mark_dirty(m->publisher);
        }
        return 0;
}

static void forget_device(Manager *m, const char *name, const char *path_lost) {
        ssize_t idx;

        assert(m);
        assert(name);

        idx = manager_plan_index(m, name);
        if (idx < 0)
                return;
        if (path_lost)
                /* A path of a multipath subsystem comes and goes with its fabric: an
                 * event, not a failure; its head and the other paths carry on. */
                event_device(EVENT_REMOVED, LOG_INFO, m->plan.devices[idx],
                             "%s: multipath path lost (%s); forgetting its plan and originals until it returns", name,
                             path_lost);
        else
                event_device(EVENT_REMOVED, LOG_INFO, m->plan.devices[idx], "%s removed; forgetting its plan and originals",
                             name);
        (void) originals_forget(m->tuner.originals_dir, name);
        strv_drop(m->unrecorded, name);
        manager_pending_drop(m, name);
        if (m->plan_names)
                (void) lh_table_delete(m->plan_names, name);
        device_plan_free(m->plan.devices[idx]);
        memmove(m->plan.devices + idx, m->plan.devices + idx + 1, (m->plan.n - idx - 1) * sizeof(DevicePlan *));
        m->plan.n--;
        if (m->plan_names)
                plan_names_update(m, idx);
}

void manager_forget_device(Manager *m, const char *name) {
        forget_device(m, name, NULL);
}

void manager_forget_path(Manager *m, const char *name, const char *why) {
        assert(why);
        forget_device(m, name, why);
}

int manager_tune_all(Manager *m) {
        DeviceList l = {};
        int r;

        assert(m);

        tuner_refresh_irqs(&m->tuner);
        r = tuner_enumerate(&m->tuner, m->config, &l);
        if (r < 0)
                return log_error_errno(r, "Cannot enumerate block devices: %m");
        r = tune_devices(m, l.items, l.n);
        device_list_done(&l);
        if (r < 0)
                return log_error_errno(r, "Cannot tune devices: %m");
        return 0;
}

/* A disk left untuned because its originals could not be recorded: try again.
 * 1 when it is tuned now (logged as at hotplug), 0 while recording still fails
 * (logged once, when it first failed), -ENOMEM. */
int manager_retry_unrecorded(Manager *m, DevicePlan *p, const int *targets) {
        _cleanup_free_ char *error = NULL;
        int r;

        assert(m);
        assert(p);

        error = TAKE_PTR(p->error);
        r = tuner_reconcile_device(&m->tuner, p, RECONCILE_APPLY, targets, false);
        if (r == -ENOMEM) {
                p->error = TAKE_PTR(error);
                return r;
        }
        if (r < 0) {
                p->error = TAKE_PTR(error);
                return 0;
        }
        strv_drop(m->unrecorded, p->device->name);
        manager_stamp_changes(m, p);
        for (size_t k = 0; k < p->n_settings; k++)
                p->settings[k].rt.last_reported = p->settings[k].state;
        log_info("%s: its original values are recorded now; tuning it.", p->device->name);
        event_log_tuned(p);
        return 1;
}
