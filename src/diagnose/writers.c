/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writers: the entry points of writers.h (the scan over udev, TuneD and the
 * processes; the pick for a knob or a drift; the findings). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "knob.h"
#include "macro.h"
#include "util.h"
#include "writers-internal.h"

int writers_scan(const char *root, const Device *d, WriterList *ret) {
        WriterList l = {};
        Procs procs = {};
        MatchCtx c = {.d = d};
        struct stat st;
        int r;

        assert(d);
        assert(d->name);
        assert(ret);

        if (!root)
                root = "";
        c.sys_ok = d->syspath && stat(d->syspath, &st) >= 0 && S_ISDIR(st.st_mode);

        r = writers_procs_scan(root, &procs);
        if (r < 0)
                return r;
        r = writers_udev_scan(root, &c, &l);
        if (r >= 0)
                r = writers_tuned_scan(root, d, &procs, &l);
        if (r >= 0)
                r = writers_process_writers(&procs, &l);
        writers_procs_done(&procs);
        if (r < 0) {
                writer_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

const Writer *writers_for_knob(const WriterList *l, const char *knob) {
        const Writer *best = NULL;
        int best_rank = 0;

        assert(l);
        assert(knob);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                int rank;

                if (w->match == WRITER_MATCH_NO)
                        continue;
                if (streq(w->knob, knob))
                        rank = w->match == WRITER_MATCH_YES ? 4 : 2;
                else if (streq(w->knob, "*"))
                        rank = w->match == WRITER_MATCH_YES ? 3 : 1;
                else
                        continue;
                if (rank >= best_rank) { /* ties: the later one acts last */
                        best = w;
                        best_rank = rank;
                }
        }
        return best;
}

const Writer *writers_for_drift(const WriterList *l, const char *knob, const char *value_seen, const char *udev_action) {
        const Knob *k = knob_by_name(knob);
        const Writer *best = NULL;
        int best_rank = -1;

        assert(l);
        assert(knob);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                bool exact = streq(w->knob, knob), agrees = false;
                int rank;

                if (w->match == WRITER_MATCH_NO || w->dormant || (!exact && !streq(w->knob, "*")))
                        continue;
                if (value_seen && w->value) {
                        /* One that writes another value did not leave this one. */
                        _cleanup_free_ char *norm = NULL;
                        if (k && k->normalize && k->normalize(w->value, &norm) >= 0)
                                agrees = streq(norm, value_seen);
                        else
                                agrees = streq(w->value, value_seen);
                        if (!agrees)
                                continue;
                }
                rank = (agrees ? 8 : 0) + (w->match == WRITER_MATCH_YES ? 4 : 0) + (exact ? 2 : 0) +
                       (udev_action && w->kind == WRITER_UDEV_RULE &&
                                        (streq(udev_action, "add") ? w->on_add : w->on_change)
                                ? 1
                                : 0);
                if (rank >= best_rank) { /* ties: the later one acts last */
                        best = w;
                        best_rank = rank;
                }
        }
        return best;
}

static const char *const writer_kinds[] = {
        [WRITER_UDEV_RULE] = "udev-rule-writer",
        [WRITER_TUNED] = "tuned-writer",
        [WRITER_IRQBALANCE] = "irqbalance-writer",
        [WRITER_IOTUNED] = "iotuned-writer",
};

int writers_findings(const WriterList *l, const char *device, FindingList *out) {
        assert(l);
        assert(device);
        assert(out);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                const Knob *k = knob_by_name(w->knob);
                bool queue = k && k->scope == KNOB_SCOPE_QUEUE;
                FindingSeverity sev = FINDING_NOTICE;
                _cleanup_free_ char *what = NULL, *events = NULL;
                const char *maybe = w->match == WRITER_MATCH_MAYBE ? "may " : "";
                Finding *f;
                int r;

                if (w->match == WRITER_MATCH_NO || (size_t) w->kind >= ELEMENTSOF(writer_kinds))
                        continue;
                if (w->match == WRITER_MATCH_YES &&
                    (((w->kind == WRITER_UDEV_RULE || (w->kind == WRITER_TUNED && !w->dormant)) && queue) ||
                     w->kind == WRITER_IOTUNED))
                        sev = FINDING_WARNING;

                if (streq(w->knob, "*"))
                        r = (what = strdup("may write every knob")) ? 0 : -ENOMEM;
                else if (w->value)
                        r = asprintf_safe(&what, "%s%s %s=%s", maybe, w->match == WRITER_MATCH_MAYBE ? "set" : "sets",
                                          w->knob, w->value);
                else
                        r = asprintf_safe(&what, "%s%s %s (value not known)", maybe,
                                          w->match == WRITER_MATCH_MAYBE ? "write" : "writes", w->knob);
                if (r < 0)
                        return -ENOMEM;
                if (w->kind == WRITER_UDEV_RULE && asprintf_safe(&events, " on %s events",
                                                                 w->on_add && w->on_change ? "add|change"
                                                                 : w->on_add               ? "add"
                                                                                           : "change") < 0)
                        return -ENOMEM;

                if (w->kind == WRITER_IRQBALANCE)
                        /* Its why says what it does to a vector; no value to name. */
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, NULL, "%s: %s", w->who,
                                        w->why ?: "moves interrupt vectors");
                else if (w->kind == WRITER_TUNED)
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, w->source, "%s (%s) %s (%s)",
                                        w->source ?: "?", w->who, what, w->why ?: "");
                else
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, w->source, "%s %s%s (%s)",
                                        w->source ?: w->who, what, events ?: "", w->why ?: "");
                if (!f)
                        return -ENOMEM;
        }
        return 0;
}
