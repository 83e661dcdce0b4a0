/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"
#include "nvme-feature.h"
#include "util.h"

json_object *output_json_new(const char *command) {
        json_object *j = json_object_new_object();
        if (!j)
                return NULL;
        json_object_object_add(j, "version", json_object_new_int(OUTPUT_SCHEMA_VERSION));
        json_object_object_add(j, "command", json_object_new_string(command));
        return j;
}

static json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

json_object *output_mark_json(const Mark *m) {
        json_object *o;
        if (!m || !m->file)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "file", json_object_new_string(m->file));
        json_object_object_add(o, "line", json_object_new_int((int) m->line));
        json_object_object_add(o, "column", json_object_new_int((int) m->column));
        return o;
}

/* The controller's identity and queues, for status and explain (--json). */
static json_object *output_nvme_json(const Device *d) {
        const NvmeCtrl *c = d->nvme;
        json_object *o = json_object_new_object(), *maps = NULL;
        NvmeQueueMap m;

        json_object_object_add(o, "controller", json_object_new_string(c->name));
        json_object_object_add(o, "transport", str_or_null(c->transport));
        json_object_object_add(o, "address", str_or_null(c->address));
        json_object_object_add(o, "state", str_or_null(c->state));
        json_object_object_add(o, "model", str_or_null(c->model));
        json_object_object_add(o, "serial", str_or_null(c->serial));
        json_object_object_add(o, "firmware", str_or_null(c->firmware));
        json_object_object_add(o, "subsysnqn", str_or_null(c->subsysnqn));
        json_object_object_add(o, "numa_node", json_object_new_int(c->numa_node));
        json_object_object_add(o, "queue_count", json_object_new_int((int) c->queue_count));
        json_object_object_add(o, "io_queue_depth", c->sqsize ? json_object_new_int((int) c->sqsize + 1) : NULL);
        json_object_object_add(o, "identified", json_object_new_boolean(c->identified));
        json_object_object_add(o, "identify_error", str_or_null(c->identify_error));
        json_object_object_add(o, "apst_supported", c->identified ? json_object_new_boolean(c->apsta) : NULL);
        json_object_object_add(o, "apst_by_kernel", json_object_new_boolean(c->has_pm_qos));
        json_object_object_add(o, "power_states", c->identified ? json_object_new_int((int) c->npss + 1) : NULL);
        json_object_object_add(o, "granted_io_sq", c->granted_sq ? json_object_new_int((int) c->granted_sq) : NULL);
        json_object_object_add(o, "granted_io_cq", c->granted_cq ? json_object_new_int((int) c->granted_cq) : NULL);
        if (nvme_queue_map_from_queues(d->queues, d->n_queues, d->io_poll, &m) == 0 && m.known) {
                maps = json_object_new_object();
                json_object_object_add(maps, "default", json_object_new_int((int) m.n_default));
                json_object_object_add(maps, "read", json_object_new_int((int) m.n_read));
                json_object_object_add(maps, "poll", json_object_new_int((int) m.n_poll));
        }
        json_object_object_add(o, "queue_maps", maps);
        return o;
}

static json_object *device_facts_json(const Device *d) {
        json_object *o = json_object_new_object(), *q = json_object_new_array();
        json_object_object_add(o, "syspath", json_object_new_string(d->syspath));
        json_object_object_add(o, "devnode", str_or_null(d->devnode));
        json_object_object_add(o, "transport", json_object_new_string(d->transport));
        json_object_object_add(o, "model", str_or_null(d->model));
        json_object_object_add(o, "serial", str_or_null(d->serial));
        json_object_object_add(o, "firmware", str_or_null(d->firmware));
        json_object_object_add(o, "wwn", str_or_null(d->wwn));
        json_object_object_add(o, "rotational", json_object_new_boolean(d->rotational));
        json_object_object_add(o, "size_bytes", json_object_new_uint64(d->size_bytes));
        json_object_object_add(o, "numa_node", json_object_new_int(d->numa_node));
        json_object_object_add(o, "blk_mq", json_object_new_boolean(d->has_mq));
        json_object_object_add(o, "multipath_head", json_object_new_boolean(d->multipath_head));
        json_object_object_add(o, "multipath_head_name", str_or_null(d->multipath_head_name));
        json_object_object_add(o, "nr_tags", json_object_new_int((int) d->nr_tags));
        for (size_t i = 0; i < d->n_queues; i++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "index", json_object_new_int((int) d->queues[i].index));
                json_object_object_add(e, "cpu_list", str_or_null(d->queues[i].cpu_list));
                json_object_array_add(q, e);
        }
        json_object_object_add(o, "hw_queues", q);
        json_object_object_add(o, "io_poll", json_object_new_boolean(d->io_poll));
        json_object_object_add(o, "nqn", str_or_null(d->nqn));
        json_object_object_add(o, "nvme", d->nvme ? output_nvme_json(d) : NULL);
        return o;
}

json_object *output_plan_json(const Plan *p, bool dry_run) {
        json_object *devs = json_object_new_array(), *summary = json_object_new_object(),
                    *states = json_object_new_object(), *o = json_object_new_object();
        unsigned counts[_STATE_MAX];

        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];
                json_object *d = json_object_new_object(), *settings = json_object_new_array();

                json_object_object_add(d, "device", json_object_new_string(dp->device->name));
                json_object_object_add(d, "profile", str_or_null(dp->profile));
                json_object_object_add(d, "rule", str_or_null(dp->rule));
                json_object_object_add(d, "reason", str_or_null(dp->reason));
                json_object_object_add(d, "excluded", json_object_new_boolean(dp->excluded));
                json_object_object_add(d, "error", str_or_null(dp->error));
                json_object_object_add(d, "facts", device_facts_json(dp->device));
                {
                        json_object *irq = json_object_new_object();
                        json_object_object_add(irq, "placement",
                                               dp->irq_placement == IRQ_PLACEMENT_UNSET
                                                       ? NULL
                                                       : json_object_new_string(irq_placement_to_string(dp->irq_placement)));
                        json_object_object_add(irq, "keep_irqbalance_away",
                                               json_object_new_boolean(dp->keep_irqbalance_away));
                        json_object_object_add(irq, "note", str_or_null(dp->irq_note));
                        json_object_object_add(d, "irq", irq);
                }
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        json_object *e = json_object_new_object();
                        json_object_object_add(e, "knob", json_object_new_string(s->knob->name));
                        json_object_object_add(e, "object", str_or_null(s->object));
                        json_object_object_add(e, "irq", s->irq >= 0 ? json_object_new_int(s->irq) : NULL);
                        json_object_object_add(e, "effective_affinity", s->irq >= 0 ? str_or_null(s->detail) : NULL);
                        json_object_object_add(e, "detail", s->irq < 0 ? str_or_null(s->detail) : NULL);
                        json_object_object_add(e, "desired", json_object_new_string(s->desired));
                        json_object_object_add(e, "effective", str_or_null(s->effective));
                        json_object_object_add(e, "observed", str_or_null(s->observed));
                        json_object_object_add(e, "previous", str_or_null(s->previous));
                        json_object_object_add(e, "state", json_object_new_string(setting_state_to_string(s->state)));
                        json_object_object_add(e, "note", str_or_null(s->note));
                        json_object_object_add(e, "errno", s->error ? json_object_new_int(-s->error) : NULL);
                        json_object_object_add(e, "origin", output_mark_json(&s->origin));
                        if (s->rt.drifts || s->rt.last_change_usec || s->rt.conflict) {
                                json_object_object_add(e, "drifts", json_object_new_int((int) s->rt.drifts));
                                json_object_object_add(e, "conflict", json_object_new_boolean(s->rt.conflict));
                                json_object_object_add(e, "last_change_realtime_usec",
                                                       json_object_new_uint64(s->rt.last_change_usec));
                        }
                        json_object_array_add(settings, e);
                }
                json_object_object_add(d, "nvme_note", str_or_null(dp->nvme_note));
                json_object_object_add(d, "settings", settings);
                json_object_array_add(devs, d);
        }

        plan_count_states(p, counts);
        for (size_t s = 0; s < _STATE_MAX; s++)
                json_object_object_add(states, setting_state_to_string(s), json_object_new_int((int) counts[s]));
        json_object_object_add(summary, "devices", json_object_new_int((int) p->n));
        json_object_object_add(summary, "settings", states);

        json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
        json_object_object_add(o, "devices", devs);
        json_object_object_add(o, "summary", summary);
        return o;
}

void output_json_print(json_object *j) {
        puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* "scheduler", or "irq 26 nvme0q1" for a vector. */
const char *output_setting_label(const Setting *s, char *buf, size_t size) {
        if (!s->object)
                return s->knob->name;
        str_escape_buf(s->object, buf, size);
        return buf;
}

static bool one_of(const char *s, const char *const *list) {
        for (; *list; list++)
                if (streq(s, *list))
                        return true;
        return false;
}
#define ONE_OF(s, ...) one_of((s), (const char *const[]) { __VA_ARGS__, NULL })

bool output_color(void) {
        static int cached = -1;
        const char *e;

        if (cached >= 0)
                return cached;
        e = getenv("NO_COLOR");
        if (!isempty(e))
                return (cached = 0);
        e = getenv("SYSTEMD_COLORS");
        if (e) {
                if (ONE_OF(e, "0", "false", "no", "off", "n", "f"))
                        return (cached = 0);
                if (ONE_OF(e, "1", "true", "yes", "on", "y", "t", "16", "256", "24bit"))
                        return (cached = 1);
        }
        e = getenv("TERM");
        if (e && streq(e, "dumb"))
                return (cached = 0);
        return (cached = isatty(STDOUT_FILENO));
}

static const char *state_color(const char *state) {
        if (ONE_OF(state, "ok"))
                return "\x1b[0;32m"; /* green */
        if (ONE_OF(state, "changed", "would-change"))
                return "\x1b[0;36m"; /* cyan */
        if (ONE_OF(state, "drifted", "pending-reboot"))
                return "\x1b[0;1;33m"; /* bold yellow */
        if (ONE_OF(state, "failed"))
                return "\x1b[0;1;31m"; /* bold red */
        return NULL; /* managed, unsupported, "-": plain */
}

const char *output_state_cell(const char *state, int width, char *buf, size_t size) {
        const char *color = output_color() ? state_color(state) : NULL;
        int pad = MAX(width - (int) strlen(state), 0);

        if (color)
                snprintf(buf, size, "%s%s\x1b[0m%*s", color, state, pad, "");
        else
                snprintf(buf, size, "%s%*s", state, pad, "");
        return buf;
}

void output_row(const char *fmt, ...) {
        _cleanup_free_ char *line = NULL;
        size_t n;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0) {
                line = NULL;
                return;
        }
        n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                n--;
        while (n > 0 && line[n - 1] == ' ')
                n--;
        printf("%.*s\n", (int) n, line);
}

static const char *state_label(const Setting *s, bool dry_run) {
        if (dry_run && s->state == STATE_CHANGED)
                return "would-change";
        return setting_state_to_string(s->state);
}

/* Column widths are computed from the content so the table stays readable for
 * long names like nvme12c34n1 and notes stay at the end of the line. */
void output_plan_table(const Plan *p, bool dry_run, bool show_ok) {
        int wd = 6, wk = 4, wc = 7, wx = 7, ws = 5, wp = 7;
        bool any = false;

        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];
                wd = MAX(wd, (int) strlen(esc(dp->device->name)));
                wp = MAX(wp, (int) strlen(esc(dp->profile ?: "-")));
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        char lb[128];
                        wk = MAX(wk, (int) strlen(output_setting_label(s, lb, sizeof(lb))));
                        wc = MAX(wc, (int) strlen(esc(s->observed ?: "-")));
                        wx = MAX(wx, (int) strlen(esc(s->effective ?: s->desired)));
                        ws = MAX(ws, (int) strlen(state_label(s, dry_run)));
                }
        }

        output_row("%-*s  %-*s  %-*s  %-*s  %-*s  %-*s  %s", wd, "DEVICE", wk, "KNOB", wc, "CURRENT", wx, "DESIRED", ws,
                   "STATE", wp, "PROFILE", "NOTE");
        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];

                if (dp->excluded) {
                        output_row("%-*s  %-*s  %-*s  %-*s  %-*s  %-*s  excluded by rule %s", wd, esc(dp->device->name),
                                   wk, "-", wc, "-", wx, "-", ws, "-", wp, "-", esc(dp->rule));
                        any = true;
                        continue;
                }
                if (dp->error) {
                        char st[64];
                        output_row("%-*s  %-*s  %-*s  %-*s  %s  %-*s  %s", wd, esc(dp->device->name), wk, "-", wc, "-",
                                   wx, "-", output_state_cell("failed", ws, st, sizeof(st)), wp,
                                   esc(dp->profile ?: "-"), esc(dp->error));
                        any = true;
                        continue;
                }
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        char lb[128], st[64];
                        _cleanup_free_ char *prev = NULL;
                        if (!show_ok && s->state == STATE_OK)
                                continue;
                        if (s->previous && asprintf_safe(&prev, "was %s%s", esc(s->previous), s->note ? "; " : "") < 0)
                                prev = NULL;
                        output_row("%-*s  %-*s  %-*s  %-*s  %s  %-*s  %s%s", wd, esc(dp->device->name), wk,
                                   output_setting_label(s, lb, sizeof(lb)), wc, esc(s->observed ?: "-"), wx,
                                   esc(s->effective ?: s->desired),
                                   output_state_cell(state_label(s, dry_run), ws, st, sizeof(st)), wp,
                                   esc(dp->profile), prev ?: "", esc(s->note ?: ""));
                        any = true;
                }
        }
        if (!any)
                printf("(no settings to show)\n");
}

void output_plan_summary(const Plan *p, const char *command, bool dry_run) {
        unsigned counts[_STATE_MAX];
        bool first = true;

        plan_count_states(p, counts);
        printf("\n%s: %zu device%s", command, p->n, p->n == 1 ? "" : "s");
        for (size_t s = 0; s < _STATE_MAX; s++) {
                if (!counts[s])
                        continue;
                printf("%s %u %s", first ? ";" : ",", counts[s],
                       dry_run && s == STATE_CHANGED ? "would change" : setting_state_to_string(s));
                first = false;
        }
        printf("\n");
}
