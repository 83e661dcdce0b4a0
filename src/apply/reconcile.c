/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "originals.h"
#include "reconcile.h"
#include "util.h"

static void set_note(Setting *s, char *note) {
        free(s->note);
        s->note = note;
}

static void set_state(Setting *s, SettingState st, int error, const char *fmt, ...) _printf_(4, 5);
static void set_state(Setting *s, SettingState st, int error, const char *fmt, ...) {
        char *n = NULL;
        va_list ap;

        s->state = st;
        s->error = error;
        if (!fmt)
                return;
        errno = error < 0 ? -error : error;
        va_start(ap, fmt);
        if (vasprintf(&n, fmt, ap) < 0)
                n = NULL;
        va_end(ap);
        set_note(s, n);
}

/* Read and normalize one knob. 0, -ENOENT (attribute absent), other -errno. */
static int read_knob(const Device *d, const Knob *k, char **ret) {
        _cleanup_free_ char *raw = NULL;
        int r = read_attr_at(d->syspath, k->attr, &raw);
        if (r < 0)
                return r;
        return k->normalize(raw, ret);
}

static int read_setting(const Device *d, const Setting *s, char **ret) {
        _cleanup_free_ char *raw = NULL;
        int r;
        if (!s->path)
                return read_knob(d, s->knob, ret);
        r = read_attr(s->path, &raw);
        if (r < 0)
                return r;
        return s->knob->normalize(raw, ret);
}

static int write_setting(const Device *d, const Setting *s, const char *value) {
        return s->path ? write_attr(s->path, value) : write_attr_at(d->syspath, s->knob->attr, value);
}

/* kernel/irq/proc.c: a managed vector refuses affinity writes, EIO on 6.1
 * (irq_can_set_affinity_usr), EPERM on 6.12 where the file is also 0444. */
static bool is_managed_refusal(int r) {
        return r == -EIO || r == -EPERM || r == -EACCES;
}

/* For a vector: where it actually fires, for the report. */
static void read_effective_affinity(Setting *s) {
        _cleanup_free_ char *p = NULL, *raw = NULL;
        const char *slash;
        free(s->detail);
        s->detail = NULL;
        if (!s->path || !(slash = strrchr(s->path, '/')) ||
            asprintf_safe(&p, "%.*s/effective_affinity_list", (int) (slash - s->path), s->path) < 0)
                return;
        if (read_attr(p, &raw) == 0 && s->knob->normalize(raw, &s->detail) < 0)
                s->detail = NULL;
}

static void set_managed(Setting *s, const char *how) {
        set_state(s, STATE_MANAGED, 0,
                  "kernel-managed vector (%s): fires on CPUs %s; the policy wants %s%s; steer it with "
                  "isolcpus=managed_irq or poll queues",
                  how, s->detail ?: s->observed ?: "?", s->effective,
                  s->detail && streq(s->detail, s->effective) ? " (matches)" : "");
}

static int write_failure_note(Setting *s, const char *value, int r) {
        /* The kernel's EINVAL on the scheduler file means "no such elevator": it first
         * tried request_module("<name>-iosched") (block/elevator.c: elevator_change). */
        if (s->knob->id == KNOB_SCHEDULER && r == -EINVAL)
                set_state(s, STATE_FAILED, r, "kernel has no scheduler '%s' (not built in, no %s-iosched module)",
                          value, value);
        else
                set_state(s, STATE_FAILED, r, "writing '%s' failed: %m", value);
        return 0;
}

int reconcile_device(DevicePlan *p, const ReconcileOptions *o) {
        const Device *d = p->device;
        _cleanup_free_ char *scheduler_now = NULL;
        const char *scheduler_after = NULL;
        bool recorded = false, scheduler_switches = false;
        int r;

        if (p->excluded || p->error)
                return 0;

        for (size_t i = 0; i < p->n_settings; i++) {
                Setting *s = &p->settings[i];
                const Knob *k = s->knob;
                _cleanup_free_ char *note = NULL;
                KnobFacts facts;

                free(s->observed);
                free(s->effective);
                free(s->previous);
                s->observed = s->effective = s->previous = NULL;
                s->error = 0;
                if (k->needs_mq && !d->has_mq)
                        continue; /* planned as unsupported */

                r = read_setting(d, s, &s->observed);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOENT && s->irq >= 0) {
                        set_state(s, STATE_FAILED, r, "IRQ %d is gone (its device was removed?)", s->irq);
                        continue;
                }
                if (r == -ENOENT) {
                        set_state(s, STATE_UNSUPPORTED, 0, "this kernel or device has no %s", k->attr);
                        continue;
                }
                if (r == -EINVAL && k->id == KNOB_WBT_LAT_USEC) {
                        /* block/blk-sysfs.c queue_wb_lat_show: EINVAL when WBT was never
                         * set up on this queue (no CONFIG_BLK_WBT_MQ, or a bio-based queue). */
                        set_state(s, STATE_UNSUPPORTED, 0, "writeback throttling is not available on this queue");
                        continue;
                }
                if (r < 0) {
                        set_state(s, STATE_FAILED, r, "cannot read %s: %m", k->attr);
                        continue;
                }

                if (k->id != KNOB_SCHEDULER && !scheduler_after && d->has_mq) {
                        /* Settings after the scheduler are resolved against the scheduler the
                         * queue will have (nr_requests limits depend on it). */
                        if (!scheduler_now && read_knob(d, &knob_table[KNOB_SCHEDULER], &scheduler_now) < 0)
                                scheduler_now = NULL;
                        scheduler_after = scheduler_now;
                }
                facts = (KnobFacts) {
                        .rotational = d->rotational,
                        .nr_tags = d->nr_tags,
                        .max_hw_sectors_kb = d->max_hw_sectors_kb,
                        .scheduler_after = scheduler_after,
                };
                r = k->resolve(s->desired, &facts, &s->effective, &note);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        set_state(s, STATE_FAILED, r, "cannot resolve '%s' for this device (no %s reported)",
                                  s->desired, k->id == KNOB_NR_REQUESTS ? "hardware tag depth" : "hardware limit");
                        continue;
                }
                set_note(s, TAKE_PTR(note));

                if (k->id == KNOB_SCHEDULER)
                        scheduler_after = s->effective;
                if (s->irq >= 0)
                        read_effective_affinity(s);
                /* A managed vector is a state, not an error: learned from a refused write
                 * (never retried), or predicted from its driver (only APPLY tries once). */
                if (s->irq >= 0 && (s->rt.managed || (s->managed_predicted && (o->mode != RECONCILE_APPLY ||
                                                                                streq(s->observed, s->effective))))) {
                        set_managed(s, s->rt.managed ? "a write was refused" : "its driver manages its affinity");
                        continue;
                }

                if (streq(s->observed, s->effective)) {
                        if (o->mode == RECONCILE_DRY_RUN && k->id == KNOB_NR_REQUESTS && scheduler_switches) {
                                /* block/elevator.c: the switch resets nr_requests; it is written after. */
                                set_state(s, STATE_CHANGED, 0, "the scheduler switch resets it; written afterwards");
                                continue;
                        }
                        s->state = STATE_OK;
                        continue;
                }

                if (o->mode == RECONCILE_DRY_RUN) {
                        s->state = STATE_CHANGED;
                        if (k->id == KNOB_SCHEDULER)
                                scheduler_switches = true;
                        continue;
                }
                if (o->mode == RECONCILE_VERIFY) {
                        s->state = STATE_DRIFTED;
                        continue;
                }

                if (s->hold) {
                        /* The daemon backs off from a setting something keeps reverting. */
                        set_state(s, STATE_DRIFTED, 0, "held back: something keeps changing it (see the conflict report)");
                        continue;
                }

                /* APPLY: nothing is written before the originals are safe. */
                if (!recorded && o->originals_dir) {
                        r = originals_record(o->originals_dir, p);
                        if (r < 0)
                                return log_debug_errno(r, "Cannot record originals of %s: %m", d->name);
                        recorded = true;
                }
                r = write_setting(d, s, s->effective);
                s->previous = TAKE_PTR(s->observed);
                if (read_setting(d, s, &s->observed) < 0) {
                        set_state(s, STATE_FAILED, r < 0 ? r : -EIO, "cannot read %s back after writing", k->attr);
                        continue;
                }
                if (streq(s->observed, s->effective)) {
                        /* Matches even if write() complained (systemd's write_string_file idiom). */
                        s->state = STATE_CHANGED;
                        continue;
                }
                if (s->irq >= 0 && is_managed_refusal(r)) {
                        s->rt.managed = true;
                        free(s->previous);
                        s->previous = NULL;
                        read_effective_affinity(s);
                        set_managed(s, r == -EIO     ? "write refused with EIO"
                                       : r == -EPERM ? "write refused with EPERM"
                                                     : "write refused with EACCES");
                } else if (s->irq >= 0 && r == -EROFS)
                        set_state(s, STATE_FAILED, r,
                                  "/proc/irq is read-only here (ProtectKernelTunables= in the unit?)");
                else if (r < 0)
                        write_failure_note(s, s->effective, r);
                else
                        set_state(s, STATE_FAILED, -EIO, "kernel reads back '%s' after writing '%s'", s->observed,
                                  s->effective);
        }
        return 0;
}

int reconcile_plan(Plan *p, const ReconcileOptions *o) {
        for (size_t i = 0; i < p->n; i++) {
                int r = reconcile_device(p->devices[i], o);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && !p->devices[i]->error &&
                    asprintf_safe(&p->devices[i]->error, "not tuned: cannot record original values: %s",
                                  strerror(-r)) < 0)
                        return -ENOMEM;
        }
        return 0;
}
