/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "fileio.h"

#include "cli.h"
#include "log.h"
#include "nvme-apply.h"
#include "irqbalance.h"
#include "originals.h"
#include "reconcile.h"
#include "restore.h"
#include "rootfs.h"
#include "status.h"
#include "util.h"

int cli_init(Cli *c) {
        const char *root = root_is_set(c->root) ? c->root : "";
        _cleanup_free_ char *interrupts = NULL;
        int r;

        /* Under --root, the paths iotunectl writes are resolved inside the root now
         * (a link in the tree never leads out of it), what it reads when read. */
        r = root_resolve(c->root, IOTUNED_RUN_DIR "/originals", &c->originals_dir);
        if (r >= 0)
                r = root_resolve(c->root, NVME_MODPROBE_DROPIN, &c->modprobe_dropin);
        if (r == -ENOMEM || !(c->proc_root = strdup(root)))
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Cannot resolve %s and %s inside %s: %m", IOTUNED_RUN_DIR,
                                       NVME_MODPROBE_DROPIN, esc(c->root));
        c->udev = udev_new();
        if (!c->udev)
                return log_error_errno(ENOMEM, "Cannot create a udev context.");
        r = topology_load(&c->topology);
        if (r < 0)
                return log_error_errno(r, "Cannot read the CPU topology: %m");
        /* Without /proc/interrupts vectors are still found (msi_irqs), just unnamed;
         * one that is not a regular file (a FIFO would block) is worth a word. */
        r = root_read_file(c->root, "/proc/interrupts", IRQ_TABLE_FILE_MAX, &interrupts);
        if (r >= 0)
                r = irq_table_parse(interrupts, &c->irqs);
        if (r == -ENOENT)
                log_debug_errno(r, "Cannot read %s/proc/interrupts: %m", esc(root));
        else if (r < 0)
                log_warning("Cannot read %s/proc/interrupts: %s; vectors are not named.", esc(root), file_strerror(r));
        c->ctx = (PlanContext) { .topology = &c->topology, .irqs = &c->irqs, .proc_root = c->proc_root };
        return 0;
}

void cli_done(Cli *c) {
        free(c->originals_dir);
        c->originals_dir = NULL;
        free(c->modprobe_dropin);
        c->modprobe_dropin = NULL;
        free(c->proc_root);
        c->proc_root = NULL;
        topology_done(&c->topology);
        irq_table_done(&c->irqs);
        c->udev = udev_unref(c->udev);
}

/* ---- shared steps ------------------------------------------------------------ */

/* Load and validate; on failure the diagnostics go to stderr, or into *ret_diag
 * when the caller wants them (check-config --json). */
static int load_config_diag(Cli *c, Config **ret, Diag *ret_diag) {
        ConfigPaths paths = {};
        Diag diag = {};
        int r;

        r = config_paths_default(c->root, c->config_dir, &paths);
        if (r < 0)
                return log_oom(), EXIT_FAILED;
        r = config_load(&paths, ret, &diag);
        config_paths_done(&paths);
        if (r == -ENOMEM) {
                diag_done(&diag);
                return log_oom(), EXIT_FAILED;
        }
        if (r < 0) {
                if (ret_diag) {
                        *ret_diag = diag;
                        return EXIT_CONFIG;
                }
                log_error("The configuration is invalid (%zu error%s); nothing was applied:", diag.n,
                          diag.n == 1 ? "" : "s");
                diag_print(&diag, stderr);
                diag_done(&diag);
                return EXIT_CONFIG;
        }
        diag_done(&diag);
        return EXIT_OK;
}

static int load_config(Cli *c, Config **ret) {
        return load_config_diag(c, ret, NULL);
}

static DiscoveryFilter filter_from_config(const Config *cfg) {
        return (DiscoveryFilter) {
                .loop = cfg->discover[DISCOVERY_LOOP],
                .dm = cfg->discover[DISCOVERY_DM],
                .md = cfg->discover[DISCOVERY_MD],
                .zram = cfg->discover[DISCOVERY_ZRAM],
        };
}

static int lookup_error(const char *name, int r) {
        switch (r) {
        case -EISDIR:
                log_error("%s is a partition; partitions share their disk's queue, tune the disk instead.", esc(name));
                break;
        case -ENODEV:
        case -ENOENT:
                log_error("No such block disk: %s (see lsblk -d).", esc(name));
                break;
        case -ENOTBLK:
                log_error("%s is not a block device.", esc(name));
                break;
        case -EINVAL:
                log_error("Invalid device name '%s': give a kernel name (nvme0n1) or a /dev path.", esc(name));
                break;
        default:
                log_error_errno(r, "Cannot look up %s: %m", esc(name));
        }
        return EXIT_NO_DEVICE;
}

/* Named devices, or every disk the configuration's discovery filter admits. */
static int collect_devices(Cli *c, const Config *cfg, char **names, DeviceList *ret) {
        DeviceList l = {};
        int r;

        if (strv_length(names) == 0) {
                DiscoveryFilter f = filter_from_config(cfg);
                r = device_enumerate(c->udev, &f, &l);
                if (r < 0) {
                        log_error_errno(r, "Cannot enumerate block devices: %m");
                        return EXIT_FAILED;
                }
                *ret = l;
                return EXIT_OK;
        }

        l.items = calloc(strv_length(names), sizeof(Device *));
        if (!l.items)
                return log_oom(), EXIT_FAILED;
        for (char **n = names; *n; n++) {
                r = device_lookup(c->udev, *n, &l.items[l.n]);
                if (r < 0) {
                        device_list_done(&l);
                        return lookup_error(*n, r);
                }
                l.n++;
        }
        *ret = l;
        return EXIT_OK;
}

/* Plan the named devices (all when none are named). Named devices are planned
 * within the plan of every disk, so that a vector shared by several disks of one
 * PCI function is planned with the same disk whichever is named. */
static int plan_named(Cli *c, const Config *cfg, char **names, DeviceList *named, Plan *ret,
                      int module_targets[_KNOB_MAX]) {
        DiscoveryFilter f = filter_from_config(cfg);
        DeviceList all = {};
        Plan full = {}, p = {};
        int r;

        if (strv_length(names) == 0) {
                r = plan_build(cfg, named, &c->ctx, ret);
                if (r >= 0)
                        plan_module_targets(ret->devices, ret->n, module_targets);
                return r;
        }

        r = device_enumerate(c->udev, &f, &all);
        if (r >= 0)
                r = plan_build(cfg, &all, &c->ctx, &full);
        if (r >= 0) {
                p.devices = calloc(named->n ?: 1, sizeof(DevicePlan *));
                if (!p.devices)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < named->n; i++) {
                Device *d = TAKE_PTR(named->items[i]);
                r = plan_device(cfg, d, &c->ctx, &p.devices[p.n]);
                if (r < 0)
                        break;
                /* Vectors already planned with a disk that sorts before this one go there. */
                for (size_t j = 0; j < full.n; j++)
                        if (strverscmp(full.devices[j]->device->name, p.devices[p.n]->device->name) < 0)
                                plan_drop_claimed_irqs(p.devices[p.n], &full.devices[j], 1);
                p.n++;
        }
        /* nvme.poll_queues and nvme.write_queues serve every disk, named or not. */
        plan_module_targets(full.devices, full.n, module_targets);
        device_list_done(&all);
        device_list_done(named);
        plan_done(&full);
        if (r < 0) {
                plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

static bool plan_has_state(const Plan *p, SettingState st) {
        for (size_t i = 0; i < p->n; i++) {
                if (st == STATE_FAILED && p->devices[i]->error)
                        return true;
                for (size_t k = 0; k < p->devices[i]->n_settings; k++)
                        if (p->devices[i]->settings[k].state == st)
                                return true;
        }
        return false;
}

static void print_result(Cli *c, const char *command, const Plan *p, bool dry_run, bool show_ok) {
        if (c->json) {
                json_object *j = output_json_new(command), *body = output_plan_json(p, dry_run);
                json_object_object_foreach(body, key, val) json_object_object_add(j, key, json_object_get(val));
                json_object_put(body);
                output_json_print(j);
                json_object_put(j);
                return;
        }
        if (!c->quiet)
                output_plan_table(p, dry_run, show_ok || c->all);
        output_plan_summary(p, command, dry_run);
}

/* udevd has handled every event so far (the namespaces of a rebound controller). */
static void wait_for_udev(Cli *c, uint64_t timeout_usec) {
        struct udev_queue *q = udev_queue_new(c->udev);
        for (uint64_t waited = 0; q && !udev_queue_get_queue_is_empty(q) && waited < timeout_usec; waited += 100000)
                usleep(100000);
        udev_queue_unref(q);
}

/* What the first APPLY pass did to one module-wide row of a controller it rebound:
 * the second pass, on the devices that came back, shows it. */
typedef struct RebindOutcome {
        char *address, *ctrl, *key, *note;
        KnobId knob;
        SettingState state;
        int error;
        bool seen;  /* a device of this controller is in the second pass */
} RebindOutcome;

static void rebind_outcomes_free(RebindOutcome *o, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(o[i].address);
                free(o[i].ctrl);
                free(o[i].key);
                free(o[i].note);
        }
        free(o);
}

static int rebind_outcomes(const Plan *p, RebindOutcome **ret, size_t *ret_n, char ***ret_keys) {
        RebindOutcome *l = NULL;
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];
                const NvmeCtrl *ctl = dp->device->nvme;
                if (!dp->rebound || !ctl)
                        continue;
                if (dp->rebind_key && strv_extend(ret_keys, dp->rebind_key) < 0)
                        goto oom;
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        RebindOutcome *nl;
                        if (s->knob->scope != KNOB_SCOPE_MODULE)
                                continue;
                        nl = realloc(l, (n + 1) * sizeof(RebindOutcome));
                        if (!nl)
                                goto oom;
                        l = nl;
                        l[n] = (RebindOutcome) { .knob = s->knob->id, .state = s->state, .error = s->error };
                        n++;
                        l[n - 1].address = strdup(ctl->address ?: ctl->name);
                        l[n - 1].ctrl = strdup(ctl->name);
                        l[n - 1].note = strdup_or_null(s->note);
                        if (!l[n - 1].address || !l[n - 1].ctrl)
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

static int plan_and_reconcile(Cli *c, const Config *cfg, char **devices, ReconcileMode mode,
                              char *const *rebound_already, Plan *ret) {
        int targets[_KNOB_MAX];
        ReconcileOptions o = { .mode = mode, .originals_dir = c->originals_dir, .modprobe_dropin = c->modprobe_dropin,
                               .module_targets = targets, .allow_rebind = true,
                               .rebound_already = rebound_already };
        DeviceList devs = {};
        int r, ex;

        ex = collect_devices(c, cfg, devices, &devs);
        if (ex != EXIT_OK)
                return ex;
        r = plan_named(c, cfg, devices, &devs, ret, targets);
        if (r >= 0)
                r = plan_confine_to_root(ret, c->root);
        if (r >= 0)
                r = reconcile_plan(ret, &o);
        if (r < 0) {
                plan_done(ret);
                log_error_errno(r, "Planning failed: %m");
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

static int run_pipeline(Cli *c, char **devices, ReconcileMode mode, const char *command, bool show_ok) {
        _cleanup_(config_freep) Config *cfg = NULL;
        _cleanup_strv_free_ char **rebound = NULL;
        RebindOutcome *outcomes = NULL;
        size_t n_outcomes = 0;
        bool lost = false;
        Plan plan = {};
        int ex;

        ex = load_config(c, &cfg);
        if (ex != EXIT_OK)
                return ex;
        ex = plan_and_reconcile(c, cfg, devices, mode, NULL, &plan);
        if (ex != EXIT_OK)
                return ex;
        if (rebind_outcomes(&plan, &outcomes, &n_outcomes, &rebound) < 0) {
                plan_done(&plan);
                return log_oom(), EXIT_FAILED;
        }
        if (rebound) {
                /* A rebound controller's disks came back as new devices with default queue
                 * settings and new vectors: plan and apply them afresh, once. No second
                 * rebind for the same counts can follow: the queues are there now, or it
                 * failed, which the rows of the second pass then say. */
                plan_done(&plan);
                wait_for_udev(c, 30 * 1000000ULL);
                ex = plan_and_reconcile(c, cfg, devices, mode, rebound, &plan);
                if (ex != EXIT_OK) {
                        rebind_outcomes_free(outcomes, n_outcomes);
                        return ex;
                }
                apply_rebind_outcomes(&plan, outcomes, n_outcomes);
                for (size_t j = 0; j < n_outcomes; j++)
                        if (!outcomes[j].seen) {
                                /* Its disks did not come back: say so, whatever was named. */
                                log_error("%s (%s): %s; none of its disks is back.", esc(outcomes[j].ctrl),
                                          esc(outcomes[j].address), esc(outcomes[j].note ?: "rebound"));
                                lost = true;
                        }
        }
        rebind_outcomes_free(outcomes, n_outcomes);

        print_result(c, command, &plan, mode == RECONCILE_DRY_RUN, show_ok);
        if (mode == RECONCILE_APPLY && !c->json) {
                IrqBalance b = {};
                bool pinned = false;
                for (size_t i = 0; i < plan.n && !pinned; i++)
                        for (size_t k = 0; k < plan.devices[i]->n_settings && !pinned; k++)
                                pinned = plan.devices[i]->keep_irqbalance_away && plan.devices[i]->settings[k].irq >= 0 &&
                                         plan.devices[i]->settings[k].state == STATE_CHANGED;
                if (pinned && irqbalance_find(c->proc_root, &b) == 0) {
                        printf("note: irqbalance (pid %d) is running and will move the vectors just pinned; "
                               "iotuned (the daemon) keeps it away from them.\n", b.pid);
                        irqbalance_done(&b);
                }
        }

        if (lost || plan_has_state(&plan, STATE_FAILED))
                ex = EXIT_FAILED;
        else if (mode == RECONCILE_VERIFY && plan_has_state(&plan, STATE_DRIFTED))
                ex = EXIT_DRIFT;
        plan_done(&plan);
        return ex;
}

/* ---- verbs ------------------------------------------------------------------- */

int cli_plan(Cli *c, char **devices) {
        return run_pipeline(c, devices, RECONCILE_DRY_RUN, "plan", true);
}

int cli_apply(Cli *c, char **devices) {
        return run_pipeline(c, devices, RECONCILE_APPLY, "apply", false);
}

int cli_verify(Cli *c, char **devices) {
        return run_pipeline(c, devices, RECONCILE_VERIFY, "verify", false);
}

int cli_restore(Cli *c, char **devices) {
        _cleanup_strv_free_ char **names = NULL, **gone = NULL;
        Plan plan = {};
        int r, ex = EXIT_OK;

        r = originals_list(c->originals_dir, &names);
        if (r < 0) {
                log_error_errno(r, "Cannot read %s: %m", esc(c->originals_dir));
                return EXIT_FAILED;
        }
        for (char **d = devices; d && *d; d++)
                if (!strv_contains(names, *d)) {
                        log_error("No recorded original values for %s in %s.", esc(*d), esc(c->originals_dir));
                        return EXIT_NO_DEVICE;
                }

        r = restore_originals(c->udev, c->originals_dir, c->proc_root, strv_length(devices) ? devices : NULL, &plan,
                              &gone);
        if (r < 0) {
                log_error_errno(r, "Restoring failed: %m");
                return EXIT_FAILED;
        }
        print_result(c, "restore", &plan, false, false);
        if (!c->json)
                for (char **g = gone; g && *g; g++)
                        printf("%s: gone or replaced since it was tuned; its record was dropped\n", esc(*g));
        if (strv_length(devices) == 0 && access(c->modprobe_dropin, F_OK) == 0) {
                /* The NVMe queue counts are not runtime values: their drop-in goes, and the
                 * driver's defaults come back when it next probes the controllers. */
                if (unlink(c->modprobe_dropin) < 0) {
                        log_error_errno(errno, "Cannot remove %s: %m", esc(c->modprobe_dropin));
                        ex = EXIT_FAILED;
                } else if (!c->json)
                        printf("removed %s: the nvme driver's own queue counts return at the next boot\n",
                               c->modprobe_dropin);
        }
        if (plan_has_state(&plan, STATE_FAILED))
                ex = EXIT_FAILED;
        plan_done(&plan);
        return ex;
}

static void explain_nvme(const Device *d) {
        const NvmeCtrl *n = d->nvme;
        NvmeQueueMap m;

        printf("  controller:  %s (%s%s%s, %s), NUMA node %d\n", esc(n->name), esc(n->transport ?: "?"),
               n->address ? " " : "", esc(n->address ?: ""), esc(n->state ?: "?"), n->numa_node);
        if (n->identified) {
                printf("    APST:      %s%s; %u power state%s\n", n->apsta ? "supported" : "not supported",
                       n->apsta ? (n->has_pm_qos ? ", driven by the kernel" : ", not driven by the kernel (quirk)") : "",
                       n->npss + 1, n->npss ? "s" : "");
                if (n->granted_sq)
                        printf("    queues:    %u I/O submission / %u completion queues granted (Get Features 0x07)\n",
                               n->granted_sq, n->granted_cq);
        } else
                printf("    identify:  %s\n", esc(n->identify_error ?: "not answered"));
        if (n->sqsize)
                printf("    depth:     %u entries per I/O queue in use (min of CAP.MQES+1 and nvme.io_queue_depth)\n",
                       n->sqsize + 1);
        if (nvme_queue_map_from_queues(d->queues, d->n_queues, d->io_poll, &m) == 0 && m.known)
                printf("    maps:      %u default, %u read, %u poll queue%s%s\n", m.n_default, m.n_read, m.n_poll,
                       m.n_poll == 1 ? "" : "s", m.n_poll ? " (io_poll=1)" : "");
}

int cli_explain(Cli *c, const char *name) {
        _cleanup_(config_freep) Config *cfg = NULL;
        _cleanup_(device_plan_freep) DevicePlan *dp = NULL;
        ReconcileOptions o = { .mode = RECONCILE_DRY_RUN };
        json_object *j = NULL, *rules = NULL;
        const Device *d;
        Device *dev = NULL;
        int r, ex, wk = 4, wx = 7, wc = 7, ws = 5;

        ex = load_config(c, &cfg);
        if (ex != EXIT_OK)
                return ex;
        char *names[] = { (char *) name, NULL };
        DeviceList named = {};
        Plan pl = {};

        r = device_lookup(c->udev, name, &dev);
        if (r < 0)
                return lookup_error(name, r);
        named.items = calloc(1, sizeof(Device *));
        if (!named.items) {
                device_free(dev);
                return log_oom(), EXIT_FAILED;
        }
        named.items[0] = dev;
        named.n = 1;
        int targets[_KNOB_MAX];
        o.module_targets = targets;
        o.modprobe_dropin = c->modprobe_dropin;
        r = plan_named(c, cfg, names, &named, &pl, targets);
        if (r >= 0) {
                dp = pl.devices[0];
                pl.devices[0] = NULL;
                pl.n = 0;
                plan_done(&pl);
                r = device_plan_confine_to_root(dp, c->root);
                if (r >= 0)
                        r = reconcile_device(dp, &o);
        }
        if (r < 0)
                return log_error_errno(r, "Cannot plan %s: %m", esc(name)), EXIT_FAILED;
        d = dp->device;

        if (c->json) {
                Plan one = { .devices = &dp, .n = 1 };
                json_object *body = output_plan_json(&one, true);
                j = output_json_new("explain");
                json_object_object_foreach(body, key, val) json_object_object_add(j, key, json_object_get(val));
                json_object_put(body);
                rules = json_object_new_array();
        } else {
                printf("%s  (%s%s%s)\n", esc(d->name), esc(d->transport), d->model ? ", " : "", esc(d->model ?: ""));
                printf("  syspath:     %s\n", esc(d->syspath));
                printf("  serial:      %s   firmware: %s   wwn: %s\n", esc(d->serial ?: "-"), esc(d->firmware ?: "-"),
                       esc(d->wwn ?: "-"));
                printf("  rotational:  %s   size: %" PRIu64 " bytes   NUMA node: %d\n", d->rotational ? "yes" : "no",
                       d->size_bytes, d->numa_node);
                if (d->has_mq)
                        printf("  queues:      %zu hardware queue%s, tag depth %u\n", d->n_queues,
                               d->n_queues == 1 ? "" : "s", d->nr_tags);
                else
                        printf("  queues:      bio-based (no blk-mq queue)%s\n",
                               d->multipath_head ? "; NVMe multipath head: tune its nvmeXcYnZ paths" : "");
                for (size_t q = 0; q < d->n_queues; q++)
                        printf("    mq/%u: CPUs %s\n", d->queues[q].index, esc(d->queues[q].cpu_list ?: "(none)"));
                if (d->multipath_head_name)
                        printf("  multipath:   hidden path of %s\n", esc(d->multipath_head_name));
                if (d->nqn)
                        printf("  NQN:         %s\n", esc(d->nqn));
                if (d->nvme)
                        explain_nvme(d);
                printf("\nRules, in the order they are tried:\n");
        }

        if (!streq(dp->rule, "IOTUNED_PROFILE"))
                for (size_t i = 0; i < cfg->n_rules; i++) {
                        _cleanup_free_ char *why = NULL;
                        const Rule *rule = &cfg->rules[i];
                        bool m = rule_matches(rule, d, &why);
                        if (j) {
                                json_object *e = json_object_new_object();
                                json_object_object_add(e, "rule", json_object_new_string(rule->name));
                                json_object_object_add(e, "matched", json_object_new_boolean(m));
                                json_object_object_add(e, "why", why ? json_object_new_string(why) : NULL);
                                json_object_object_add(e, "origin", output_mark_json(&rule->mark));
                                json_object_array_add(rules, e);
                        } else
                                printf("  %-5s %s (%s:%u): %s\n", m ? "MATCH" : "no", esc(rule->name), esc(rule->mark.file),
                                       rule->mark.line, esc(why ?: ""));
                        if (m)
                                break;
                }

        if (j) {
                json_object_object_add(j, "rules", rules);
                output_json_print(j);
                json_object_put(j);
                return dp->error ? EXIT_FAILED : EXIT_OK;
        }

        if (streq(dp->rule, "IOTUNED_PROFILE"))
                printf("  (skipped: the udev property IOTUNED_PROFILE pins the profile)\n");
        if (dp->excluded) {
                printf("\nResult: excluded by rule %s; iotuned leaves %s alone.\n", esc(dp->rule), esc(d->name));
                return EXIT_OK;
        }
        if (dp->error) {
                printf("\nResult: %s\n", esc(dp->error));
                return EXIT_FAILED;
        }
        printf("\nResult: profile %s (rule %s: %s)\n", esc(dp->profile), esc(dp->rule), esc(dp->reason ?: ""));
        printf("IRQ placement: %s%s%s%s\n\n", irq_placement_to_string(dp->irq_placement),
               dp->keep_irqbalance_away ? ", irqbalance kept away from pinned vectors" : "",
               dp->irq_note ? "; " : "", esc(dp->irq_note ?: ""));
        /* Column widths follow the content, as in the plan table. */
        for (size_t k = 0; k < dp->n_settings; k++) {
                const Setting *s = &dp->settings[k];
                char lb[128];
                wk = MAX(wk, (int) strlen(output_setting_label(s, lb, sizeof(lb))));
                wx = MAX(wx, (int) strlen(esc(s->effective ?: s->desired)));
                wc = MAX(wc, (int) strlen(esc(s->observed ?: "-")));
                ws = MAX(ws, (int) strlen(s->state == STATE_CHANGED ? "would-change" : setting_state_to_string(s->state)));
        }
        output_row("  %-*s  %-*s  %-*s  %-*s  %s", wk, "KNOB", wx, "DESIRED", wc, "CURRENT", ws, "STATE", "FROM");
        for (size_t k = 0; k < dp->n_settings; k++) {
                const Setting *s = &dp->settings[k];
                char lb[128], st[64];
                output_row("  %-*s  %-*s  %-*s  %s  %s:%u:%u%s%s", wk, output_setting_label(s, lb, sizeof(lb)), wx,
                           esc(s->effective ?: s->desired), wc, esc(s->observed ?: "-"),
                           output_state_cell(s->state == STATE_CHANGED ? "would-change" : setting_state_to_string(s->state),
                                             ws, st, sizeof(st)),
                           esc(s->origin.file ?: "-"), s->origin.line, s->origin.column, s->note ? "  # " : "",
                           esc(s->note ?: ""));
        }
        return EXIT_OK;
}

static void print_profile_json(json_object *arr, const Profile *p, bool with_knobs) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(o, "description", p->description ? json_object_new_string(p->description) : NULL);
        json_object_object_add(o, "extends", p->extends ? json_object_new_string(p->extends) : NULL);
        json_object_object_add(o, "path", json_object_new_string(p->path));
        if (with_knobs) {
                /* One object per profile section, each knob under the section it is written in. */
                json_object *queue = json_object_new_object(), *nvme = json_object_new_object();
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        json_object *e;
                        if (!p->resolved[k].value)
                                continue;
                        e = json_object_new_object();
                        json_object_object_add(e, "value", json_object_new_string(p->resolved[k].value));
                        json_object_object_add(e, "origin", output_mark_json(&p->resolved[k].origin));
                        json_object_object_add(streq(knob_table[k].section, "nvme") ? nvme : queue,
                                               knob_table[k].name, e);
                }
                if (p->nvme_apply_resolved.value) {
                        json_object *e = json_object_new_object();
                        json_object_object_add(e, "value", json_object_new_string(p->nvme_apply_resolved.value));
                        json_object_object_add(e, "origin", output_mark_json(&p->nvme_apply_resolved.origin));
                        json_object_object_add(nvme, "apply", e);
                }
                json_object_object_add(o, "queue", queue);
                json_object_object_add(o, "nvme", nvme);
                {
                        json_object *irq = json_object_new_object();
                        const IrqPolicy *ip = &p->irq_resolved;
                        json_object_object_add(irq, "placement",
                                               ip->placement == IRQ_PLACEMENT_UNSET
                                                       ? NULL
                                                       : json_object_new_string(irq_placement_to_string(ip->placement)));
                        json_object_object_add(irq, "cpus", ip->cpus ? json_object_new_string(ip->cpus) : NULL);
                        json_object_object_add(irq, "keep_irqbalance_away",
                                               ip->keep_irqbalance_away < 0 ? NULL
                                                                            : json_object_new_boolean(ip->keep_irqbalance_away));
                        json_object_object_add(irq, "origin", output_mark_json(&ip->origin));
                        json_object_object_add(o, "irq", irq);
                }
        }
        json_object_array_add(arr, o);
}

int cli_profiles(Cli *c, const char *action, const char *name) {
        _cleanup_(config_freep) Config *cfg = NULL;
        int ex = load_config(c, &cfg);
        const Profile *p;

        if (ex != EXIT_OK)
                return ex;

        if (!action || streq(action, "list")) {
                if (c->json) {
                        json_object *j = output_json_new("profiles"), *arr = json_object_new_array();
                        for (size_t i = 0; i < cfg->n_profiles; i++)
                                print_profile_json(arr, cfg->profiles[i], false);
                        json_object_object_add(j, "profiles", arr);
                        output_json_print(j);
                        json_object_put(j);
                        return EXIT_OK;
                }
                output_row("%-16s %-12s %-44s %s", "PROFILE", "EXTENDS", "FILE", "DESCRIPTION");
                for (size_t i = 0; i < cfg->n_profiles; i++) {
                        p = cfg->profiles[i];
                        output_row("%-16s %-12s %-44s %s", esc(p->name), esc(p->extends ?: "-"), esc(p->path),
                               esc(p->description ?: ""));
                }
                return EXIT_OK;
        }

        /* show NAME */
        p = config_find_profile(cfg, name);
        if (!p) {
                log_error("No profile named '%s' (iotunectl profiles list).", esc(name));
                return EXIT_NO_DEVICE;
        }
        if (c->json) {
                json_object *j = output_json_new("profiles-show"), *arr = json_object_new_array();
                print_profile_json(arr, p, true);
                json_object_object_add(j, "profile", json_object_get(json_object_array_get_idx(arr, 0)));
                json_object_put(arr);
                output_json_print(j);
                json_object_put(j);
                return EXIT_OK;
        }
        printf("# %s: %s\n# file: %s\n", esc(p->name), esc(p->description ?: ""), esc(p->path));
        if (p->extends)
                printf("# extends: %s\n", esc(p->extends));
        for (const char *const *sec = (const char *const[]) { "queue", "nvme", NULL }; *sec; sec++) {
                bool header = false;
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        if (!p->resolved[k].value || !streq(knob_table[k].section, *sec))
                                continue;
                        if (!header)
                                printf("%s:\n", *sec);
                        header = true;
                        printf("  %-15s %-10s # %s:%u:%u\n", knob_table[k].name, esc(p->resolved[k].value),
                               esc(p->resolved[k].origin.file), p->resolved[k].origin.line, p->resolved[k].origin.column);
                }
                if (streq(*sec, "nvme") && p->nvme_apply_resolved.value)
                        printf("%s  %-15s %-10s # %s:%u:%u\n", header ? "" : "nvme:\n", "apply",
                               esc(p->nvme_apply_resolved.value), esc(p->nvme_apply_resolved.origin.file),
                               p->nvme_apply_resolved.origin.line, p->nvme_apply_resolved.origin.column);
        }
        if (p->irq_resolved.placement != IRQ_PLACEMENT_UNSET || p->irq_resolved.keep_irqbalance_away >= 0) {
                printf("irq:\n");
                if (p->irq_resolved.placement != IRQ_PLACEMENT_UNSET)
                        printf("  %-15s %-10s # %s:%u:%u\n", "placement",
                               irq_placement_to_string(p->irq_resolved.placement), esc(p->irq_resolved.origin.file ?: "-"),
                               p->irq_resolved.origin.line, p->irq_resolved.origin.column);
                if (p->irq_resolved.cpus)
                        printf("  %-15s \"%s\"\n", "cpus", esc(p->irq_resolved.cpus));
                if (p->irq_resolved.keep_irqbalance_away >= 0)
                        printf("  %-15s %s\n", "keep_irqbalance_away",
                               p->irq_resolved.keep_irqbalance_away ? "true" : "false");
        }
        return EXIT_OK;
}

int cli_check_config(Cli *c) {
        _cleanup_(config_freep) Config *cfg = NULL;
        Diag diag = {};
        int ex = c->json ? load_config_diag(c, &cfg, &diag) : load_config(c, &cfg);

        if (c->json) {
                json_object *j = output_json_new("check-config"), *files = json_object_new_array(),
                            *masked = json_object_new_array(), *errors = json_object_new_array();
                json_object_object_add(j, "valid", json_object_new_boolean(ex == EXIT_OK));
                for (size_t i = 0; i < diag.n; i++) {
                        json_object *e = output_mark_json(&diag.items[i].mark);
                        if (!e) {
                                e = json_object_new_object();
                                json_object_object_add(e, "file", NULL);
                        }
                        json_object_object_add(e, "message", json_object_new_string(diag.items[i].message));
                        json_object_array_add(errors, e);
                }
                diag_done(&diag);
                json_object_object_add(j, "errors", errors);
                if (cfg) {
                        for (char **f = cfg->files; f && *f; f++)
                                json_object_array_add(files, json_object_new_string(*f));
                        for (char **f = cfg->masked; f && *f; f++)
                                json_object_array_add(masked, json_object_new_string(*f));
                        json_object_object_add(j, "default_profile", json_object_new_string(cfg->default_profile));
                        json_object_object_add(j, "rules", json_object_new_int((int) cfg->n_rules));
                        json_object_object_add(j, "profiles", json_object_new_int((int) cfg->n_profiles));
                }
                json_object_object_add(j, "files", files);
                json_object_object_add(j, "masked", masked);
                output_json_print(j);
                json_object_put(j);
                return ex;
        }
        if (ex != EXIT_OK || c->quiet)
                return ex;
        printf("Configuration is valid: %zu rule%s, %zu profile%s, default profile %s.\n", cfg->n_rules,
               cfg->n_rules == 1 ? "" : "s", cfg->n_profiles, cfg->n_profiles == 1 ? "" : "s", esc(cfg->default_profile));
        printf("Files, in the order they were read:\n");
        for (char **f = cfg->files; f && *f; f++)
                printf("  %s\n", esc(*f));
        for (char **f = cfg->masked; f && *f; f++)
                printf("  %s (masked)\n", esc(*f));
        return EXIT_OK;
}

/* The daemon's view, from the state file it rewrites atomically on every change. */

/* One line per NVMe controller behind the tuned disks: identity, queue maps, APST. */
static void status_nvme_controllers(const Status *st) {
        _cleanup_strv_free_ char **seen = NULL;
        for (size_t i = 0; i < st->n_devices; i++) {
                const StatusNvme *n = st->devices[i].nvme;
                if (!n || !n->controller || strv_contains(seen, n->controller) || strv_extend(&seen, n->controller) < 0)
                        continue;
                if (strv_length(seen) == 1)
                        printf("\nNVMe controllers:\n");
                printf("  %-8s %s, %s, firmware %s", esc(n->controller), esc(n->address ?: n->transport ?: "?"),
                       esc(n->model ?: "?"), esc(n->firmware ?: "?"));
                if (n->has_maps)
                        printf("; queues %u default, %u read, %u poll", n->maps_default, n->maps_read, n->maps_poll);
                if (n->apst_supported >= 0)
                        printf("; APST %s", n->apst_supported ? "supported" : "not supported");
                printf("\n");
        }
}

int cli_status(Cli *c) {
        const char *root = c->root && !streq(c->root, "/") ? c->root : "";
        _cleanup_free_ char *path = NULL, *text = NULL, *error = NULL;
        Status st = {};
        char **summaries = NULL;
        int r, ex = EXIT_OK, wd = 6, wp = 7, wr = 4, ws = 8;

        if (asprintf_safe(&path, "%s%s/status.json", root, IOTUNED_RUN_DIR) < 0)
                return log_oom(), EXIT_FAILED;
        /* Untrusted: not a link, a regular file (a FIFO would block), bounded, and
         * under --root found inside the root. */
        r = root_read_regular_file(c->root, IOTUNED_RUN_DIR "/status.json", STATUS_FILE_MAX, &text);
        if (r == -ENOENT) {
                log_error("iotuned is not running (no %s). 'iotunectl plan' shows what it would do.", esc(path));
                return EXIT_NOT_RUNNING;
        }
        if (r < 0)
                return log_error("Cannot read %s: %s", esc(path), file_strerror(r)), EXIT_FAILED;
        r = status_parse(text, &st, &error);
        if (r == -ENOMEM)
                return log_oom(), EXIT_FAILED;
        if (r < 0)
                return log_error("%s: %s", esc(path), esc(error)), EXIT_FAILED;
        if (st.pid <= 0 || (kill(st.pid, 0) < 0 && errno == ESRCH)) {
                log_error("iotuned is not running (%s is left over from pid %d).", esc(path), st.pid);
                status_done(&st);
                return EXIT_NOT_RUNNING;
        }

        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                if (d->error)
                        ex = EXIT_FAILED;
                for (size_t k = 0; k < d->n_settings; k++)
                        if (streq(d->settings[k].state, "failed"))
                                ex = EXIT_FAILED;
                        else if (streq(d->settings[k].state, "drifted") && ex == EXIT_OK)
                                ex = EXIT_DRIFT;
        }

        if (c->json) {
                output_json_print(st.root);
                status_done(&st);
                return ex;
        }

        printf("iotuned is running (pid %d): %zu device%s", st.pid, st.n_devices, st.n_devices == 1 ? "" : "s");
        if (st.has_drifts_corrected)
                printf(", %u drift%s corrected", st.drifts_corrected, st.drifts_corrected == 1 ? "" : "s");
        if (st.conflicts)
                printf(", %u conflict%s", st.conflicts, st.conflicts == 1 ? "" : "s");
        if (st.irqbalance_state)
                printf("\nirqbalance: %s", esc(st.irqbalance_state));
        printf("\n\n");
        /* Column widths follow the content, as in the plan table. */
        summaries = calloc(st.n_devices + 1, sizeof(char *));
        if (!summaries) {
                status_done(&st);
                return log_oom(), EXIT_FAILED;
        }
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                unsigned counts[_STATE_MAX] = {};
                char summary[256] = "";
                size_t off = 0;

                for (size_t k = 0; k < d->n_settings; k++) {
                        const StatusSetting *e = &d->settings[k];
                        for (size_t s = 0; s < _STATE_MAX; s++)
                                if (streq(e->state, setting_state_to_string(s)))
                                        /* "changed" (written by iotuned and holding) stays apart
                                         * from "ok" (already as desired), as in --json */
                                        counts[s]++;
                }
                for (size_t s = 0; s < _STATE_MAX; s++)
                        if (counts[s] && off < sizeof(summary))
                                off += snprintf(summary + off, sizeof(summary) - off, "%s%u %s", off ? ", " : "",
                                                counts[s], setting_state_to_string(s));
                if (d->excluded)
                        snprintf(summary, sizeof(summary), "excluded");
                if (d->error)
                        str_escape_buf(d->error, summary, sizeof(summary));
                summaries[i] = strdup(summary);
                if (!summaries[i]) {
                        strv_free(summaries);
                        status_done(&st);
                        return log_oom(), EXIT_FAILED;
                }
                wd = MAX(wd, (int) strlen(esc(d->device)));
                wp = MAX(wp, (int) strlen(esc(d->profile ?: "-")));
                wr = MAX(wr, (int) strlen(esc(d->rule ?: "-")));
                ws = MAX(ws, (int) strlen(summary));
        }
        output_row("%-*s  %-*s  %-*s  %-*s  %s", wd, "DEVICE", wp, "PROFILE", wr, "RULE", ws, "SETTINGS", "DRIFTS");
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                uint64_t drifts = 0;

                for (size_t k = 0; k < d->n_settings; k++)
                        drifts += d->settings[k].drifts;
                output_row("%-*s  %-*s  %-*s  %-*s  %" PRIu64, wd, esc(d->device), wp, esc(d->profile ?: "-"), wr,
                           esc(d->rule ?: "-"), ws, summaries[i], drifts);
        }
        strv_free(summaries);
        status_nvme_controllers(&st);
        /* Anything not as desired, spelled out. */
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                for (size_t k = 0; k < d->n_settings; k++) {
                        const StatusSetting *e = &d->settings[k];
                        if (streq(e->state, "ok") || streq(e->state, "changed") || streq(e->state, "unsupported") ||
                            streq(e->state, "managed"))
                                continue;
                        printf("  %s %s: %s (desired %s, observed %s)%s%s\n", esc(d->device), esc(e->object ?: e->knob),
                               esc(e->state), esc(e->effective ?: "-"), esc(e->observed ?: "-"), e->note ? ": " : "",
                               esc(e->note ?: ""));
                }
        }
        status_done(&st);
        return ex;
}
