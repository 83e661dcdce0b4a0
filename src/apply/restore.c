/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "originals.h"
#include "reconcile.h"
#include "restore.h"
#include "rootfs.h"
#include "log.h"
#include "util.h"

static bool device_plan_failed(const DevicePlan *p) {
        assert(p);

        if (p->error)
                return true;
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].state == STATE_FAILED)
                        return true;
        return false;
}

int device_plan_confine_to_root(DevicePlan *p, const char *root) {
        size_t n = root_is_set(root) ? strlen(root) : 0;

        assert(p);

        if (n == 0)
                return 0;
        for (size_t k = 0; k < p->n_settings; k++) {
                Setting *s = &p->settings[k];
                char *real = NULL;
                int r;

                /* Vector files: <root>/proc/irq/N/smp_affinity_list (irq_attr_path). */
                if (s->irq < 0 || !s->path || !strneq(s->path, root, n) || s->path[n] != '/')
                        continue;
                r = root_resolve(root, s->path + n, &real);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* A link loop, or a file where a directory should be: a path
                         * that cannot be opened, so the row fails instead of reading
                         * something else. */
                        log_debug_errno(r, "Cannot resolve %s inside %s: %m", s->path, root);
                        real = strdup("/dev/null/unresolvable-inside-root");
                        if (!real)
                                return -ENOMEM;
                }
                free(s->path);
                s->path = real;
        }
        return 0;
}

int plan_confine_to_root(Plan *p, const char *root) {
        assert(p);

        for (size_t i = 0; i < p->n; i++) {
                int r = device_plan_confine_to_root(p->devices[i], root);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int corrupt_record_plan(const char *dir, Device *d, int error, DevicePlan **ret) {
        char *none[_KNOB_MAX] = {};
        _cleanup_free_ char *p = originals_record_path(dir, d->name);
        DevicePlan *dp = NULL;
        int r;

        assert(dir);
        assert(d);
        assert(ret);

        r = plan_device_from_values(d, "original", none, NULL, NULL, &dp);
        if (r < 0)
                return r;
        if (asprintf_safe(&dp->error, "cannot restore from %s: %s", p ?: dir, originals_strerror(error)) < 0) {
                device_plan_free(dp);
                return -ENOMEM;
        }
        *ret = dp;
        return 0;
}

static int cmp_plan_name(const void *a, const void *b) {
        const DevicePlan *const *x = a, *const *y = b;
        return strcmp((*x)->device->name, (*y)->device->name);
}

/* The disks of `known` sorted by name, for bsearch; NULL (and 0) for none. */
static int known_index(const Plan *known, const DevicePlan ***ret, size_t *ret_n) {
        const DevicePlan **idx;

        assert(ret);
        assert(ret_n);

        *ret = NULL;
        *ret_n = 0;
        if (!known || known->n == 0)
                return 0;
        idx = calloc(known->n, sizeof(DevicePlan *));
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < known->n; i++)
                idx[i] = known->devices[i];
        qsort(idx, known->n, sizeof(DevicePlan *), cmp_plan_name);
        *ret = idx;
        *ret_n = known->n;
        return 0;
}

/* A copy of the known disk `name`, if sysfs still shows the same disk there (its
 * diskseq: a disk removed, or replaced by another of that name, reads otherwise
 * or not at all) and it was probed in full: one planned at the kernel's "add"
 * (early_usec) has its controller described from sysfs only, so it is probed
 * again. 1 with *ret set, 0 when it has to be probed, -ENOMEM. */
static int known_device(const DevicePlan **idx, size_t n, const char *name, Device **ret) {
        _cleanup_free_ char *seq = NULL;
        DevicePlan key_plan;
        Device key_device = { .name = (char *) name };
        const DevicePlan *key = &key_plan, *const *hit;
        const Device *d;

        key_plan.device = &key_device;
        hit = n > 0 ? bsearch(&key, idx, n, sizeof(DevicePlan *), cmp_plan_name) : NULL;
        if (!hit)
                return 0;
        d = (*hit)->device;
        if ((*hit)->early_usec || !d->diskseq || !d->syspath || read_attr_at(d->syspath, "diskseq", &seq) < 0 ||
            !streq(strstrip(seq), d->diskseq))
                return 0;
        return device_dup(d, ret) < 0 ? -ENOMEM : 1;
}

int restore_originals(struct udev *udev, const char *dir, const char *proc_root, char *const *only,
                      const Plan *known, Plan *ret, char ***ret_gone) {
        _cleanup_strv_free_ char **names = NULL, **gone = NULL;
        _cleanup_free_ const DevicePlan **idx = NULL;
        size_t n_idx = 0, n_known = 0, n_probed = 0;
        ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = NULL };

        assert(udev);
        assert(dir);
        assert(ret);

        /* Held from reading the records through forgetting them: an `apply` (or
         * the daemon) holds it from its record through its writes, so it either
         * finishes before the originals are put back, or records them afresh
         * after they are forgotten; never writes in between. */
        _cleanup_close_ int lock = -1;
        Plan plan = {};
        int r;

        if (access(dir, F_OK) >= 0) { /* no records directory: nothing recorded, nothing to hold */
                r = originals_lock(dir, &lock);
                if (r < 0)
                        return r;
        }
        r = originals_list(dir, &names);
        if (r < 0)
                return r;
        if (known_index(known, &idx, &n_idx) < 0)
                return -ENOMEM;
        plan.devices = calloc(strv_length(names) ?: 1, sizeof(DevicePlan *));
        if (!plan.devices)
                return -ENOMEM;

        for (char **n = names; n && *n; n++) {
                char *values[_KNOB_MAX];
                _cleanup_strv_free_ char **irqs = NULL;
                Device *d = NULL;

                if (only && !strv_contains(only, *n))
                        continue;
                r = known_device(idx, n_idx, *n, &d);
                if (r == -ENOMEM)
                        goto oom;
                if (r > 0)
                        n_known++;
                else {
                        n_probed++;
                        r = device_lookup(udev, *n, &d);
                }
                if (r >= 0) {
                        r = originals_load(dir, d, values, &irqs);
                        if (r == -EBADMSG || r == -ELOOP || r == -EBADFD || r == -EFBIG || r == -EISDIR) {
                                /* Not a record that can be trusted: its disk's row fails and
                                 * the file stays for a person to look at. */
                                r = corrupt_record_plan(dir, d, r, &plan.devices[plan.n]);
                                if (r < 0)
                                        goto oom;
                                plan.n++;
                                continue;
                        }
                        if (r == -ESTALE || r == -ENOENT)
                                d = device_free(d);
                }
                if (!d) {
                        /* Gone, or a different disk now: the record is moot. */
                        if (strv_extend(&gone, *n) < 0)
                                goto oom;
                        (void) originals_forget_locked(dir, *n);
                        continue;
                }
                if (r < 0) {
                        device_free(d);
                        plan_done(&plan);
                        return r;
                }
                r = plan_device_from_values(d, "original", values, irqs, proc_root, &plan.devices[plan.n]);
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        free(values[k]);
                if (r < 0)
                        goto oom;
                plan.n++;
        }

        if (known)
                log_debug("Restoring %zu recorded disk%s: %zu as already probed, %zu probed again.",
                          n_known + n_probed, n_known + n_probed == 1 ? "" : "s", n_known, n_probed);
        r = plan_confine_to_root(&plan, proc_root);
        if (r >= 0)
                r = reconcile_plan(&plan, &o);
        if (r < 0)
                goto oom;
        for (size_t i = 0; i < plan.n; i++)
                if (!device_plan_failed(plan.devices[i]))
                        (void) originals_forget_locked(dir, plan.devices[i]->device->name);

        *ret = plan;
        if (ret_gone)
                *ret_gone = TAKE_PTR(gone);
        return 0;
oom:
        plan_done(&plan);
        return -ENOMEM;
}

int restore_knobs(const char *dir, const char *proc_root, Device *d, const bool knobs[_KNOB_MAX], const int *irqs,
                  size_t n_irqs, DevicePlan **ret) {
        ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = NULL };

        assert(dir);
        assert(d);
        assert(ret);

        _cleanup_(device_plan_freep) DevicePlan *p = NULL;
        _cleanup_strv_free_ char **all_irqs = NULL, **keep = NULL;
        char *values[_KNOB_MAX];
        int r;

        r = originals_load(dir, d, values, &all_irqs);
        if (r < 0) {
                device_free(d);
                return r;
        }
        for (char **e = all_irqs; e && *e; e++) {
                int irq = atoi(*e);
                for (size_t i = 0; i < n_irqs; i++)
                        if (irqs[i] == irq && strv_extend(&keep, *e) < 0) {
                                for (size_t k = 0; k < _KNOB_MAX; k++)
                                        free(values[k]);
                                device_free(d);
                                return -ENOMEM;
                        }
        }
        for (size_t k = 0; k < _KNOB_MAX; k++)
                if (!knobs[k]) {
                        free(values[k]);
                        values[k] = NULL;
                }
        r = plan_device_from_values(d, "original", values, keep, proc_root, &p);
        for (size_t k = 0; k < _KNOB_MAX; k++)
                free(values[k]);
        if (r >= 0)
                r = device_plan_confine_to_root(p, proc_root);
        if (r < 0)
                return r;
        r = reconcile_device(p, &o);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}
