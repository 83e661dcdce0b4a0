/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
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

void output_json_print(json_object *j) {
        assert(j);

        puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* "scheduler", or "irq 26 nvme0q1" for a vector. */
const char *output_setting_label(const Setting *s, char *buf, size_t size) {
        assert(s);
        assert(buf);

        if (!s->object)
                return s->knob->name;
        str_escape_buf(s->object, buf, size);
        return buf;
}

static bool one_of(const char *s, const char *const *list) {
        assert(s);
        assert(list);

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
        assert(state);

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

        assert(state);
        assert(buf);

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
        assert(s);

        if (dry_run && s->state == STATE_CHANGED)
                return "would-change";
        return setting_state_to_string(s->state);
}

/* Column widths are computed from the content so the table stays readable for
 * long names like nvme12c34n1 and notes stay at the end of the line. */
void output_plan_table(const Plan *p, bool dry_run, bool show_ok) {
        int wd = 6, wk = 4, wc = 7, wx = 7, ws = 5, wp = 7;
        bool any = false;

        assert(p);

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

        assert(p);
        assert(command);

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
