/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "nvme-apply.h"
#include "escape.h"
#include "originals.h"
#include "pcie-link.h"
#include "reconcile.h"
#include "timing.h"
#include "util.h"

static void set_note(Setting *s, char *note) {
        assert(s);

        free(s->note);
        s->note = note;
}

static void set_state(Setting *s, SettingState st, int error, const char *fmt, ...) _printf_(4, 5);
static void set_state(Setting *s, SettingState st, int error, const char *fmt, ...) {
        char *n = NULL;
        va_list ap;

        assert(s);

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
        int r;

        assert(d);
        assert(k);
        assert(ret);

        r = read_attr_at(d->syspath, k->attr, &raw);
        if (r < 0)
                return r;
        return k->normalize(raw, ret);
}

/* A file's row (queue, irq): the setting's own path, or the knob's attribute below
 * the disk; read through the row's kept descriptor once it has one. */
static int file_row_read(const Device *d, Setting *s, char **ret_raw, char **ret_why) {
        assert(d);
        assert(s);
        assert(ret_raw);

        return s->path ? read_attr_kept(s->path, NULL, &s->kept, ret_raw)
                       : read_attr_kept(d->syspath, s->knob->attr, &s->kept, ret_raw);
}

static int file_row_write(const Device *d, const Setting *s, const char *value, char **ret_why) {
        assert(d);
        assert(s);
        assert(value);

        return s->path ? write_attr(s->path, value) : write_attr_at(d->syspath, s->knob->attr, value);
}

static int ctrl_row_read(const Device *d, Setting *s, char **ret_raw, char **ret_why) {
        assert(d);
        assert(s);
        assert(ret_raw);

        return nvme_row_read(d->nvme, s->knob, ret_raw, ret_why);
}

static int ctrl_row_write(const Device *d, const Setting *s, const char *value, char **ret_why) {
        assert(d);
        assert(s);
        assert(value);

        return nvme_row_write(d->nvme, s->knob, value, ret_why);
}

static int ctrl_row_changeable(const Device *d, const Setting *s, const char *value, char **ret_why) {
        assert(d);
        assert(s);

        return nvme_row_changeable(d->nvme, s->knob, value, ret_why);
}

/* The ASPM row: s->path is the PCI function's link/ directory, NULL when the disk has
 * no PCI function. */
static int link_row_read(const Device *d, Setting *s, char **ret_raw, char **ret_why) {
        assert(d);
        assert(s);
        assert(ret_raw);

        return pcie_link_read(s->path, ret_raw, ret_why);
}

static int link_row_write(const Device *d, const Setting *s, const char *value, char **ret_why) {
        assert(d);
        assert(s);
        assert(value);

        return pcie_link_write(s->path, value, ret_why);
}

static int link_row_changeable(const Device *d, const Setting *s, const char *value, char **ret_why) {
        assert(d);
        assert(s);
        assert(value);

        return pcie_link_changeable(s->path, value, ret_why);
}

static int reconcile_module_row(DevicePlan *p, Setting *s, const ReconcileOptions *o);

/* How each scope is read, written and asked whether it can change. A scope with
 * .reconcile has a way of its own from desired to done, and none of the others. */
typedef struct ScopeOps {
        /* The raw value, for knob->normalize(). *ret_why (may be NULL) gets the reason
         * for a failure or -EOPNOTSUPP, where the scope has one. */
        int (*read)(const Device *d, Setting *s, char **ret_raw, char **ret_why);
        int (*write)(const Device *d, const Setting *s, const char *value, char **ret_why);
        /* 0 and *ret_why when the value cannot be set at all; NULL: it always can. */
        int (*changeable)(const Device *d, const Setting *s, const char *value, char **ret_why);
        int (*reconcile)(DevicePlan *p, Setting *s, const ReconcileOptions *o);
} ScopeOps;

static const ScopeOps scope_ops[] = {
        [KNOB_SCOPE_QUEUE] = { .read = file_row_read, .write = file_row_write },
        [KNOB_SCOPE_IRQ] = { .read = file_row_read, .write = file_row_write },
        [KNOB_SCOPE_CTRL] = { .read = ctrl_row_read, .write = ctrl_row_write, .changeable = ctrl_row_changeable },
        [KNOB_SCOPE_MODULE] = { .reconcile = reconcile_module_row },
        [KNOB_SCOPE_LINK] = { .read = link_row_read, .write = link_row_write, .changeable = link_row_changeable },
};

static const ScopeOps *scope_ops_of(const Knob *k) {
        assert(k);
        assert((size_t) k->scope < ELEMENTSOF(scope_ops));

        return &scope_ops[k->scope];
}

/* *ret_why (may be NULL) gets a controller row's reason for a failure or -EOPNOTSUPP. */
static int read_setting(const Device *d, Setting *s, char **ret, char **ret_why) {
        TIMING_SCOPE(TIMING_READ);
        _cleanup_free_ char *raw = NULL;
        int r;

        assert(d);
        assert(s);
        assert(ret);

        r = scope_ops_of(s->knob)->read(d, s, &raw, ret_why);
        if (r < 0)
                return r;
        return s->knob->normalize(raw, ret);
}

static int write_setting(const Device *d, const Setting *s, const char *value, char **ret_why) {
        TIMING_SCOPE(TIMING_WRITE);
        assert(d);
        assert(s);
        assert(value);

        return scope_ops_of(s->knob)->write(d, s, value, ret_why);
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

        assert(s);

        free(s->detail);
        s->detail = NULL;
        if (!s->path || !(slash = strrchr(s->path, '/')) ||
            asprintf_safe(&p, "%.*s/effective_affinity_list", (int) (slash - s->path), s->path) < 0)
                return;
        if (read_attr(p, &raw) == 0 && s->knob->normalize(raw, &s->detail) < 0)
                s->detail = NULL;
}

static void set_managed(Setting *s, const char *how) {
        assert(s);
        assert(how);

        set_state(s, STATE_MANAGED, 0,
                  "kernel-managed vector (%s): fires on CPUs %s; the policy wants %s%s; steer it with "
                  "isolcpus=managed_irq or poll queues",
                  how, s->detail ?: s->observed ?: "?", s->effective,
                  s->detail && streq(s->detail, s->effective) ? " (matches)" : "");
}

static int write_failure_note(Setting *s, const char *value, int r) {
        _cleanup_free_ char *why = NULL;

        assert(s);
        assert(value);

        /* The row may know what the kernel means by this errno. */
        why = s->knob->refusal ? s->knob->refusal(value, r) : NULL;
        if (why)
                set_state(s, STATE_FAILED, r, "%s", why);
        else
                set_state(s, STATE_FAILED, r, "writing '%s' failed: %s", value, file_strerror(r));
        return 0;
}

static void queue_map_detail(Setting *s, const NvmeQueueMap *m) {
        assert(s);
        assert(m);

        free(s->detail);
        s->detail = NULL;
        if (m->nr_tags)
                (void) asprintf_safe(&s->detail, "queues: %u default, %u read, %u poll; tag depth %u", m->n_default,
                                     m->n_read, m->n_poll, m->nr_tags);
        else
                (void) asprintf_safe(&s->detail, "queues: %u default, %u read, %u poll", m->n_default, m->n_read,
                                     m->n_poll);
}

/* What a module row's drop-in may say for v: what the driver accepts from any
 * controller, the row's resolve() without this controller's facts (the possible CPUs
 * bound the queue counts: io_queue_count_set refuses more with EINVAL, and a refused
 * option makes the whole module fail to load; the controller's MQES does not bound
 * a module-wide depth that another controller may take in full). */
static int module_dropin_value(const Knob *k, int v, unsigned possible) {
        KnobFacts f = { .possible_cpus = possible };
        _cleanup_free_ char *in = NULL, *out = NULL;
        unsigned u;

        assert(k);

        if (v < 0 || asprintf_safe(&in, "%d", v) < 0 || k->resolve(in, &f, &out, NULL) < 0 ||
            safe_atou(out, &u) < 0 || u > INT32_MAX)
                return v;
        return (int) u;
}

/* Where the root file system lives on NVMe, the driver loads from the initramfs,
 * which must carry the drop-in too. */
static bool root_on_nvme(void) {
        struct stat st;
        char link[64], target[4096];
        ssize_t n;
        if (stat("/", &st) < 0)
                return false;
        snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
                return false;
        target[n] = 0;
        return strstr(target, "/nvme/") != NULL;
}

/* Module row s as controller c has it now: its value resolved into s->effective
 * (*ret_want), its queue maps into *m, what they give into s->observed
 * (*ret_have). 1 known; 0 not, and s's state says why; -errno. */
static int module_row_observe(const DevicePlan *p, Setting *s, unsigned possible, NvmeQueueMap *m, unsigned *ret_have,
                              unsigned *ret_want) {
        const Device *d = p->device;
        const NvmeCtrl *c = d->nvme;
        const Knob *k = s->knob;
        _cleanup_free_ char *note = NULL;
        KnobFacts facts = { .possible_cpus = possible, .max_queue_entries = c->max_queue_entries };
        int r;

        if (!c->transport || !streq(c->transport, "pcie")) {
                set_state(s, STATE_UNSUPPORTED, 0,
                          "%s is a %s controller: fabrics take queue counts when connecting "
                          "(nvme connect --nr-poll-queues, --nr-write-queues)",
                          c->name, c->transport ?: "non-PCIe");
                return 0;
        }
        r = k->resolve(s->desired, &facts, &s->effective, &note);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                set_state(s, STATE_FAILED, r, "cannot resolve '%s'", s->desired);
                return 0;
        }
        set_note(s, TAKE_PTR(note));
        r = nvme_queue_map_from_queues(d->queues, d->n_queues, d->io_poll, m);
        if (r < 0)
                return r;
        if (!m->known) {
                set_state(s, STATE_FAILED, -EIO, "cannot tell %s's queue maps from mq/*/cpu_list", d->name);
                return 0;
        }
        m->nr_tags = d->nr_tags;
        queue_map_detail(s, m);
        *ret_have = k->from_queue_map(m);
        if (asprintf_safe(&s->observed, "%u", *ret_have) < 0)
                return -ENOMEM;
        r = safe_atou(s->effective, ret_want);
        if (r < 0)
                return r;
        return 1;
}

/* The controller has at least what row s wants: ok, and in APPLY the drop-in
 * comes down to `target` when the profiles now want less than it says. */
static void module_row_in_step(Setting *s, const ReconcileOptions *o, int dropin[_KNOB_MAX], int target, unsigned have,
                               unsigned want) {
        const Knob *k = s->knob;
        int r;

        if (have > want)
                set_state(s, STATE_OK, 0,
                          "nvme.%s is module-wide: the controller has %u %s because another profile or "
                          "the driver's setting asks for more",
                          k->attr, have, k->unit);
        else
                s->state = STATE_OK;
        if (o->mode == RECONCILE_APPLY && o->modprobe_dropin && !s->hold && dropin[k->id] > target) {
                dropin[k->id] = target;
                r = nvme_dropin_write(o->modprobe_dropin, dropin);
                if (r < 0)
                        set_state(s, STATE_FAILED, r, "cannot write %s: %m", o->modprobe_dropin);
        }
}

/* A dry run or a verify of module row s, which the controller does not have yet. */
static void module_row_preview(const DevicePlan *p, Setting *s, const ReconcileOptions *o, const int dropin[_KNOB_MAX],
                               int target, unsigned want) {
        const NvmeCtrl *c = p->device->nvme;
        const Knob *k = s->knob;

        if (dropin[k->id] >= (int) want)
                set_state(s, STATE_PENDING_REBOOT, 0,
                          "nvme.%s=%d is in %s; %s takes it when the driver next probes it "
                          "(reboot%s)",
                          k->attr, dropin[k->id], o->modprobe_dropin, c->name,
                          p->nvme_rebind ? ", or apply rebinds it when idle" : "");
        else if (o->mode == RECONCILE_VERIFY)
                set_state(s, STATE_DRIFTED, 0, "nvme.%s=%u is not in %s", k->attr, want,
                          o->modprobe_dropin ?: "the modprobe.d drop-in");
        else
                set_state(s, STATE_CHANGED, 0, "would write nvme.%s=%d to %s, then %s", k->attr, target,
                          o->modprobe_dropin ?: "the modprobe.d drop-in",
                          p->nvme_rebind ? "rebind the controller if it is idle (apply: rebind)"
                                         : "wait for the next boot");
}

/* APPLY, with the drop-in written: rebind the controller where the profile
 * allows it (`apply: rebind`), it is idle and was not rebound for these counts
 * before, and say what it came back with (its queue maps into *m); else the row
 * waits for a reboot. 0, or -ENOMEM. */
static int module_row_rebind(DevicePlan *p, Setting *s, const ReconcileOptions *o, const int dropin[_KNOB_MAX],
                             int target, unsigned want, NvmeQueueMap *m) {
        const NvmeCtrl *c = p->device->nvme;
        const Knob *k = s->knob;
        _cleanup_free_ char *why = NULL, *key = NULL, *mqes = NULL, *limit = NULL;
        unsigned have;
        bool unbound;
        int r;

        /* Once per controller and set of counts: one that comes back short is not
         * rebound in a loop, but a later, larger count may rebind it again. */
        key = nvme_rebind_key(c, dropin);
        if (!key)
                return -ENOMEM;
        if (!p->nvme_rebind || !o->allow_rebind || strv_contains(o->rebound_already, key)) {
                set_state(s, STATE_PENDING_REBOOT, 0,
                          "nvme.%s=%d is in %s; %s takes it when the driver next probes it (reboot%s%s)",
                          k->attr, target, o->modprobe_dropin, c->name,
                          root_on_nvme() ? "; root is on NVMe: rebuild the initramfs first" : "",
                          !p->nvme_rebind       ? ", or `apply: rebind` in the profile"
                          : !o->allow_rebind    ? "; drift checks never rebind"
                                                : "; it was rebound for these counts once already and came back short");
                return 0;
        }
        r = nvme_ctrl_in_use(c, &why);
        if (r != 0) {
                set_state(s, STATE_PENDING_REBOOT, 0, "not rebinding %s: %s; nvme.%s=%d takes effect at the next boot",
                          c->name, r < 0 ? strerror(-r) : why ?: "it is in use", k->attr, target);
                return 0;
        }
        free(why);
        why = NULL;
        log_info("Rebinding %s (%s) to the nvme driver for nvme.%s=%d.", c->name, c->address ?: "?", k->attr, target);
        r = nvme_ctrl_rebind(c, dropin, NVME_REBIND_TIMEOUT_USEC, &unbound, m, &why);
        if (unbound) {
                p->rebound = true;
                free(p->rebind_key);
                p->rebind_key = TAKE_PTR(key);
        }
        if (r < 0) {
                set_state(s, STATE_FAILED, r, "%s", why ?: "rebinding failed");
                return 0;
        }
        queue_map_detail(s, m);
        have = k->from_queue_map(m);
        free(s->previous);
        s->previous = TAKE_PTR(s->observed);
        if (asprintf_safe(&s->observed, "%u", have) < 0)
                return -ENOMEM;
        /* Probed just now with the parameter at target or above (the live value is only
         * ever raised): fewer entries is the controller's own limit, CAP.MQES + 1
         * (drivers/nvme/host/pci.c: nvme_pci_enable), unknown before where the kernel
         * keeps a bound driver's BAR to itself (CONFIG_IO_STRICT_DEVMEM). A profile
         * within it makes the row ok. */
        if (k->sets_tag_depth && have > 0 && have < want && (int) have < target &&
            asprintf_safe(&limit, "; %u is this controller's own limit, CAP.MQES + 1", have) < 0)
                return -ENOMEM;
        if (c->max_queue_entries && asprintf_safe(&mqes, " of at most %u entries", c->max_queue_entries) < 0)
                return -ENOMEM;
        if (have >= want)
                set_state(s, STATE_CHANGED, 0, "rebound %s, which was idle: it now has %u %s", c->name, have,
                          k->unit);
        else
                set_state(s, STATE_FAILED, -EIO,
                          "rebound %s, but it came back with %u %s (the controller granted %u I/O queues%s)%s",
                          c->name, have, k->unit, c->granted_sq, mqes ?: "", limit ?: "");
        return 0;
}

/* nvme.poll_queues / write_queues / io_queue_depth as seen on one controller. The parameter is
 * module-wide and read when the driver probes a controller (FACTS.md): what can be
 * done now is to record it in our modprobe.d drop-in, and, with `apply: rebind`,
 * to rebind an idle controller so that it is probed again. */
static int reconcile_module_row(DevicePlan *p, Setting *s, const ReconcileOptions *o) {
        const Knob *k = s->knob;
        unsigned possible = possible_cpus();
        int dropin[_KNOB_MAX], target, r;
        unsigned have, want;
        NvmeQueueMap m;

        assert(p);
        assert(s);
        assert(o);

        r = module_row_observe(p, s, possible, &m, &have, &want);
        if (r <= 0)
                return r;

        /* What the drop-in should say: the largest value any plan wants, within what
         * the driver accepts. */
        target = o->module_targets && o->module_targets[k->id] > (int) want ? o->module_targets[k->id] : (int) want;
        target = module_dropin_value(k, target, possible);
        r = o->modprobe_dropin ? nvme_dropin_read(o->modprobe_dropin, dropin) : 0;
        if (!o->modprobe_dropin)
                for (size_t i = 0; i < _KNOB_MAX; i++)
                        dropin[i] = -1;
        if (r < 0) {
                set_state(s, STATE_FAILED, r, "cannot read %s: %s", o->modprobe_dropin, file_strerror(r));
                return 0;
        }

        if (have >= want) {
                module_row_in_step(s, o, dropin, target, have, want);
                return 0;
        }

        if (nvme_module_kind(o->nvme_module_dir ?: NVME_SYSFS_MODULE) == NVME_MODULE_BUILTIN) {
                set_state(s, STATE_FAILED, -EOPNOTSUPP,
                          "nvme is built into this kernel: modprobe.d does not apply; put nvme.%s=%u on the kernel "
                          "command line",
                          k->attr, want);
                return 0;
        }

        if (o->mode == RECONCILE_DRY_RUN || o->mode == RECONCILE_VERIFY) {
                module_row_preview(p, s, o, dropin, target, want);
                return 0;
        }

        /* APPLY */
        if (!o->modprobe_dropin) {
                set_state(s, STATE_FAILED, -EROFS, "no modprobe.d drop-in to write nvme.%s to", k->attr);
                return 0;
        }
        if (s->hold) {
                set_state(s, STATE_DRIFTED, 0, "held back: something keeps changing it (see the conflict report)");
                return 0;
        }
        if (dropin[k->id] != target) {
                if (dropin[k->id] >= 0)
                        (void) asprintf_safe(&s->previous, "%d", dropin[k->id]);
                dropin[k->id] = target;
                /* The other parameter keeps its value, or takes the largest wanted now. */
                for (size_t i = 0; o->module_targets && i < _KNOB_MAX; i++)
                        if (knob_table[i].scope == KNOB_SCOPE_MODULE && o->module_targets[i] > dropin[i])
                                dropin[i] = module_dropin_value(&knob_table[i], o->module_targets[i], possible);
                r = nvme_dropin_write(o->modprobe_dropin, dropin);
                if (r < 0) {
                        set_state(s, STATE_FAILED, r, "cannot write %s: %m", o->modprobe_dropin);
                        return 0;
                }
        }
        return module_row_rebind(p, s, o, dropin, target, want, &m);
}

/* Nothing is written to a disk whose originals could not be recorded: say why. */
static int record_failed(const char *dir, const Device *d, int r) {
        _cleanup_free_ char *p = originals_record_path(dir, d->name);

        assert(dir);
        assert(d);

        log_error("Cannot record the original values of %s in %s: %s; nothing was written to it.", esc(d->name),
                  esc(p ?: dir), originals_strerror(r));
        return r;
}

/* Record the disk's originals before its first write (once per reconcile), taking
 * the originals lock, which *lock then holds until the caller returns. The queue
 * rows read so far in this reconcile (`read_now`) are all from before that write:
 * recorded as read, not read again. */
static int record_once(DevicePlan *p, const ReconcileOptions *o, const char *const read_now[_KNOB_MAX], bool *recorded,
                       int *lock) {
        TIMING_SCOPE(TIMING_RECORD);
        int r;

        assert(p);
        assert(o);
        assert(recorded);
        assert(lock);

        if (*recorded || !o->originals_dir)
                return 0;
        r = o->originals_locked ? 0 : originals_lock(o->originals_dir, lock);
        if (r >= 0)
                r = originals_record_locked(o->originals_dir, p, read_now);
        if (r < 0)
                return record_failed(o->originals_dir, p->device, r);
        *recorded = true;
        return 0;
}

/* The rows the kernel resets when row `k` changes (knob_resets()) are reset by it. */
static void mark_resets(const Knob *reset_by[static _KNOB_MAX], const Knob *k) {
        unsigned resets = knob_resets(k);

        for (size_t j = 0; j < _KNOB_MAX; j++)
                if (resets & KNOB_MASK(j))
                        reset_by[j] = k;
}

/* Several disks are reconciled at once (reconcile_devices()): their queue rows,
 * each below its own disk, in parallel. Every other row is shared with other
 * disks in some way (the module drop-in, a controller, a PCIe link, /proc/irq)
 * and is reconciled by one disk at a time. */
static pthread_mutex_t shared_rows_lock = PTHREAD_MUTEX_INITIALIZER;

static void shared_rows_unlockp(pthread_mutex_t **m) {
        if (*m)
                (void) pthread_mutex_unlock(*m);
}

static pthread_mutex_t *shared_rows_lock_for(const Knob *k) {
        if (k->scope == KNOB_SCOPE_QUEUE)
                return NULL;
        (void) pthread_mutex_lock(&shared_rows_lock);
        return &shared_rows_lock;
}

/* Row s, of a scope that reconciles its rows itself (controller, module, PCIe
 * link): recorded before its first write in APPLY. *nr_tags_pending: the tag
 * depth it leaves pending, where it sets one. 0, or -errno. */
static int reconcile_scope_row(DevicePlan *p, Setting *s, const ReconcileOptions *o, const char *read_now[_KNOB_MAX],
                               bool *recorded, int *lock, unsigned *nr_tags_pending) {
        const Knob *k = s->knob;
        unsigned entries;
        int r;

        /* The first write to this disk's world: record before it. */
        if (o->mode == RECONCILE_APPLY && (r = record_once(p, o, read_now, recorded, lock)) < 0)
                return r;
        r = scope_ops_of(k)->reconcile(p, s, o);
        if (r < 0)
                return r;
        if (p->rebound)
                return 0;
        if (k->sets_tag_depth && (s->state == STATE_PENDING_REBOOT || s->state == STATE_CHANGED) && s->effective &&
            safe_atou(s->effective, &entries) == 0 && entries > p->device->nr_tags + 1)
                *nr_tags_pending = entries - 1;
        return 0;
}

/* Forget what the last reconcile found of row s. */
static void setting_clear(Setting *s) {
        free(s->observed);
        free(s->effective);
        free(s->previous);
        s->observed = s->effective = s->previous = NULL;
        s->error = 0;
        s->reset_by = NULL;
}

/* Read row s as the disk has it now into s->observed (*why: the reason it cannot
 * be read, where read_setting() gives one). 1 read; 0 not, and s's state says
 * why; -ENOMEM. */
static int read_row(const Device *d, Setting *s, char **why) {
        const Knob *k = s->knob;
        int r;

        r = read_setting(d, s, &s->observed, why);
        if (r == -ENOMEM)
                return r;
        if (r == -EOPNOTSUPP) {
                set_state(s, STATE_UNSUPPORTED, 0, "%s", *why ?: "not supported by this controller");
                return 0;
        }
        if (r < 0 && *why) {
                set_state(s, STATE_FAILED, r, "%s", *why);
                return 0;
        }
        if (r == -ENOENT && s->irq >= 0) {
                set_state(s, STATE_FAILED, r, "IRQ %d is gone (its device was removed?)", s->irq);
                return 0;
        }
        if (r == -ENOENT) {
                set_state(s, STATE_UNSUPPORTED, 0, "this kernel or device has no %s", k->attr);
                return 0;
        }
        if (r < 0 && k->unsupported_errno && r == -k->unsupported_errno) {
                /* The row says what this errno means (wbt_lat_usec: WBT never set up). */
                set_state(s, STATE_UNSUPPORTED, 0, "%s", k->unsupported_why);
                return 0;
        }
        if (r < 0) {
                set_state(s, STATE_FAILED, r, "cannot read %s: %s", k->attr, file_strerror(r));
                return 0;
        }
        return 1;
}

/* Row s reads as it should: ok, unless in a dry run a row before it resets it
 * (block/elevator.c: the scheduler switch resets nr_requests;
 * block/blk-settings.c, 6.11+: a queue-limits update recomputes the read-ahead);
 * it is written after. */
static void settle_row_in_place(Setting *s, const ReconcileOptions *o, const Knob *const reset_by[static _KNOB_MAX]) {
        const Knob *k = s->knob;

        if (o->mode == RECONCILE_DRY_RUN && reset_by[k->id] && !knob_reset_keeps(reset_by[k->id], k, s->effective)) {
                if (reset_by[k->id]->resolve_basis)
                        set_state(s, STATE_CHANGED, 0, "the %s switch resets it; written afterwards",
                                  reset_by[k->id]->name);
                else
                        set_state(s, STATE_CHANGED, 0,
                                  "writing %s resets it (a queue-limits update); written afterwards",
                                  reset_by[k->id]->name);
                return;
        }
        s->state = STATE_OK;
}

/* APPLY: write row s's effective value, read it back, and say how it went
 * (*why: freed, then the write's reason where it gives one). */
static void write_row(const Device *d, Setting *s, const Knob *reset_by[static _KNOB_MAX], char **why) {
        const Knob *k = s->knob;
        int r;

        free(*why);
        *why = NULL;
        r = write_setting(d, s, s->effective, why);
        s->previous = TAKE_PTR(s->observed);
        if (r == -EOPNOTSUPP) {
                set_state(s, STATE_UNSUPPORTED, 0, "%s", *why ?: "not supported by this controller");
                return;
        }
        if (read_setting(d, s, &s->observed, NULL) < 0) {
                set_state(s, STATE_FAILED, r < 0 ? r : -EIO, "cannot read %s back after writing", k->attr);
                return;
        }
        if (streq(s->observed, s->effective)) {
                /* Matches even if write() complained (systemd's write_string_file idiom). */
                s->state = STATE_CHANGED;
                /* Whoever changed this row did not change the rows it resets: they
                 * are written again after it as iotuned's own consequence. */
                s->reset_by = s->irq < 0 ? reset_by[k->id] : NULL;
                if (s->irq < 0)
                        mark_resets(reset_by, k);
                return;
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
                set_state(s, STATE_FAILED, r, "/proc/irq is read-only here (ProtectKernelTunables= in the unit?)");
        else if (r < 0 && *why)
                set_state(s, STATE_FAILED, r, "%s", *why);
        else if (r < 0)
                write_failure_note(s, s->effective, r);
        else
                set_state(s, STATE_FAILED, -EIO, "kernel reads back '%s' after writing '%s'", s->observed,
                          s->effective);
}

int reconcile_device(DevicePlan *p, const ReconcileOptions *o) {
        const Device *d;
        const Knob *basis = knob_resolve_basis();
        /* The basis row's value (the scheduler) as the queue has it now, and as later rows
         * are resolved against. */
        _cleanup_free_ char *basis_now = NULL;
        const char *basis_after = NULL;
        /* The rows a changing row resets, and which row that is: in a dry run, those it
         * would reset; in APPLY, those its write did reset. */
        const Knob *reset_by[_KNOB_MAX] = {};
        /* The tag depth a module row that sets it leaves pending (nvme.io_queue_depth
         * waiting for a reboot or a rebind): nr_requests notes say what it will allow. */
        unsigned nr_tags_pending = 0;
        bool recorded = false;
        /* Until the first write: the queue rows read in this reconcile, by knob id. */
        const char *read_now[_KNOB_MAX] = {};
        /* Held from the record through the last write to this disk (closing it
         * releases it): a restore (the daemon stopping, `iotunectl restore`)
         * cannot put the originals back and forget them between this apply's
         * "already recorded" and its writes. */
        _cleanup_close_ int lock = -1;
        int r;

        assert(p);
        assert(o);

        d = p->device;
        if (p->excluded || p->error)
                return 0;

        for (size_t i = 0; i < p->n_settings; i++) {
                Setting *s = &p->settings[i];
                const Knob *k = s->knob;
                _cleanup_free_ char *note = NULL;
                KnobFacts facts;

                if (o->scopes && !(o->scopes & (1u << k->scope)))
                        continue;
                /* Controller and module rows are read, judged and written with what the
                 * controller says of itself (Identify, its granted queues): asked here,
                 * once, so that a disk without such rows costs its controller no
                 * admin command (and the process no libnvme). */
                if ((k->scope == KNOB_SCOPE_CTRL || k->scope == KNOB_SCOPE_MODULE) && p->device->nvme)
                        nvme_ctrl_identify_once(p->device->nvme);
                /* Held to the end of this row (the cleanup unlocks it). */
                _cleanup_(shared_rows_unlockp) _unused_ pthread_mutex_t *shared = shared_rows_lock_for(k);
                setting_clear(s);
                if (k->needs_mq && !d->has_mq)
                        continue; /* planned as unsupported */
                if (scope_ops_of(k)->reconcile) {
                        r = reconcile_scope_row(p, s, o, read_now, &recorded, &lock, &nr_tags_pending);
                        if (r < 0)
                                return r;
                        if (p->rebound)
                                return 0; /* the disk is gone and back: the caller plans it afresh */
                        continue;
                }

                _cleanup_free_ char *why = NULL;
                r = read_row(d, s, &why);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!recorded && k->scope == KNOB_SCOPE_QUEUE && s->irq < 0)
                        read_now[k->id] = s->observed;

                if (basis && k != basis && !basis_after && d->has_mq) {
                        /* Settings after the scheduler are resolved against the scheduler the
                         * queue will have (nr_requests limits depend on it). */
                        if (!basis_now && read_knob(d, basis, &basis_now) < 0)
                                basis_now = NULL;
                        basis_after = basis_now;
                }
                facts = (KnobFacts) {
                        .rotational = d->rotational,
                        .nr_tags = d->nr_tags,
                        .max_hw_sectors_kb = d->max_hw_sectors_kb,
                        .scheduler_after = basis_after,
                        .nr_tags_pending = nr_tags_pending,
                };
                r = k->resolve(s->desired, &facts, &s->effective, &note);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        set_state(s, STATE_FAILED, r, "cannot resolve '%s' for this device (no %s reported)",
                                  s->desired, k->limit_name ?: "hardware limit");
                        continue;
                }
                set_note(s, TAKE_PTR(note));

                if (k == basis)
                        basis_after = s->effective;
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
                        settle_row_in_place(s, o, reset_by);
                        continue;
                }

                if (scope_ops_of(k)->changeable && scope_ops_of(k)->changeable(d, s, s->effective, &why) == 0) {
                        /* Not drift, and nothing to write: the controller cannot do it. */
                        set_state(s, STATE_UNSUPPORTED, 0, "%s", why);
                        continue;
                }
                if (o->mode == RECONCILE_DRY_RUN) {
                        s->state = STATE_CHANGED;
                        mark_resets(reset_by, k);
                        continue;
                }
                if (o->mode == RECONCILE_VERIFY) {
                        s->state = STATE_DRIFTED;
                        continue;
                }

                if (s->hold) {
                        /* The daemon backs off from a setting something keeps reverting. The
                         * rows it resets follow the value the other writer gave it: written
                         * again, they are not somebody's change of their own. */
                        set_state(s, STATE_DRIFTED, 0, "held back: something keeps changing it (see the conflict report)");
                        if (s->irq < 0)
                                mark_resets(reset_by, k);
                        continue;
                }

                /* APPLY: nothing is written before the originals are safe. */
                r = record_once(p, o, read_now, &recorded, &lock);
                if (r < 0)
                        return r;
                write_row(d, s, reset_by, &why);
        }
        return 0;
}

static bool controller_rebound_before(const Plan *p, size_t upto) {
        const NvmeCtrl *c = p->devices[upto]->device->nvme;

        assert(p);

        for (size_t i = 0; c && c->address && i < upto; i++)
                if (p->devices[i]->rebound && p->devices[i]->device->nvme &&
                    streq_ptr(p->devices[i]->device->nvme->address, c->address))
                        return true;
        return false;
}

typedef struct Batch {
        DevicePlan *const *plans;
        size_t n;
        const ReconcileOptions *o;
        int *results;
        atomic_size_t next;
} Batch;

static void *batch_worker(void *userdata) {
        Batch *b = userdata;

        for (size_t i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
                b->results[i] = reconcile_device(b->plans[i], b->o);
        return NULL;
}

static bool may_run_together(DevicePlan *const *plans, size_t n, const ReconcileOptions *o) {
        if (n < 2 || o->mode != RECONCILE_APPLY)
                return false; /* reads alone are cheap: no threads for them */
        /* A rebind takes a controller's disks away from under the others: in turn. */
        for (size_t i = 0; o->allow_rebind && i < n; i++)
                if (plans[i]->nvme_rebind)
                        return false;
        return true;
}

int reconcile_devices(DevicePlan *const *plans, size_t n, const ReconcileOptions *o, int *results) {
        pthread_t threads[RECONCILE_THREADS_MAX];
        ReconcileOptions locked;
        size_t started = 0;
        int lock = -1, r;

        assert(plans || n == 0);
        assert(o);
        assert(results);

        Batch b = { .plans = plans, .n = n, .o = o, .results = results };
        if (!may_run_together(plans, n, o)) {
                batch_worker(&b);
                return 0;
        }
        /* The originals lock is taken once for all of them (an flock is per open
         * file: threads taking it each would wait for one another). When it cannot
         * be taken, each disk tries and says why, in turn. */
        if (o->originals_dir && !o->originals_locked) {
                r = originals_lock(o->originals_dir, &lock);
                if (r < 0) {
                        batch_worker(&b);
                        return 0;
                }
                locked = *o;
                locked.originals_locked = true;
                b.o = &locked;
        }
        /* The calling thread works too; a thread that cannot be started leaves its
         * share to the others. */
        for (size_t want = MIN(n, (size_t) RECONCILE_THREADS_MAX) - 1; started < want; started++)
                if (pthread_create(&threads[started], NULL, batch_worker, &b) != 0)
                        break;
        batch_worker(&b);
        for (size_t i = 0; i < started; i++)
                (void) pthread_join(threads[i], NULL);
        if (lock >= 0)
                (void) close(lock);
        return 0;
}

int reconcile_plan(Plan *p, const ReconcileOptions *o) {
        _cleanup_free_ int *results = NULL;

        assert(p);
        assert(o);

        /* Without a rebind, every disk at once (a scheduler switch freezes its queue
         * and waits for RCU grace periods: tens of ms each, which overlap). */
        if (p->n > 1 && may_run_together(p->devices, p->n, o)) {
                results = calloc(p->n, sizeof(int));
                if (!results)
                        return -ENOMEM;
                (void) reconcile_devices(p->devices, p->n, o, results);
        }
        for (size_t i = 0; i < p->n; i++) {
                int r;
                if (results)
                        r = results[i];
                else if (controller_rebound_before(p, i))
                        /* Its controller was rebound just now: this disk is gone and back as
                         * a new device; whoever planned it plans it again. */
                        continue;
                else
                        r = reconcile_device(p->devices[i], o);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && !p->devices[i]->error &&
                    asprintf_safe(&p->devices[i]->error, "not tuned: cannot record original values: %s",
                                  strerror(-r)) < 0)
                        return -ENOMEM;
        }
        return 0;
}
