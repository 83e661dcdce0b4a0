/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <string.h>

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
        free(s->desired);
        mark_done(&s->origin);
        free(s->effective);
        free(s->observed);
        free(s->previous);
        free(s->note);
}

DevicePlan *device_plan_free(DevicePlan *p) {
        if (!p)
                return NULL;
        device_free(p->device);
        free(p->profile);
        free(p->rule);
        free(p->reason);
        free(p->error);
        for (size_t i = 0; i < p->n_settings; i++)
                setting_done(&p->settings[i]);
        free(p->settings);
        free(p);
        return NULL;
}

void plan_done(Plan *p) {
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
        if (asprintf_safe(&j, "%s%s%s", *why ?: "", *why ? ", " : "", text) < 0)
                return;
        free(*why);
        *why = j;
}

/* One glob condition; on success its explanation joins *why, on failure it becomes *fail. */
static bool check_glob(const char *label, const char *pattern, const char *value, char **why, char **fail) {
        _cleanup_free_ char *text = NULL;
        bool ok;

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
            !check_glob("wwn", m->wwn, d->wwn, &why, &fail))
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
        Setting *s = &p->settings[p->n_settings];
        *s = (Setting) { .knob = k, .state = STATE_OK };
        s->desired = strdup(desired);
        if (!s->desired)
                return -ENOMEM;
        if (origin && mark_copy(&s->origin, origin) < 0) {
                free(s->desired);
                return -ENOMEM;
        }
        p->n_settings++;
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

static int device_plan_new(Device *d, DevicePlan **ret) {
        DevicePlan *p = calloc(1, sizeof(DevicePlan));
        if (!p) {
                device_free(d);
                return -ENOMEM;
        }
        p->device = d;
        p->settings = calloc(_KNOB_MAX, sizeof(Setting));
        if (!p->settings) {
                device_plan_free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

int plan_device(const Config *c, Device *d, DevicePlan **ret) {
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
                r = add_setting(p, &knob_table[k], v->value, &v->origin);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int plan_device_from_values(Device *d, const char *label, char *const values[_KNOB_MAX], DevicePlan **ret) {
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
                        r = add_setting(p, &knob_table[k], values[k], NULL);
                        if (r < 0)
                                return r;
                }
        *ret = TAKE_PTR(p);
        return 0;
}

int plan_build(const Config *c, DeviceList *l, Plan *ret) {
        Plan p = {};
        int r;

        p.devices = calloc(l->n ?: 1, sizeof(DevicePlan *));
        if (!p.devices)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                r = plan_device(c, TAKE_PTR(l->items[i]), &p.devices[p.n]);
                if (r < 0) {
                        plan_done(&p);
                        device_list_done(l);
                        return r;
                }
                p.n++;
        }
        device_list_done(l);
        *ret = p;
        return 0;
}

void plan_count_states(const Plan *p, unsigned counts[_STATE_MAX]) {
        memset(counts, 0, sizeof(unsigned) * _STATE_MAX);
        for (size_t i = 0; i < p->n; i++)
                for (size_t j = 0; j < p->devices[i]->n_settings; j++)
                        counts[p->devices[i]->settings[j].state]++;
}
