/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drift, from wherever it is seen: a drift check that found a tuned value changed,
 * or a udev "change" event after which a rule had rewritten it. Counted and backed
 * off from (backoff.c); a conflict names who else writes the knob when it can be
 * found (diagnose/writers.c). */
#include <assert.h>

#include "events.h"
#include "log.h"
#include "manager-internal.h"
#include "writers.h"

static const char *writer_knob(const Setting *s) {
        return s->knob->name;
}

/* Who else writes this setting, in words, or NULL when nothing was found. */
static char *find_writer(Manager *m, const DevicePlan *p, const Setting *s, DriftSeen seen) {
        WriterList l = {};
        const Writer *w;
        char *text = NULL;

        assert(m);
        assert(p);
        assert(s);

        if (writers_scan(m->tuner.root, p->device, &l) < 0)
                return NULL;
        w = writers_for_drift(&l, writer_knob(s), s->previous, seen == DRIFT_SEEN_UDEV_CHANGE ? "change"
                                                            : seen == DRIFT_SEEN_UDEV_ADD  ? "add"
                                                                                           : NULL);
        if (w)
                (void) asprintf_safe(&text, "%s%s%s%s%s", w->who, w->source ? " " : "", w->source ?: "",
                                     w->value ? " writing " : "", w->value ?: "");
        writer_list_done(&l);
        return text;
}

void manager_note_drift(Manager *m, DevicePlan *p, Setting *s, uint64_t now, DriftSeen seen) {
        DriftVerdict v;
        uint64_t hold;
        const char *via = seen == DRIFT_SEEN_UDEV_CHANGE ? " after a udev change event"
                          : seen == DRIFT_SEEN_UDEV_ADD  ? " by the time udev's add event arrived"
                                                         : "";

        assert(m);
        assert(p);
        assert(s);

        v = backoff_note_drift(&s->rt, now, &hold);
        drift_check_count_drift(m->drift, v == DRIFT_CONFLICT_BEGINS);
        /* Looked for at its first drift, and again when a conflict begins (the rules
         * may have changed since); not at every drift of a fight. */
        if (!s->rt.writer_sought || v == DRIFT_CONFLICT_BEGINS) {
                free(s->writer);
                s->writer = find_writer(m, p, s, seen);
                s->rt.writer_sought = true;
        }
        event_drift(EVENT_DRIFT, LOG_NOTICE, p, s, seen, "%s: %s drifted to %s (desired %s)%s; put back",
                    p->device->name, setting_label(s), s->previous ?: "?", s->effective, via);
        if (v == DRIFT_CONFLICT_BEGINS) {
                event_drift(EVENT_CONFLICT, LOG_WARNING, p, s, seen,
                            "%s: %s keeps being changed back to %s (%u times in %llu s%s); not writing it for "
                            "%llu s. %s%s%s: remove one of them, or exclude the device in iotuned.yaml",
                            p->device->name, setting_label(s), s->previous ?: "?", CONFLICT_DRIFTS,
                            (unsigned long long) (CONFLICT_WINDOW_USEC / USEC_PER_SEC), via,
                            (unsigned long long) (hold / USEC_PER_SEC), s->writer ? "It is written by " : "",
                            s->writer
                                    ?: "Another tuning agent (TuneD, a udev rule, a boot script, irqbalance) "
                                       "is fighting iotuned",
                            s->writer ? "; `iotunectl diagnose` shows the writers it finds" : "");
        } else if (v == DRIFT_CONFLICT_HOLDS)
                log_debug("%s %s: still in conflict, holding %llu s", p->device->name, setting_label(s),
                          (unsigned long long) (hold / USEC_PER_SEC));
}
