/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "fileio.h"
#include "log.h"
#include "nvme-apply.h"
#include "originals.h"
#include "restore.h"
#include "rootfs.h"
#include "tuner.h"
#include "timing.h"
#include "util.h"

int tuner_init(Tuner *t, const char *root, const char *config_dir) {
        int r;

        assert(t);

        *t = (Tuner) {};
        t->root = strdup(root_is_set(root) ? root : "");
        if (!t->root)
                return log_oom();
        /* Under --root, the paths iotuned writes are resolved inside the root now (a
         * link in the tree never leads out of it), what it reads when read. */
        r = root_resolve(t->root, IOTUNED_RUN_DIR "/originals", &t->originals_dir);
        if (r >= 0)
                r = root_resolve(t->root, NVME_MODPROBE_DROPIN, &t->modprobe_dropin);
        if (r >= 0)
                r = root_resolve(t->root, IOTUNED_RUN_DIR "/hold", &t->hold_dir);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Cannot resolve %s and %s inside %s: %m", IOTUNED_RUN_DIR,
                                       NVME_MODPROBE_DROPIN, esc(t->root));
        r = config_paths_default(t->root, config_dir, &t->paths);
        if (r < 0)
                return log_oom();
        t->udev = udev_new();
        if (!t->udev)
                return log_error_errno(ENOMEM, "Cannot create a udev context.");
        r = topology_load(&t->topology);
        if (r < 0)
                return log_error_errno(r, "Cannot read the CPU topology: %m");
        tuner_refresh_irqs(t);
        t->ctx = (PlanContext) { .topology = &t->topology, .irqs = &t->irqs, .proc_root = t->root };
        return 0;
}

void tuner_done(Tuner *t) {
        assert(t);

        free(t->root);
        config_paths_done(&t->paths);
        free(t->originals_dir);
        free(t->modprobe_dropin);
        free(t->hold_dir);
        t->udev = udev_unref(t->udev);
        topology_done(&t->topology);
        irq_table_done(&t->irqs);
        strv_free(t->rebound);
        *t = (Tuner) {};
}

int tuner_resolve(const Tuner *t, const char *path, char **ret) {
        assert(t);
        assert(path);
        assert(ret);

        return root_resolve(t->root, path, ret);
}

int tuner_load_config(const Tuner *t, Config **ret, Diag *ret_diag) {
        assert(t);
        assert(ret);
        assert(ret_diag);

        return config_load(&t->paths, ret, ret_diag);
}

int tuner_reload_topology(Tuner *t) {
        TIMING_SCOPE(TIMING_PROBE_TOPO);
        Topology topology = {};
        int r;

        assert(t);

        r = topology_load(&topology);
        if (r < 0)
                return r;
        topology_done(&t->topology);
        t->topology = topology;
        return 0;
}

void tuner_refresh_irqs(Tuner *t) {
        TIMING_SCOPE(TIMING_PROBE_IRQS);
        _cleanup_free_ char *text = NULL;
        IrqTable irqs = {};
        int r;

        assert(t);

        /* Without /proc/interrupts vectors are still found (msi_irqs), just unnamed; one
         * that is not a regular file (a FIFO would block) is worth a word. */
        r = root_read_file(t->root, "/proc/interrupts", IRQ_TABLE_FILE_MAX, &text);
        if (r >= 0)
                r = irq_table_parse(text, &irqs);
        if (r == -ENOENT) {
                log_debug_errno(r, "Cannot read %s/proc/interrupts: %m", esc(t->root));
                return;
        }
        if (r < 0) {
                log_warning("Cannot read %s/proc/interrupts: %s; vectors are not named.", esc(t->root),
                            file_strerror(r));
                return; /* keep the previous names */
        }
        irq_table_done(&t->irqs);
        t->irqs = irqs;
}

int tuner_read_irq_counts(const Tuner *t, const unsigned *irqs, size_t n_irqs, IrqCounts *ret) {
        TIMING_SCOPE(TIMING_PROBE_IRQS);
        _cleanup_free_ char *text = NULL;
        int r;

        assert(t);
        assert(ret);

        r = root_read_file(t->root, "/proc/interrupts", IRQ_TABLE_FILE_MAX, &text);
        if (r < 0)
                return r;
        r = irq_counts_parse(text, irqs, n_irqs, ret);
        if (r >= 0)
                ret->sampled_usec = now_usec(CLOCK_MONOTONIC);
        return r;
}

int tuner_read_diskstats(const Tuner *t, DiskStats *ret) {
        TIMING_SCOPE(TIMING_LOAD);
        _cleanup_free_ char *text = NULL;
        int r;

        assert(t);
        assert(ret);

        r = root_read_file(t->root, "/proc/diskstats", DISKSTATS_FILE_MAX, &text);
        if (r < 0)
                return r;
        return diskstats_parse(text, now_usec(CLOCK_MONOTONIC), ret);
}

int tuner_probe(Tuner *t, const char *syspath, Device **ret) {
        struct udev_device *u;
        int r;

        assert(t);
        assert(syspath);
        assert(ret);

        u = udev_device_new_from_syspath(t->udev, syspath);
        if (!u)
                return -ENODEV;
        r = device_probe(u, ret);
        udev_device_unref(u);
        return r;
}

DiscoveryFilter tuner_discovery_filter(const Config *c) {
        assert(c);

        return (DiscoveryFilter) {
                .loop = c->discover[DISCOVERY_LOOP],
                .dm = c->discover[DISCOVERY_DM],
                .md = c->discover[DISCOVERY_MD],
                .zram = c->discover[DISCOVERY_ZRAM],
        };
}

int tuner_enumerate(Tuner *t, const Config *c, DeviceList *ret) {
        DiscoveryFilter f;

        assert(t);
        assert(c);
        assert(ret);

        f = tuner_discovery_filter(c);
        TIMING_SCOPE(TIMING_ENUMERATE);
        return device_enumerate(t->udev, &f, ret);
}

int tuner_lookup(Tuner *t, char *const *names, DeviceList *ret, const char **ret_bad) {
        DeviceList l = {};
        int r;

        assert(t);
        assert(ret);
        assert(ret_bad);

        l.items = calloc(strv_length(names) ?: 1, sizeof(Device *));
        if (!l.items)
                return -ENOMEM;
        for (char *const *n = names; n && *n; n++) {
                r = device_lookup(t->udev, *n, &l.items[l.n]);
                if (r < 0) {
                        device_list_done(&l);
                        *ret_bad = *n;
                        return r;
                }
                l.n++;
        }
        *ret = l;
        return 0;
}

int tuner_plan(Tuner *t, const Config *c, char *const *names, DeviceList *devices, Plan *ret,
               int targets[_KNOB_MAX]) {
        TIMING_SCOPE(TIMING_PLAN);
        DeviceList all = {};
        Plan full = {}, p = {};
        int r;

        assert(t);
        assert(c);
        assert(devices);
        assert(ret);
        assert(targets);

        if (strv_length(names) == 0) {
                r = plan_build(c, devices, &t->ctx, &p);
                if (r >= 0)
                        plan_module_targets(p.devices, p.n, targets);
        } else {
                r = tuner_enumerate(t, c, &all);
                if (r >= 0)
                        r = plan_build(c, &all, &t->ctx, &full);
                if (r >= 0) {
                        p.devices = calloc(devices->n ?: 1, sizeof(DevicePlan *));
                        if (!p.devices)
                                r = -ENOMEM;
                }
                for (size_t i = 0; r >= 0 && i < devices->n; i++) {
                        Device *d = TAKE_PTR(devices->items[i]);
                        r = plan_device(c, d, &t->ctx, &p.devices[p.n]);
                        if (r < 0)
                                break;
                        /* Vectors already planned with a disk that sorts before this one go there. */
                        for (size_t j = 0; j < full.n; j++)
                                if (strverscmp(full.devices[j]->device->name, p.devices[p.n]->device->name) < 0)
                                        plan_drop_claimed_irqs(p.devices[p.n], &full.devices[j], 1);
                        p.n++;
                }
                /* nvme.poll_queues and nvme.write_queues serve every disk, named or not. */
                plan_module_targets(full.devices, full.n, targets);
                device_list_done(&all);
                plan_done(&full);
        }
        device_list_done(devices);
        for (size_t i = 0; r >= 0 && t->identify_all && i < p.n; i++)
                if (p.devices[i]->device->nvme)
                        nvme_ctrl_identify_once(p.devices[i]->device->nvme);
        if (r >= 0)
                r = plan_confine_to_root(&p, t->root);
        if (r < 0) {
                plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int tuner_plan_device(Tuner *t, const Config *c, Device *d, const Plan *current, DevicePlan **ret,
                      int targets[_KNOB_MAX]) {
        TIMING_SCOPE(TIMING_PLAN);
        DevicePlan *p = NULL;
        int more[_KNOB_MAX], r;

        assert(t);
        assert(c);
        assert(d);
        assert(current);
        assert(ret);
        assert(targets);

        r = plan_device(c, d, &t->ctx, &p);
        if (r < 0)
                return r;
        r = device_plan_confine_to_root(p, t->root); /* --root: vector files inside it */
        if (r < 0) {
                device_plan_free(p);
                return r;
        }
        plan_drop_claimed_irqs(p, current->devices, current->n);
        plan_module_targets(current->devices, current->n, targets);
        plan_module_targets(&p, 1, more);
        for (size_t k = 0; k < _KNOB_MAX; k++)
                targets[k] = MAX(targets[k], more[k]);
        *ret = p;
        return 0;
}

ReconcileOptions tuner_options(const Tuner *t, ReconcileMode mode, const int *targets, bool allow_rebind) {
        assert(t);

        return (ReconcileOptions) {
                .mode = mode,
                .originals_dir = t->originals_dir,
                .modprobe_dropin = t->modprobe_dropin,
                .module_targets = targets,
                .allow_rebind = allow_rebind,
                .rebound_already = t->rebound,
        };
}

/* Remember the controllers `p` rebound, so that they are not rebound again. */
static int note_rebound(Tuner *t, const DevicePlan *p) {
        if (!p->rebound || !p->rebind_key || strv_contains(t->rebound, p->rebind_key))
                return 0;
        return strv_extend(&t->rebound, p->rebind_key);
}

int tuner_reconcile_device(Tuner *t, DevicePlan *p, ReconcileMode mode, const int *targets, bool allow_rebind) {
        ReconcileOptions o;
        int r;

        assert(t);
        assert(p);

        o = tuner_options(t, mode, targets, allow_rebind);
        r = reconcile_device(p, &o);
        if (note_rebound(t, p) < 0)
                return -ENOMEM;
        return r;
}

int tuner_reconcile_devices(Tuner *t, DevicePlan *const *plans, size_t n, ReconcileMode mode, const int *targets,
                            bool allow_rebind, int *results) {
        ReconcileOptions o;

        assert(t);
        assert(plans || n == 0);
        assert(results);

        o = tuner_options(t, mode, targets, allow_rebind);
        (void) reconcile_devices(plans, n, &o, results);
        for (size_t i = 0; i < n; i++)
                if (note_rebound(t, plans[i]) < 0)
                        return -ENOMEM;
        return 0;
}

void tuner_forget_controller(Plan *p, const char *address) {
        assert(p);

        for (size_t i = p->n; i > 0; i--) {
                const NvmeCtrl *c = p->devices[i - 1]->device->nvme;
                if (!c || !streq_ptr(c->address, address))
                        continue;
                device_plan_free(p->devices[i - 1]);
                memmove(p->devices + i - 1, p->devices + i, (p->n - i) * sizeof(DevicePlan *));
                p->n--;
        }
}

/* ---- the whole pipeline, with the second pass after a rebind ------------------ */

/* Collect, plan and reconcile: one pass of tuner_run(). */
static int run_pass(Tuner *t, const Config *c, char *const *names, ReconcileMode mode, Plan *ret,
                    const char **ret_bad) {
        int targets[_KNOB_MAX];
        ReconcileOptions o;
        DeviceList devices = {};
        Plan p = {};
        int r;

        assert(t);
        assert(c);
        assert(ret);
        assert(ret_bad);

        if (strv_length(names) == 0)
                r = tuner_enumerate(t, c, &devices);
        else
                r = tuner_lookup(t, names, &devices, ret_bad);
        if (r < 0)
                return r;
        r = tuner_plan(t, c, names, &devices, &p, targets);
        if (r < 0)
                return r;
        o = tuner_options(t, mode, targets, true);
        r = reconcile_plan(&p, &o);
        for (size_t i = 0; r >= 0 && i < p.n; i++)
                r = note_rebound(t, p.devices[i]);
        if (r < 0) {
                plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

/* What the first pass did to one module-wide row of a controller it rebound: the
 * second pass, on the devices that came back, shows it. */
typedef struct RebindOutcome {
        char *address, *ctrl, *note;
        KnobId knob;
        SettingState state;
        int error;
        bool seen;  /* a device of this controller is in the second pass */
} RebindOutcome;

static void rebind_outcomes_free(RebindOutcome *o, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(o[i].address);
                free(o[i].ctrl);
                free(o[i].note);
        }
        free(o);
}

static int rebind_outcomes(const Plan *p, RebindOutcome **ret, size_t *ret_n, bool *ret_any) {
        RebindOutcome *l = NULL;
        size_t n = 0;

        assert(p);
        assert(ret);
        assert(ret_n);
        assert(ret_any);

        *ret_any = false;
        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];
                const NvmeCtrl *ctl = dp->device->nvme;
                if (!dp->rebound || !ctl)
                        continue;
                if (dp->rebind_key)
                        *ret_any = true;
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        RebindOutcome *nl;
                        if (s->knob->scope != KNOB_SCOPE_MODULE)
                                continue;
                        nl = realloc(l, (n + 1) * sizeof(RebindOutcome));
                        if (!nl)
                                goto oom;
                        l = nl;
                        l[n++] = (RebindOutcome) {
                                .knob = s->knob->id,
                                .state = s->state,
                                .error = s->error,
                                .address = strdup(ctl->address ?: ctl->name),
                                .ctrl = strdup(ctl->name),
                                .note = strdup_or_null(s->note),
                        };
                        if (!l[n - 1].address || !l[n - 1].ctrl || (s->note && !l[n - 1].note))
                                goto oom;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
oom:
        rebind_outcomes_free(l, n);
        return -ENOMEM;
}

/* Second pass: a row of a rebound controller shows what the rebind did. */
static void apply_rebind_outcomes(Plan *plan, RebindOutcome *out, size_t n) {
        assert(plan);

        for (size_t i = 0; i < plan->n; i++) {
                const NvmeCtrl *ctl = plan->devices[i]->device->nvme;
                for (size_t k = 0; ctl && k < plan->devices[i]->n_settings; k++) {
                        Setting *s = &plan->devices[i]->settings[k];
                        for (size_t j = 0; j < n; j++) {
                                if (s->knob->id != out[j].knob || !streq(out[j].address, ctl->address ?: ctl->name))
                                        continue;
                                out[j].seen = true;
                                if (out[j].state != STATE_FAILED && !(out[j].state == STATE_CHANGED && s->state == STATE_OK))
                                        continue;
                                s->state = out[j].state;
                                s->error = out[j].error;
                                free(s->note);
                                s->note = strdup_or_null(out[j].note);
                        }
                }
        }
}

/* udevd has handled every event queued so far (the namespaces of a rebound
 * controller), or timeout_usec passed: libudev's queue, woken by its inotify
 * descriptor rather than polled on a timer. */
static void wait_for_udev(Tuner *t, uint64_t timeout_usec) {
        struct udev_queue *q;
        uint64_t deadline;
        int fd;

        assert(t);

        q = udev_queue_new(t->udev);
        if (!q)
                return;
        fd = udev_queue_get_fd(q);
        deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        while (!udev_queue_get_queue_is_empty(q)) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int ms;

                if (now >= deadline)
                        break;
                /* At most a second per wait: the queue is asked again either way. */
                ms = (int) MIN((deadline - now) / 1000 + 1, 1000ULL);
                if (fd < 0)
                        (void) poll(NULL, 0, MIN(ms, 100)); /* no inotify: look again in a while */
                else if (poll(&(struct pollfd) { .fd = fd, .events = POLLIN }, 1, ms) > 0)
                        (void) udev_queue_flush(q);
        }
        udev_queue_unref(q);
}

int tuner_run(Tuner *t, const Config *c, char *const *names, ReconcileMode mode, Plan *ret, char ***ret_lost,
              const char **ret_bad) {
        _cleanup_strv_free_ char **lost = NULL;
        RebindOutcome *outcomes = NULL;
        size_t n_outcomes = 0;
        bool rebound;
        Plan plan = {};
        int r;

        assert(t);
        assert(c);
        assert(ret);
        assert(ret_lost);
        assert(ret_bad);

        r = run_pass(t, c, names, mode, &plan, ret_bad);
        if (r < 0)
                return r;
        r = rebind_outcomes(&plan, &outcomes, &n_outcomes, &rebound);
        if (r < 0) {
                plan_done(&plan);
                return r;
        }
        if (rebound) {
                /* A rebound controller's disks came back as new devices with default queue
                 * settings and new vectors: plan and apply them afresh, once. No second
                 * rebind for the same counts can follow (t->rebound): the queues are there
                 * now, or it failed, which the rows of the second pass then say. */
                plan_done(&plan);
                wait_for_udev(t, 30 * 1000000ULL);
                tuner_refresh_irqs(t);
                r = run_pass(t, c, names, mode, &plan, ret_bad);
                if (r < 0) {
                        rebind_outcomes_free(outcomes, n_outcomes);
                        return r;
                }
                apply_rebind_outcomes(&plan, outcomes, n_outcomes);
                for (size_t j = 0; j < n_outcomes; j++) {
                        char *line = NULL;
                        if (outcomes[j].seen)
                                continue;
                        /* Its disks did not come back: say so, whatever was named. */
                        if (asprintf_safe(&line, "%s (%s): %s; none of its disks is back.", outcomes[j].ctrl,
                                          outcomes[j].address, outcomes[j].note ?: "rebound") < 0 ||
                            strv_push(&lost, line) < 0) {
                                rebind_outcomes_free(outcomes, n_outcomes);
                                plan_done(&plan);
                                return -ENOMEM;
                        }
                }
        }
        rebind_outcomes_free(outcomes, n_outcomes);
        *ret = plan;
        *ret_lost = TAKE_PTR(lost);
        return 0;
}

int tuner_restore(Tuner *t, char *const *names, const Plan *known, Plan *ret, char ***ret_gone) {
        assert(t);
        assert(ret);
        assert(ret_gone);

        return restore_originals(t->udev, t->originals_dir, t->root,
                                 strv_length(names) ? names : NULL, known, ret, ret_gone);
}

int tuner_restore_knobs(Tuner *t, const char *name, const bool knobs[_KNOB_MAX], const int *irqs, size_t n_irqs,
                        DevicePlan **ret) {
        Device *d = NULL;
        int r;

        assert(t);
        assert(name);
        assert(knobs);
        assert(ret);

        r = device_lookup(t->udev, name, &d);
        if (r < 0)
                return r;
        return restore_knobs(t->originals_dir, t->root, d, knobs, irqs, n_irqs, ret);
}
