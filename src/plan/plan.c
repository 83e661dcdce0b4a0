/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "cpuset.h"
#include "irq-place.h"
#include "plan.h"
#include "util.h"

static const char *const state_names[_STATE_MAX] = {
        [STATE_OK] = "ok",
        [STATE_CHANGED] = "changed",
        [STATE_DRIFTED] = "drifted",
        [STATE_FAILED] = "failed",
        [STATE_MANAGED] = "managed",
        [STATE_UNSUPPORTED] = "unsupported",
        [STATE_PENDING_REBOOT] = "pending-reboot",
};

const char *setting_state_to_string(SettingState s) {
        return s >= 0 && s < _STATE_MAX ? state_names[s] : "invalid";
}

static void setting_done(Setting *s) {
        assert(s);

        free(s->object);
        free(s->path);
        free(s->detail);
        free(s->desired);
        mark_done(&s->origin);
        free(s->effective);
        free(s->observed);
        free(s->previous);
        free(s->note);
        free(s->writer);
        kept_attr_close(&s->kept);
}

DevicePlan *device_plan_free(DevicePlan *p) {
        if (!p)
                return NULL;
        device_free(p->device);
        free(p->profile);
        free(p->rule);
        free(p->reason);
        free(p->error);
        free(p->irq_note);
        free(p->nvme_note);
        finding_list_done(&p->findings);
        free(p->rebind_key);
        for (size_t i = 0; i < p->n_settings; i++)
                setting_done(&p->settings[i]);
        free(p->settings);
        free(p);
        return NULL;
}

void plan_done(Plan *p) {
        assert(p);

        for (size_t i = 0; i < p->n; i++)
                device_plan_free(p->devices[i]);
        free(p->devices);
        p->devices = NULL;
        p->n = 0;
}

/* ---- matching ---------------------------------------------------------------- */

/* Append "text" to a ", "-separated explanation. */
static void why_append(char **why, const char *text) {
        char *j = NULL;

        assert(why);
        assert(text);

        if (asprintf_safe(&j, "%s%s%s", *why ?: "", *why ? ", " : "", text) < 0)
                return;
        free(*why);
        *why = j;
}

/* One glob condition; on success its explanation joins *why, on failure it becomes *fail. */
static bool check_glob(const char *label, const char *pattern, const char *value, char **why, char **fail) {
        _cleanup_free_ char *text = NULL;
        bool ok;

        assert(label);
        assert(why);
        assert(fail);

        if (!pattern)
                return true;
        ok = glob_match(pattern, value);
        (void) asprintf_safe(&text, "%s '%s' %s '%s'", label, value ?: "(none)", ok ? "matches" : "does not match",
                             pattern);
        if (ok)
                why_append(why, text ?: label);
        else
                *fail = TAKE_PTR(text);
        return ok;
}

bool rule_matches(const Rule *rule, const Device *d, char **ret_why) {
        const Match *m = &rule->match;
        _cleanup_free_ char *why = NULL;
        char *fail = NULL, buf[128];
        const char *kernel_label = "kernel name", *kernel_value = d->name;

        assert(rule);
        assert(d);

        /* A hidden multipath path (nvme1c1n1) also answers to its head's name, so a
         * rule for "nvme1n1" tunes the queues that actually carry its I/O. */
        if (m->kernel && d->multipath_head_name && !glob_match(m->kernel, d->name)) {
                kernel_label = "multipath head name";
                kernel_value = d->multipath_head_name;
        }
        if (!check_glob(kernel_label, m->kernel, kernel_value, &why, &fail) ||
            !check_glob("transport", m->transport, d->transport, &why, &fail) ||
            !check_glob("model", m->model, d->model, &why, &fail) ||
            !check_glob("serial", m->serial, d->serial, &why, &fail) ||
            !check_glob("firmware", m->firmware, d->firmware, &why, &fail) ||
            !check_glob("wwn", m->wwn, d->wwn, &why, &fail) ||
            !check_glob("subsystem NQN", m->nqn, d->nqn, &why, &fail))
                goto no;

        if (m->rotational != TRI_UNSET) {
                snprintf(buf, sizeof(buf), "rotational is %s", d->rotational ? "true" : "false");
                if ((m->rotational == TRI_TRUE) != d->rotational) {
                        fail = strdup(buf);
                        goto no;
                }
                why_append(&why, buf);
        }
        if (m->has_numa_node) {
                snprintf(buf, sizeof(buf), "NUMA node is %d", d->numa_node);
                if (m->numa_node != d->numa_node) {
                        fail = strdup(buf);
                        goto no;
                }
                why_append(&why, buf);
        }
        if (m->has_size) {
                bool in = d->size_bytes >= m->size_min && d->size_bytes <= m->size_max;
                snprintf(buf, sizeof(buf), "size %" PRIu64 " bytes is %s the range", d->size_bytes,
                         in ? "inside" : "outside");
                if (!in) {
                        fail = strdup(buf);
                        goto no;
                }
                why_append(&why, buf);
        }
        for (size_t i = 0; i < m->n_udev; i++) {
                const char *v = device_property(d, m->udev[i].key);
                snprintf(buf, sizeof(buf), "udev %s", m->udev[i].key);
                if (!check_glob(buf, m->udev[i].glob, v, &why, &fail))
                        goto no;
        }
        if (ret_why)
                *ret_why = why ? TAKE_PTR(why) : strdup("the rule matches every device");
        return true;
no:
        if (ret_why)
                *ret_why = fail;
        else
                free(fail);
        return false;
}

/* ---- planning ---------------------------------------------------------------- */

static int add_setting(DevicePlan *p, const Knob *k, const char *desired, const Mark *origin) {
        Setting *s, *n;

        assert(p);
        assert(k);
        assert(desired);

        n = realloc(p->settings, (p->n_settings + 1) * sizeof(Setting));
        if (!n)
                return -ENOMEM;
        p->settings = n;
        s = &p->settings[p->n_settings];
        *s = (Setting) { .knob = k, .state = STATE_OK, .irq = -1 };
        s->desired = strdup(desired);
        if (!s->desired)
                return -ENOMEM;
        if (origin && mark_copy(&s->origin, origin) < 0) {
                free(s->desired);
                return -ENOMEM;
        }
        p->n_settings++;
        if (k->scope == KNOB_SCOPE_MODULE)
                p->has_module_rows = true;
        if (k->needs_mq && !p->device->has_mq) {
                s->state = STATE_UNSUPPORTED;
                s->note = strdup(p->device->multipath_head
                                         ? "bio-based multipath head: its queues are the hidden nvmeXcYnZ paths"
                                         : "bio-based disk: no blk-mq queue to tune");
                if (!s->note)
                        return -ENOMEM;
        }
        return 0;
}

/* A controller row: planned only where the disk has an NVMe controller of its own. */
static int add_ctrl_setting(DevicePlan *p, const Knob *k, const char *desired, const Mark *origin) {
        Setting *s;
        int r;

        assert(p);
        assert(k);
        assert(desired);

        if (!p->device->nvme) {
                if (!p->nvme_note && str_startswith(p->device->name, "nvme") && p->device->multipath_head)
                        return (p->nvme_note = strdup("multipath head: the controller settings are planned on "
                                                      "its hidden nvmeXcYnZ paths"))
                                       ? 0
                                       : -ENOMEM;
                return 0; /* not NVMe: the profile's nvme: section does not apply */
        }
        r = add_setting(p, k, desired, origin);
        if (r < 0)
                return r;
        s = &p->settings[p->n_settings - 1];
        /* "nvme0 apst": the label in tables and journal messages, and the identity
         * shared by every namespace of the controller. */
        return asprintf_safe(&s->object, "%s %s", p->device->nvme->name, k->name);
}

/* The ASPM row: on the link above the disk's PCI function, which every disk of that
 * function shares (NVMe namespaces, the disks behind one AHCI controller). A disk
 * with no PCI function gets the row too, and reconcile says why it is unsupported. */
static int add_link_setting(DevicePlan *p, const Knob *k, const char *desired, const Mark *origin) {
        _cleanup_free_ char *pci = NULL;
        Setting *s;
        int r;

        assert(p);
        assert(k);
        assert(desired);

        r = pci_function_of(p->device->syspath, &pci);
        if (r < 0 && r != -ENODEV)
                return r;
        r = add_setting(p, k, desired, origin);
        if (r < 0)
                return r;
        if (!pci)
                return 0;
        s = &p->settings[p->n_settings - 1];
        s->path = path_join(pci, k->attr);
        if (!s->path)
                return -ENOMEM;
        /* "0000:01:00.0 aspm": the label, and the identity the function's disks share. */
        return asprintf_safe(&s->object, "%s %s", strrchr(pci, '/') + 1, k->name);
}

/* One row of the knob table, as its scope is planned. */
static int add_row(DevicePlan *p, const Knob *k, const char *desired, const Mark *origin) {
        assert(p);
        assert(k);

        switch (k->scope) {
        case KNOB_SCOPE_CTRL:
        case KNOB_SCOPE_MODULE:
                return add_ctrl_setting(p, k, desired, origin);
        case KNOB_SCOPE_LINK:
                return add_link_setting(p, k, desired, origin);
        default:
                return add_setting(p, k, desired, origin);
        }
}

static int device_plan_new(Device *d, DevicePlan **ret) {
        DevicePlan *p = calloc(1, sizeof(DevicePlan));

        assert(d);
        assert(ret);

        if (!p) {
                device_free(d);
                return -ENOMEM;
        }
        p->device = d;
        *ret = p;
        return 0;
}

char *irq_attr_path(const char *proc_root, unsigned irq, const char *attr) {
        char *p = NULL;

        assert(attr);

        (void) asprintf_safe(&p, "%s/proc/irq/%u/%s", proc_root ?: "", irq, attr);
        return p;
}

static int add_irq_setting(DevicePlan *p, unsigned irq, const char *name, bool managed_predicted,
                           const char *desired, const Mark *origin, const char *proc_root) {
        Setting *s;
        int r = add_setting(p, &knob_table[KNOB_IRQ_AFFINITY], desired, origin);

        assert(p);
        assert(desired);

        if (r < 0)
                return r;
        s = &p->settings[p->n_settings - 1];
        s->irq = (int) irq;
        s->managed_predicted = managed_predicted;
        s->path = irq_attr_path(proc_root, irq, "smp_affinity_list");
        if (!s->path || (name ? asprintf_safe(&s->object, "irq %u (%s)", irq, name)
                              : asprintf_safe(&s->object, "irq %u", irq)) < 0)
                return -ENOMEM;
        return 0;
}

/* Vectors of the disk's PCI function, placed per the policy. */
static int plan_irqs(DevicePlan *p, const IrqPolicy *pol, const PlanContext *ctx) {
        IrqVectors v = {};
        CpuSet *sets = NULL;
        int r;

        assert(p);
        assert(pol);

        p->irq_placement = pol->placement;
        p->keep_irqbalance_away = pol->keep_irqbalance_away > 0;
        if (!ctx || pol->placement == IRQ_PLACEMENT_UNSET || pol->placement == IRQ_PLACEMENT_LEAVE)
                return 0;
        if (streq(p->device->transport, "usb")) {
                /* The PCI function above a USB disk is the host controller, which
                 * every device on that bus shares: not this disk's to place. */
                p->irq_placement = IRQ_PLACEMENT_LEAVE;
                return asprintf_safe(&p->irq_note, "USB disk: its PCI function is the shared USB host controller");
        }
        r = device_irq_vectors(p->device, ctx->irqs, &v);
        if (r < 0)
                return r;
        if (v.n == 0) {
                r = asprintf_safe(&p->irq_note, "no IRQs known for %s (%s)", p->device->name,
                                  v.pci_dir ? "its PCI function lists no msi_irqs or irq" : "not a PCI device");
                irq_vectors_done(&v);
                return r;
        }
        sets = calloc(v.n, sizeof(CpuSet));
        if (!sets) {
                irq_vectors_done(&v);
                return -ENOMEM;
        }
        r = irq_place(ctx->topology, p->device->numa_node, pol, v.items, v.n, p->device->queues,
                      p->device->n_queues, sets);
        if (r == -EINVAL)
                r = asprintf_safe(&p->error, "irq placement cpus '%s' names no online CPU", pol->cpus ?: "");
        for (size_t i = 0; r >= 0 && !p->error && i < v.n; i++) {
                _cleanup_free_ char *cpus = NULL;
                r = cpuset_format(&sets[i], &cpus);
                if (r >= 0)
                        r = add_irq_setting(p, v.items[i].irq, v.items[i].name,
                                            v.items[i].managed == IRQ_MANAGED_PREDICTED, cpus, &pol->origin,
                                            ctx->proc_root);
        }
        for (size_t i = 0; i < v.n; i++)
                cpuset_done(&sets[i]);
        free(sets);
        irq_vectors_done(&v);
        return r < 0 ? r : 0;
}

static bool is_ctrl_row(const Setting *s) {
        assert(s);

        return s->knob->scope == KNOB_SCOPE_CTRL || s->knob->scope == KNOB_SCOPE_MODULE;
}

/* A row on something disks share, known by its object: a controller, a PCIe link. */
static bool is_shared_row(const Setting *s) {
        assert(s);

        return is_ctrl_row(s) || s->knob->scope == KNOB_SCOPE_LINK;
}

static bool same_object(const Setting *a, const Setting *b) {
        assert(a);
        assert(b);

        if (a->irq >= 0)
                return a->irq == b->irq;
        return is_shared_row(a) && a->knob == b->knob && a->object && b->object && streq(a->object, b->object);
}

void plan_drop_claimed_irqs(DevicePlan *p, DevicePlan *const *others, size_t n_others) {
        size_t w = 0;
        const char *irq_owner = NULL, *ctrl_owner = NULL;

        for (size_t i = 0; i < p->n_settings; i++) {
                Setting *s = &p->settings[i];
                bool claimed = false;
                for (size_t o = 0; (s->irq >= 0 || is_shared_row(s)) && o < n_others && !claimed; o++) {
                        if (others[o] == p || streq(others[o]->device->name, p->device->name))
                                continue; /* itself, or its own previous plan */
                        for (size_t k = 0; k < others[o]->n_settings && !claimed; k++)
                                if (same_object(s, &others[o]->settings[k])) {
                                        claimed = true;
                                        if (s->irq >= 0)
                                                irq_owner = others[o]->device->name;
                                        else if (is_ctrl_row(s))
                                                ctrl_owner = others[o]->device->name;
                                }
                }
                if (claimed) {
                        setting_done(s);
                        continue;
                }
                p->settings[w++] = *s;
        }
        p->n_settings = w;
        if (irq_owner && !p->irq_note)
                (void) asprintf_safe(&p->irq_note, "its interrupt vectors are shared with %s and planned there",
                                     irq_owner);
        if (ctrl_owner && !p->nvme_note)
                (void) asprintf_safe(&p->nvme_note, "its controller %s is shared with %s and planned there",
                                     p->device->nvme ? p->device->nvme->name : "?", ctrl_owner);
}

void plan_module_targets(DevicePlan *const *plans, size_t n, int targets[_KNOB_MAX]) {
        for (size_t k = 0; k < _KNOB_MAX; k++)
                targets[k] = -1;
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; plans[i]->has_module_rows && j < plans[i]->n_settings; j++) {
                        const Setting *s = &plans[i]->settings[j];
                        unsigned v;
                        if (s->knob->scope != KNOB_SCOPE_MODULE || safe_atou(s->desired, &v) < 0)
                                continue;
                        if ((int) v > targets[s->knob->id])
                                targets[s->knob->id] = (int) v;
                }
}

int plan_device(const Config *c, Device *d, const PlanContext *ctx, DevicePlan **ret) {
        assert(c);
        assert(d);
        assert(ret);

        _cleanup_(device_plan_freep) DevicePlan *p = NULL;
        const Rule *rule = NULL;
        const Profile *prof;
        const char *pinned;
        int r;

        r = device_plan_new(d, &p);
        if (r < 0)
                return r;

        pinned = device_property(d, "IOTUNED_PROFILE");
        if (!isempty(pinned)) {
                p->rule = strdup("IOTUNED_PROFILE");
                r = asprintf_safe(&p->reason, "udev property IOTUNED_PROFILE=%s", pinned);
                if (!p->rule || r < 0)
                        return -ENOMEM;
                p->profile = strdup(pinned);
                if (!p->profile)
                        return -ENOMEM;
        } else {
                for (size_t i = 0; i < c->n_rules; i++)
                        if (rule_matches(&c->rules[i], d, &p->reason)) {
                                rule = &c->rules[i];
                                break;
                        } else {
                                free(p->reason);
                                p->reason = NULL;
                        }
                if (rule) {
                        p->rule = strdup(rule->name);
                        if (!p->rule)
                                return -ENOMEM;
                        if (rule->exclude) {
                                p->excluded = true;
                                *ret = TAKE_PTR(p);
                                return 0;
                        }
                        p->profile = strdup(rule->profile);
                } else {
                        p->rule = strdup("default_profile");
                        p->reason = strdup("no rule matched");
                        p->profile = strdup(c->default_profile);
                }
                if (!p->rule || !p->profile)
                        return -ENOMEM;
        }

        prof = config_find_profile(c, p->profile);
        if (!prof) {
                /* Only reachable through IOTUNED_PROFILE: config references are validated. */
                r = asprintf_safe(&p->error, "IOTUNED_PROFILE=%s names no known profile", p->profile);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(p);
                return 0;
        }

        for (size_t k = 0; k < _KNOB_MAX; k++) {
                const Value *v = rule && rule->set[k].value ? &rule->set[k] : &prof->resolved[k];
                if (!v->value)
                        continue;
                r = add_row(p, &knob_table[k], v->value, &v->origin);
                if (r < 0)
                        return r;
        }
        {
                const Value *a = rule && rule->set_nvme_apply.value ? &rule->set_nvme_apply : &prof->nvme_apply_resolved;
                p->nvme_rebind = a->value && streq(a->value, "rebind");
        }
        {
                /* A rule's `set: { irq: ... }` overrides the profile field by field. */
                IrqPolicy pol = prof->irq_resolved;
                if (rule && rule->set_irq.placement != IRQ_PLACEMENT_UNSET) {
                        pol.placement = rule->set_irq.placement;
                        pol.cpus = rule->set_irq.cpus;
                        pol.origin = rule->set_irq.origin;
                }
                if (rule && rule->set_irq.keep_irqbalance_away >= 0)
                        pol.keep_irqbalance_away = rule->set_irq.keep_irqbalance_away;
                r = plan_irqs(p, &pol, ctx);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int plan_device_from_values(Device *d, const char *label, char *const values[_KNOB_MAX], char *const *irq_values,
                            const char *proc_root, DevicePlan **ret) {
        assert(d);
        assert(label);
        assert(values);
        assert(ret);

        _cleanup_(device_plan_freep) DevicePlan *p = NULL;
        int r = device_plan_new(d, &p);
        if (r < 0)
                return r;
        p->profile = strdup(label);
        p->rule = strdup(label);
        if (!p->profile || !p->rule)
                return -ENOMEM;
        for (size_t k = 0; k < _KNOB_MAX; k++)
                if (values[k]) {
                        r = add_row(p, &knob_table[k], values[k], NULL);
                        if (r < 0)
                                return r;
                }
        for (char *const *iv = irq_values; iv && *iv; iv++) {
                const char *eq = strchr(*iv, '=');
                unsigned irq;
                _cleanup_free_ char *num = eq ? strndup(*iv, eq - *iv) : NULL;
                if (!num || safe_atou(num, &irq) < 0)
                        continue; /* a damaged record entry: nothing to restore */
                r = add_irq_setting(p, irq, NULL, false, eq + 1, NULL, proc_root);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int plan_build(const Config *c, DeviceList *l, const PlanContext *ctx, Plan *ret) {
        Plan p = {};
        int r;

        assert(c);
        assert(l);
        assert(ret);

        p.devices = calloc(l->n ?: 1, sizeof(DevicePlan *));
        if (!p.devices)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                r = plan_device(c, TAKE_PTR(l->items[i]), ctx, &p.devices[p.n]);
                if (r < 0) {
                        plan_done(&p);
                        device_list_done(l);
                        return r;
                }
                plan_drop_claimed_irqs(p.devices[p.n], p.devices, p.n);
                p.n++;
        }
        device_list_done(l);
        *ret = p;
        return 0;
}

void plan_count_states(const Plan *p, unsigned counts[_STATE_MAX]) {
        assert(p);

        memset(counts, 0, sizeof(unsigned) * _STATE_MAX);
        for (size_t i = 0; i < p->n; i++)
                for (size_t j = 0; j < p->devices[i]->n_settings; j++)
                        counts[p->devices[i]->settings[j].state]++;
}
