/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the daemon publishes: status.json (the plan JSON of report/ plus the
 * daemon's counters), the metrics textfile, and systemd's STATUS= line. */
#include <assert.h>
#include <json-c/json.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "manager-internal.h"
#include "timing.h"
#include "metrics.h"
#include "plan-json.h"
#include "util.h"

/* The metrics textfile, before status.json: whoever sees a new status file finds
 * the metrics of the same state. */
static void manager_write_metrics(Manager *m) {
        int r;

        assert(m);

        if (m->config->metrics_textfile) {
                _cleanup_free_ char *path = NULL;
                MetricsCounters mc = {
                        .drifts_corrected = m->drifts_corrected,
                        .conflicts = m->conflicts,
                        .reload_failures = m->reload_failures,
                        .last_reconcile_usec = m->last_check_usec ?: manager_now(m, CLOCK_REALTIME),
                };
                /* A refusal is said once, until it changes or the file is written again. */
                static char *last_refusal = NULL;
                _cleanup_free_ char *reason = NULL;
                if (tuner_resolve(&m->tuner, m->config->metrics_textfile, &path) >= 0) {
                        r = metrics_write(path, m->config, &m->plan, &mc, &reason);
                        if (r >= 0) {
                                free(last_refusal);
                                last_refusal = NULL;
                        } else if (reason && !streq_ptr(reason, last_refusal)) {
                                log_error("Not writing the metrics textfile %s: %s", path, reason);
                                free(last_refusal);
                                last_refusal = TAKE_PTR(reason);
                        } else if (!reason)
                                log_warning_errno(r, "Cannot write the metrics textfile %s: %m", path);
                }
        }
}

void manager_setup_watchdog(Manager *m) {
        uint64_t period = 0, latest;
        int r;

        assert(m);

        r = sd_watchdog_enabled(false, &period);
        /* The latest a check comes: the interval and its jitter (manager_arm_drift_timer). */
        latest = m->config->reassert_usec + m->config->reassert_usec / 10 + m->config->reassert_usec / 20;
        m->watchdog_usec = r > 0 ? period : 0;
        m->watchdog_in_check = r > 0 && latest <= period / 2;
        r = sd_event_set_watchdog(m->event, r > 0 && !m->watchdog_in_check);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %m");
        manager_keepalive(m);
}

void manager_keepalive(Manager *m) {
        uint64_t now;

        assert(m);

        if (!m->watchdog_usec)
                return;
        now = now_usec(CLOCK_MONOTONIC);
        if (m->watchdog_pinged_usec && now - m->watchdog_pinged_usec < m->watchdog_usec / 4)
                return;
        timing_enter(TIMING_NOTIFY);
        (void) sd_notify(false, "WATCHDOG=1");
        timing_leave();
        m->watchdog_pinged_usec = now;
}

void manager_write_status(Manager *m) {
        TIMING_SCOPE(TIMING_PUBLISH);
        json_object *j = report_plan_document("status", &m->plan, false), *d;
        const char *text;
        int r;

        assert(m);

        manager_write_metrics(m);
        if (!j)
                return;
        d = json_object_new_object();
        json_object_object_add(d, "pid", json_object_new_int((int) getpid()));
        json_object_object_add(d, "reassert_interval_usec", json_object_new_uint64(m->config->reassert_usec));
        json_object_object_add(d, "drifts_corrected", json_object_new_int((int) m->drifts_corrected));
        json_object_object_add(d, "conflicts", json_object_new_int((int) m->conflicts));
        json_object_object_add(d, "reload_failures", json_object_new_int((int) m->reload_failures));
        json_object_object_add(d, "last_check_realtime_usec", json_object_new_uint64(m->last_check_usec));
        {
                json_object *ib = json_object_new_object(), *bans = json_object_new_array();
                json_object_object_add(ib, "pid", m->irqbalance.pid ? json_object_new_int(m->irqbalance.pid) : NULL);
                json_object_object_add(ib, "state", m->irqbalance_state ? json_object_new_string(m->irqbalance_state)
                                                                        : NULL);
                for (size_t i = 0; i < m->n_our_bans; i++)
                        json_object_array_add(bans, json_object_new_int((int) m->our_bans[i]));
                json_object_object_add(ib, "banned_by_iotuned", bans);
                json_object_object_add(d, "irqbalance", ib);
        }
        json_object_object_add(j, "daemon", d);
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = write_file_atomic_full(m->status_path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s: %m", m->status_path);
        json_object_put(j);

}

/* "6 devices: latency 4, throughput 2; 3 drifts corrected; 1 conflict" */
void manager_notify_status(Manager *m, const char *extra) {
        TIMING_SCOPE(TIMING_NOTIFY);
        char buf[1024];
        size_t off = 0;
        unsigned tuned = 0, excluded = 0;
        bool first = true;

        assert(m);

        for (size_t i = 0; i < m->plan.n; i++) {
                if (m->plan.devices[i]->excluded)
                        excluded++;
                else
                        tuned++;
        }
        off += snprintf(buf + off, sizeof(buf) - off, "%u device%s", tuned, tuned == 1 ? "" : "s");
        for (size_t p = 0; p < m->config->n_profiles && off < sizeof(buf); p++) {
                const char *name = m->config->profiles[p]->name;
                unsigned n = 0;
                for (size_t i = 0; i < m->plan.n; i++)
                        if (m->plan.devices[i]->profile && !m->plan.devices[i]->excluded &&
                            streq(m->plan.devices[i]->profile, name))
                                n++;
                if (n) {
                        off += snprintf(buf + off, sizeof(buf) - off, "%s %s %u", first ? ":" : ",", name, n);
                        first = false;
                }
        }
        if (off < sizeof(buf) && excluded)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u excluded", excluded);
        if (off < sizeof(buf))
                off += snprintf(buf + off, sizeof(buf) - off, "; %u drift%s corrected", m->drifts_corrected,
                                m->drifts_corrected == 1 ? "" : "s");
        if (off < sizeof(buf) && m->conflicts)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u conflict%s", m->conflicts,
                                m->conflicts == 1 ? "" : "s");
        if (off < sizeof(buf) && extra)
                snprintf(buf + off, sizeof(buf) - off, "; %s", extra);
        (void) sd_notifyf(false, "STATUS=%s", buf);
}

/* At stop: stale numbers are worse than none (node_exporter then reports no
 * iotuned_* series), and status.json without a daemon says "not running". */
void manager_unpublish(Manager *m) {
        assert(m);

        (void) unlink(m->status_path);
        if (m->config->metrics_textfile) {
                _cleanup_free_ char *path = NULL;
                if (tuner_resolve(&m->tuner, m->config->metrics_textfile, &path) >= 0)
                        (void) unlink(path);
        }
}
