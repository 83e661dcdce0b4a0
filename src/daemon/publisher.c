/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the daemon publishes: status.json (the plan JSON of report/ plus the
 * daemon's counters), the metrics textfile, and systemd's STATUS= line; and the
 * watchdog's pings. */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "event-clock.h"
#include "fileio.h"
#include "log.h"
#include "metrics.h"
#include "plan-json.h"
#include "publisher.h"
#include "rootfs.h"
#include "timing.h"
#include "util.h"

struct Publisher {
        sd_event *event;
        char *root;
        char *status_path;               /* resolved inside the root, as the Tuner's paths */
        char *metrics_refusal;           /* the last refusal to write the metrics textfile, said once */
        bool status_dirty;               /* something status.json shows changed outside a drift */

        bool watchdog_in_check;          /* the drift check pings the watchdog */
        uint64_t watchdog_usec;          /* WatchdogSec=, 0: none */
        uint64_t watchdog_pinged_usec;   /* CLOCK_MONOTONIC of the last WATCHDOG=1 */
};

int publisher_new(sd_event *event, const char *root, Publisher **ret) {
        _cleanup_(publisher_freep) Publisher *p = NULL;
        int r;

        assert(event);
        assert(root);
        assert(ret);

        p = calloc(1, sizeof(Publisher));
        if (!p)
                return -ENOMEM;
        p->event = sd_event_ref(event);
        p->root = strdup(root);
        if (!p->root)
                return -ENOMEM;
        /* Under --root: resolved inside the root (rootfs.h), as the Tuner's paths. */
        r = root_resolve(p->root, IOTUNED_RUN_DIR "/status.json", &p->status_path);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

Publisher *publisher_free(Publisher *p) {
        if (!p)
                return NULL;
        sd_event_unref(p->event);
        free(p->root);
        free(p->status_path);
        free(p->metrics_refusal);
        free(p);
        return NULL;
}

/* The metrics textfile, before status.json: whoever sees a new status file finds
 * the metrics of the same state. */
static void write_metrics(Publisher *p, const PublishState *s) {
        int r;

        assert(p);
        assert(s);

        if (s->config->metrics_textfile) {
                _cleanup_free_ char *path = NULL;
                MetricsCounters mc = {
                        .drifts_corrected = s->drifts_corrected,
                        .conflicts = s->conflicts,
                        .reload_failures = s->reload_failures,
                        .last_reconcile_usec = s->last_check_usec ?: event_now(p->event, CLOCK_REALTIME),
                };
                /* A refusal is said once, until it changes or the file is written again. */
                _cleanup_free_ char *reason = NULL;
                if (root_resolve(p->root, s->config->metrics_textfile, &path) >= 0) {
                        r = metrics_write(path, s->config, s->plan, &mc, &reason);
                        if (r >= 0) {
                                free(p->metrics_refusal);
                                p->metrics_refusal = NULL;
                        } else if (reason && !streq_ptr(reason, p->metrics_refusal)) {
                                log_error("Not writing the metrics textfile %s: %s", path, reason);
                                free(p->metrics_refusal);
                                p->metrics_refusal = TAKE_PTR(reason);
                        } else if (!reason)
                                log_warning_errno(r, "Cannot write the metrics textfile %s: %m", path);
                }
        }
}

void publisher_setup_watchdog(Publisher *p, uint64_t reassert_usec) {
        uint64_t period = 0, latest;
        int r;

        assert(p);

        r = sd_watchdog_enabled(false, &period);
        /* The latest a check comes: the interval and its jitter (drift-check.c). */
        latest = reassert_usec + reassert_usec / 10 + reassert_usec / 20;
        p->watchdog_usec = r > 0 ? period : 0;
        p->watchdog_in_check = r > 0 && latest <= period / 2;
        r = sd_event_set_watchdog(p->event, r > 0 && !p->watchdog_in_check);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %m");
        publisher_keepalive(p);
}

void publisher_keepalive(Publisher *p) {
        uint64_t now;

        assert(p);

        if (!p->watchdog_usec)
                return;
        now = now_usec(CLOCK_MONOTONIC);
        if (p->watchdog_pinged_usec && now - p->watchdog_pinged_usec < p->watchdog_usec / 4)
                return;
        timing_enter(TIMING_NOTIFY);
        (void) sd_notify(false, "WATCHDOG=1");
        timing_leave();
        p->watchdog_pinged_usec = now;
}

bool publisher_watchdog_in_check(const Publisher *p) {
        assert(p);

        return p->watchdog_in_check;
}

void publisher_mark_dirty(Publisher *p) {
        assert(p);

        p->status_dirty = true;
}

bool publisher_take_dirty(Publisher *p) {
        bool dirty;

        assert(p);

        dirty = p->status_dirty;
        p->status_dirty = false;
        return dirty;
}

void publisher_write_status(Publisher *p, const PublishState *s) {
        TIMING_SCOPE(TIMING_PUBLISH);
        json_object *j, *d;
        const char *text;
        int r;

        assert(p);
        assert(s);

        j = report_plan_document("status", s->plan, false);
        write_metrics(p, s);
        if (!j)
                return;
        d = json_object_new_object();
        json_object_object_add(d, "pid", json_object_new_int((int) getpid()));
        json_object_object_add(d, "reassert_interval_usec", json_object_new_uint64(s->config->reassert_usec));
        json_object_object_add(d, "drifts_corrected", json_object_new_int((int) s->drifts_corrected));
        json_object_object_add(d, "conflicts", json_object_new_int((int) s->conflicts));
        json_object_object_add(d, "reload_failures", json_object_new_int((int) s->reload_failures));
        json_object_object_add(d, "last_check_realtime_usec", json_object_new_uint64(s->last_check_usec));
        {
                json_object *ib = json_object_new_object(), *bans = json_object_new_array();
                json_object_object_add(ib, "pid", s->irqbalance_pid ? json_object_new_int(s->irqbalance_pid) : NULL);
                json_object_object_add(ib, "state", s->irqbalance_state ? json_object_new_string(s->irqbalance_state)
                                                                        : NULL);
                for (size_t i = 0; i < s->n_banned; i++)
                        json_object_array_add(bans, json_object_new_int((int) s->banned[i]));
                json_object_object_add(ib, "banned_by_iotuned", bans);
                json_object_object_add(d, "irqbalance", ib);
        }
        json_object_object_add(j, "daemon", d);
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = write_file_atomic_full(p->status_path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s: %m", p->status_path);
        json_object_put(j);

}

/* "6 devices: latency 4, throughput 2; 3 drifts corrected; 1 conflict" */
void publisher_notify_status(Publisher *p, const PublishState *s, const char *extra) {
        TIMING_SCOPE(TIMING_NOTIFY);
        const Plan *plan = s->plan;
        char buf[1024];
        size_t off = 0;
        unsigned tuned = 0, excluded = 0;
        bool first = true;

        assert(p);
        assert(s);

        for (size_t i = 0; i < plan->n; i++) {
                if (plan->devices[i]->excluded)
                        excluded++;
                else
                        tuned++;
        }
        off += snprintf(buf + off, sizeof(buf) - off, "%u device%s", tuned, tuned == 1 ? "" : "s");
        for (size_t k = 0; k < s->config->n_profiles && off < sizeof(buf); k++) {
                const char *name = s->config->profiles[k]->name;
                unsigned n = 0;
                for (size_t i = 0; i < plan->n; i++)
                        if (plan->devices[i]->profile && !plan->devices[i]->excluded &&
                            streq(plan->devices[i]->profile, name))
                                n++;
                if (n) {
                        off += snprintf(buf + off, sizeof(buf) - off, "%s %s %u", first ? ":" : ",", name, n);
                        first = false;
                }
        }
        if (off < sizeof(buf) && excluded)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u excluded", excluded);
        if (off < sizeof(buf))
                off += snprintf(buf + off, sizeof(buf) - off, "; %u drift%s corrected", s->drifts_corrected,
                                s->drifts_corrected == 1 ? "" : "s");
        if (off < sizeof(buf) && s->conflicts)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u conflict%s", s->conflicts,
                                s->conflicts == 1 ? "" : "s");
        if (off < sizeof(buf) && extra)
                snprintf(buf + off, sizeof(buf) - off, "; %s", extra);
        (void) sd_notifyf(false, "STATUS=%s", buf);
}

/* At stop: stale numbers are worse than none (node_exporter then reports no
 * iotuned_* series), and status.json without a daemon says "not running". */
void publisher_unpublish(Publisher *p, const Config *c) {
        assert(p);
        assert(c);

        (void) unlink(p->status_path);
        if (c->metrics_textfile) {
                _cleanup_free_ char *path = NULL;
                if (root_resolve(p->root, c->metrics_textfile, &path) >= 0)
                        (void) unlink(path);
        }
}
