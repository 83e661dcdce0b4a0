/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "util.h"

/* The Critical Warning bits of the SMART / Health log (NVMe 2.0 figure 207),
 * libnvme's enum nvme_smart_crit. */
static const char *const critical_warning_bits[8] = {
        [0] = "available spare below its threshold",
        [1] = "temperature outside a threshold",
        [2] = "reliability degraded by media or internal errors",
        [3] = "media placed in read-only mode",
        [4] = "volatile memory backup device failed",
        [5] = "persistent memory region read-only or unreliable",
        [6] = "reserved bit 6",
        [7] = "reserved bit 7",
};

/* finding_value() for several values: stop at the first -ENOMEM. */
static int values(Finding *f, const char *const *names, const double *v, size_t n) {
        assert(f);

        for (size_t i = 0; i < n; i++) {
                int r = finding_value(f, names[i], v[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int smart_info(const char *ctrl, const NvmeHealth *h, FindingList *out) {
        _cleanup_free_ char *thresholds = NULL;
        Finding *f;

        assert(ctrl);
        assert(h);
        assert(out);

        if (h->warning_temp_c != 0 && h->critical_temp_c != 0)
                (void) asprintf_safe(&thresholds, " (warning %d C, critical %d C)", h->warning_temp_c,
                                     h->critical_temp_c);
        else if (h->warning_temp_c != 0)
                (void) asprintf_safe(&thresholds, " (warning %d C)", h->warning_temp_c);
        else
                thresholds = strdup("");
        if (!thresholds)
                return -ENOMEM;

        f = finding_add(out, ctrl, "smart", FINDING_INFO, NULL, NULL,
                        "composite temperature %d C%s, available spare %u%% (threshold %u%%), %u%% of rated life "
                        "used, %" PRIu64 " media errors, %" PRIu64 " power-on hours, %" PRIu64 " unsafe shutdowns",
                        h->temperature_c, thresholds, h->available_spare, h->spare_threshold, h->percent_used,
                        h->media_errors, h->power_on_hours, h->unsafe_shutdowns);
        if (!f)
                return -ENOMEM;
        return values(f,
                      (const char *const[]){"temperature_c", "available_spare_pct", "spare_threshold_pct",
                                            "percent_used", "media_errors", "power_on_hours", "unsafe_shutdowns",
                                            "error_log_entries"},
                      (const double[]){h->temperature_c, h->available_spare, h->spare_threshold, h->percent_used,
                                       (double) h->media_errors, (double) h->power_on_hours,
                                       (double) h->unsafe_shutdowns, (double) h->num_err_log_entries},
                      8);
}

static int critical_warning(const char *ctrl, const NvmeHealth *h, FindingList *out) {
        _cleanup_free_ char *words = NULL;
        size_t size = 0;
        FILE *m;
        Finding *f;
        bool first = true;

        assert(ctrl);
        assert(h);
        assert(out);

        if (h->critical_warning == 0)
                return 0;
        m = open_memstream(&words, &size);
        if (!m)
                return -ENOMEM;
        for (unsigned b = 0; b < 8; b++)
                if (h->critical_warning & (1u << b)) {
                        fprintf(m, "%s%s", first ? "" : ", ", critical_warning_bits[b]);
                        first = false;
                }
        if (fclose(m) != 0 || !words)
                return -ENOMEM;
        f = finding_add(out, ctrl, "smart-critical-warning", FINDING_CRITICAL, NULL, NULL,
                        "SMART critical warning 0x%02x: %s", h->critical_warning, words);
        if (!f)
                return -ENOMEM;
        return finding_value(f, "critical_warning", h->critical_warning);
}

static int thermal(const char *ctrl, const NvmeHealth *h, FindingList *out) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        uint64_t throttled = (uint64_t) h->thm_total_time_s[0] + h->thm_total_time_s[1];
        bool hot = h->warning_temp_c != 0 && h->temperature_c >= h->warning_temp_c;
        bool flagged = h->critical_warning & NVME_SMART_CRIT_TEMPERATURE;
        bool history = throttled > 0 || h->warning_temp_time_min > 0 || h->critical_comp_time_min > 0;
        FILE *m;
        Finding *f;

        assert(ctrl);
        assert(h);
        assert(out);

        if (!hot && !flagged && !history)
                return 0;
        m = open_memstream(&text, &size);
        if (!m)
                return -ENOMEM;
        if (hot && h->critical_temp_c != 0 && h->temperature_c >= h->critical_temp_c)
                fprintf(m, "composite temperature %d C is at or above the critical threshold %d C", h->temperature_c,
                        h->critical_temp_c);
        else if (hot)
                fprintf(m, "composite temperature %d C is at or above the warning threshold %d C", h->temperature_c,
                        h->warning_temp_c);
        else if (flagged)
                fprintf(m, "the controller flags its temperature (%d C) as outside a threshold", h->temperature_c);
        else
                fprintf(m, "composite temperature %d C now", h->temperature_c);
        if (history)
                /* These are lifetime counters of the SMART log: they say the drive has
                 * throttled, not that it does now. */
                fprintf(m,
                        "; the drive has spent %" PRIu64 " s throttled (thermal management: %u s in %u transitions "
                        "at temperature 1, %u s in %u at temperature 2), %u min above its warning and %u min above "
                        "its critical temperature since it was made (lifetime SMART counters)",
                        throttled, h->thm_total_time_s[0], h->thm_transitions[0], h->thm_total_time_s[1],
                        h->thm_transitions[1], h->warning_temp_time_min, h->critical_comp_time_min);
        fputs(hot || flagged ? ": measurements on this drive may be throttled"
                             : ": not now, but a sustained load may throttle it again",
              m);
        if (fclose(m) != 0 || !text)
                return -ENOMEM;

        /* Critical only for what holds now; a drive that once ran hot stays a notice. */
        f = finding_add(out, ctrl, "thermal-throttle", hot || flagged ? FINDING_CRITICAL : FINDING_NOTICE, NULL, NULL,
                        "%s", text);
        if (!f)
                return -ENOMEM;
        return values(f,
                      (const char *const[]){"temperature_c", "warning_temp_c", "critical_temp_c", "throttled_s",
                                            "warning_temp_time_min", "critical_comp_time_min"},
                      (const double[]){h->temperature_c, h->warning_temp_c, h->critical_temp_c, (double) throttled,
                                       h->warning_temp_time_min, h->critical_comp_time_min},
                      6);
}

static int apst(const char *ctrl, const NvmeHealth *h, FindingList *out) {
        Finding *f;

        assert(ctrl);
        assert(h);
        assert(out);

        if (!h->apst_known) {
                if (!h->smart_read) /* the same failure, already said */
                        return 0;
                f = finding_add(out, ctrl, "apst-unknown", FINDING_INFO, "apst", NULL, "APST state unknown: %s",
                                h->apst_error ?: "not read");
                return f ? 0 : -ENOMEM;
        }
        if (!h->apst_supported)
                f = finding_add(out, ctrl, "apst-exit-latency", FINDING_INFO, "apst", NULL,
                                "the controller has no autonomous power state transitions: no wake-up latency");
        else if (!h->apst_enabled)
                f = finding_add(out, ctrl, "apst-exit-latency", FINDING_INFO, "apst", NULL,
                                "APST is off: the controller stays in its power state, no wake-up latency");
        else if (h->apst_target_states == 0)
                f = finding_add(out, ctrl, "apst-exit-latency", FINDING_INFO, "apst", NULL,
                                "APST is on but its table sends the controller to no non-operational state");
        else if (h->apst_worst_total_us >= HEALTH_APST_STALL_US)
                f = finding_add(out, ctrl, "apst-exit-latency", FINDING_NOTICE, "apst", NULL,
                                "APST puts the idle controller into PS%u, %u us entry + exit latency (worst exit "
                                "latency %u us): the first I/O after an idle period waits for the wake-up",
                                h->apst_worst_state, h->apst_worst_total_us, h->apst_worst_exit_us);
        else
                f = finding_add(out, ctrl, "apst-exit-latency", FINDING_INFO, "apst", NULL,
                                "APST is on: deepest wake-up PS%u, %u us entry + exit latency (worst exit latency "
                                "%u us)",
                                h->apst_worst_state, h->apst_worst_total_us, h->apst_worst_exit_us);
        if (!f)
                return -ENOMEM;
        if (!h->apst_supported || !h->apst_enabled || h->apst_target_states == 0)
                return finding_value(f, "apst_enabled", h->apst_enabled);
        return values(
                f,
                (const char *const[]){"apst_enabled", "apst_worst_state", "apst_worst_exit_us", "apst_worst_total_us"},
                (const double[]){h->apst_enabled, h->apst_worst_state, h->apst_worst_exit_us, h->apst_worst_total_us},
                4);
}

int health_findings(const char *ctrl, const NvmeHealth *h, FindingList *out) {
        Finding *f;
        int r;

        assert(ctrl);
        assert(h);
        assert(out);

        if (!h->smart_read) {
                f = finding_add(out, ctrl, "smart-unreadable", FINDING_NOTICE, NULL, NULL,
                                "SMART / health log not read: %s", h->smart_error ?: "unknown reason");
                if (!f)
                        return -ENOMEM;
                return apst(ctrl, h, out);
        }

        r = smart_info(ctrl, h, out);
        if (r < 0)
                return r;
        r = critical_warning(ctrl, h, out);
        if (r < 0)
                return r;
        r = thermal(ctrl, h, out);
        if (r < 0)
                return r;
        if (h->media_errors > 0) {
                f = finding_add(out, ctrl, "media-errors", FINDING_WARNING, NULL, NULL,
                                "%" PRIu64 " media and data integrity errors (unrecovered reads, end-to-end "
                                "protection or checksum failures) over the drive's lifetime, %" PRIu64
                                " error log entries",
                                h->media_errors, h->num_err_log_entries);
                if (!f)
                        return -ENOMEM;
                r = finding_value(f, "media_errors", (double) h->media_errors);
                if (r < 0)
                        return r;
        }
        return apst(ctrl, h, out);
}

/* Which counter both samples have on every hctx: "queued", "run", or NULL. */
static const char *common_counter(const HctxStats *a, const HctxStats *b) {
        bool queued = true, run = true;

        for (size_t i = 0; i < a->n; i++) {
                queued = queued && a->items[i].has_queued;
                run = run && a->items[i].has_run;
        }
        for (size_t i = 0; i < b->n; i++) {
                queued = queued && b->items[i].has_queued;
                run = run && b->items[i].has_run;
        }
        return queued ? "queued" : run ? "run" : NULL;
}

/* Whether every hctx of both samples has an I/O scheduler attached: then every
 * request is dispatched by a queue run, and `run` counts requests. */
static bool all_scheduled(const HctxStats *a, const HctxStats *b) {
        for (size_t i = 0; i < a->n; i++)
                if (a->items[i].scheduled != 1)
                        return false;
        for (size_t i = 0; i < b->n; i++)
                if (b->items[i].scheduled != 1)
                        return false;
        return true;
}

static uint64_t counter_of(const HctxStat *s, bool queued) {
        return queued ? s->queued : s->run;
}

static int poll_unknown(const char *disk, const char *why, FindingList *out) {
        Finding *f = finding_add(out, disk, "poll-unknown", FINDING_NOTICE, "poll_queues", NULL,
                                 "whether polled I/O reaches the poll queues is unknown: %s", why);
        return f ? 0 : -ENOMEM;
}

/* At most this many poll queues are named in a summary (all of them get a value). */
#define POLLQ_NAMED_MAX 8u

int pollq_findings(const char *disk, bool io_poll, const HctxStats *a, const HctxStats *b, FindingList *out) {
        _cleanup_free_ char *list = NULL;
        const char *counter, *unit;
        uint64_t poll = 0, other = 0;
        size_t size = 0, n_poll = 0;
        bool queued, any_poll = false, unused;
        FILE *m;
        Finding *f;
        int r;

        assert(disk);
        assert(a);
        assert(b);
        assert(out);

        if (!io_poll)
                return 0;
        /* Where debugfs shows the queue types and none is a poll queue, the disk has
         * none, whatever io_poll said. */
        for (size_t i = 0; i < b->n; i++)
                any_poll = any_poll || streq(b->items[i].type, "poll");
        if (b->n > 0 && !any_poll)
                return 0;

        if (!a->available || !b->available)
                return poll_unknown(disk, (!a->available ? a->why_not : b->why_not) ?: "no hctx statistics", out);
        if (a->n != b->n)
                return poll_unknown(disk, "the hardware queues changed between the samples", out);
        for (size_t i = 0; i < b->n; i++) {
                const HctxStat *x = hctx_stats_find(a, b->items[i].index);
                if (!x || !streq(x->type, b->items[i].type))
                        return poll_unknown(disk, "the hardware queues changed between the samples", out);
        }
        counter = common_counter(a, b);
        if (!counter)
                return poll_unknown(disk, "the samples have no counter in common", out);
        queued = streq(counter, "queued");
        unit = queued ? "requests" : "queue runs";

        for (size_t i = 0; i < b->n; i++) {
                const HctxStat *x = hctx_stats_find(a, b->items[i].index), *y = &b->items[i];
                uint64_t d;

                if (counter_of(y, queued) < counter_of(x, queued))
                        return poll_unknown(disk, "a counter went backwards between the samples (reset by a write)",
                                            out);
                d = counter_of(y, queued) - counter_of(x, queued);
                if (streq(y->type, "poll")) {
                        poll = poll + d < poll ? UINT64_MAX : poll + d;
                        n_poll++;
                } else
                        other = other + d < other ? UINT64_MAX : other + d;
        }

        /* Without an I/O scheduler, requests are issued directly and no run counts
         * them: idle poll queues then prove nothing (runs on them still prove use). */
        if (!queued && poll == 0 && !all_scheduled(a, b))
                return poll_unknown(disk,
                                    "the poll queues show no queue runs, but without an I/O scheduler requests are "
                                    "issued directly, which \"run\" does not count, and this kernel has no per-queue "
                                    "request counter (\"queued\" went in 5.16)",
                                    out);

        m = open_memstream(&list, &size);
        if (!m)
                return -ENOMEM;
        for (size_t i = 0, k = 0; i < b->n; i++) {
                const HctxStat *y = &b->items[i];
                if (!streq(y->type, "poll"))
                        continue;
                if (k == POLLQ_NAMED_MAX) {
                        fprintf(m, ", ...");
                        break;
                }
                fprintf(m, "%shctx%u +%" PRIu64, k > 0 ? ", " : "", y->index,
                        counter_of(y, queued) - counter_of(hctx_stats_find(a, y->index), queued));
                k++;
        }
        if (fclose(m) != 0 || !list)
                return -ENOMEM;

        unused = poll == 0 && other >= HEALTH_POLLQ_MIN_OTHER;
        if (unused)
                f = finding_add(out, disk, "poll-queues-unused", FINDING_NOTICE, "poll_queues", NULL,
                                "%zu poll queues (%s) took 0 %s while the default/read queues took %" PRIu64
                                ": polled I/O does not reach the poll queues: applications must use RWF_HIPRI / "
                                "io_uring IORING_SETUP_IOPOLL (fio --hipri)",
                                n_poll, list, unit, other);
        else
                f = finding_add(out, disk, "poll-queues-used", FINDING_INFO, "poll_queues", NULL,
                                "%zu poll queues (%s) took %" PRIu64 " %s, the default/read queues %" PRIu64 "%s",
                                n_poll, list, poll, unit, other,
                                poll == 0 ? ": too little I/O to tell whether polled I/O reaches them" : "");
        if (!f)
                return -ENOMEM;

        {
                _cleanup_free_ char *pn = NULL, *on = NULL;
                if (asprintf_safe(&pn, "poll_%s", counter) < 0 || asprintf_safe(&on, "other_%s", counter) < 0)
                        return -ENOMEM;
                r = finding_value(f, "poll_queues", (double) n_poll);
                if (r >= 0)
                        r = finding_value(f, pn, (double) poll);
                if (r >= 0)
                        r = finding_value(f, on, (double) other);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < b->n; i++) {
                _cleanup_free_ char *name = NULL;
                const HctxStat *y = &b->items[i];
                if (!streq(y->type, "poll"))
                        continue;
                if (asprintf_safe(&name, "hctx%u_%s", y->index, counter) < 0)
                        return -ENOMEM;
                r = finding_value(f, name,
                                  (double) (counter_of(y, queued) - counter_of(hctx_stats_find(a, y->index), queued)));
                if (r < 0)
                        return r;
        }
        return 0;
}
