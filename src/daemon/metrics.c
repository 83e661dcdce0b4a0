/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "metrics.h"
#include "util.h"

/* A label value: the exposition format escapes \\, " and newlines. */
static void put_label(FILE *f, const char *v) {
        for (; *v; v++)
                if (*v == '\\' || *v == '"')
                        fprintf(f, "\\%c", *v);
                else if (*v == '\n')
                        fputs("\\n", f);
                else
                        fputc(*v, f);
}

static void load_gauge(FILE *f, const Plan *p, const char *name, const char *help, size_t offset, double scale) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
        for (size_t d = 0; d < p->n; d++) {
                const DevicePlan *dp = p->devices[d];
                double v;
                if (!dp->has_load)
                        continue;
                memcpy(&v, (const char *) &dp->load + offset, sizeof(v));
                fprintf(f, "%s{device=\"", name);
                put_label(f, dp->device->name);
                fprintf(f, "\"} %.6g\n", v * scale);
        }
}

/* Per disk: the load between the last two drift checks, drifts per knob (a disk's
 * vectors summed under their knob), and the findings present. At most one series
 * per disk and knob, and per disk and finding kind: bounded by the disks. */
static void per_device(FILE *f, const Plan *p) {
        load_gauge(f, p, "iotuned_device_queue_depth",
                   "Average requests in flight on the disk between the last two drift checks.",
                   offsetof(BlockLoad, queue_depth), 1);
        load_gauge(f, p, "iotuned_device_await_seconds",
                   "Average time per completed I/O between the last two drift checks.", offsetof(BlockLoad, await_ms),
                   1e-3);
        load_gauge(f, p, "iotuned_device_utilisation_ratio",
                   "Share of the time the disk had I/O in flight between the last two drift checks.",
                   offsetof(BlockLoad, utilisation), 1);
        load_gauge(f, p, "iotuned_device_iops", "Reads and writes completed per second between the last two drift checks.",
                   offsetof(BlockLoad, iops), 1);

        fputs("# HELP iotuned_setting_drifts_total Drifts corrected per disk and knob since the disk was tuned.\n"
              "# TYPE iotuned_setting_drifts_total counter\n", f);
        for (size_t d = 0; d < p->n; d++) {
                const DevicePlan *dp = p->devices[d];
                unsigned per_knob[_KNOB_MAX] = {};
                bool planned[_KNOB_MAX] = {};
                if (dp->excluded)
                        continue;
                for (size_t k = 0; k < dp->n_settings; k++) {
                        per_knob[dp->settings[k].knob->id] += dp->settings[k].rt.drifts;
                        planned[dp->settings[k].knob->id] = true;
                }
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        if (!planned[k])
                                continue;
                        fputs("iotuned_setting_drifts_total{device=\"", f);
                        put_label(f, dp->device->name);
                        fprintf(f, "\",knob=\"%s\"} %u\n", knob_get(k)->name, per_knob[k]);
                }
        }

        fputs("# HELP iotuned_device_findings Findings present on a disk (1), by kind and severity.\n"
              "# TYPE iotuned_device_findings gauge\n", f);
        for (size_t d = 0; d < p->n; d++) {
                const DevicePlan *dp = p->devices[d];
                for (size_t i = 0; i < dp->findings.n; i++) {
                        const Finding *x = &dp->findings.items[i];
                        if (x->severity < FINDING_NOTICE)
                                continue;
                        fputs("iotuned_device_findings{device=\"", f);
                        put_label(f, dp->device->name);
                        fputs("\",kind=\"", f);
                        put_label(f, x->kind);
                        fprintf(f, "\",severity=\"%s\"} 1\n", finding_severity_to_string(x->severity));
                }
        }
}

int metrics_format(const Config *c, const Plan *p, const MetricsCounters *m, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        unsigned counts[_STATE_MAX], excluded = 0, failed_devices = 0;
        FILE *f = open_memstream(&buf, &size);

        assert(c);
        assert(p);
        assert(m);
        assert(ret);

        if (!f)
                return -ENOMEM;
        plan_count_states(p, counts);

        fputs("# HELP iotuned_devices Disks iotuned tunes, by profile.\n"
              "# TYPE iotuned_devices gauge\n", f);
        for (size_t i = 0; i < c->n_profiles; i++) {
                unsigned n = 0;
                for (size_t d = 0; d < p->n; d++)
                        if (!p->devices[d]->excluded && p->devices[d]->profile &&
                            streq(p->devices[d]->profile, c->profiles[i]->name))
                                n++;
                fprintf(f, "iotuned_devices{profile=\"%s\"} %u\n", c->profiles[i]->name, n);
        }
        for (size_t d = 0; d < p->n; d++) {
                excluded += p->devices[d]->excluded;
                failed_devices += p->devices[d]->error != NULL;
        }
        fprintf(f, "# HELP iotuned_devices_excluded Disks an exclude rule leaves alone.\n"
                   "# TYPE iotuned_devices_excluded gauge\n"
                   "iotuned_devices_excluded %u\n"
                   "# HELP iotuned_devices_failed Disks that could not be tuned at all.\n"
                   "# TYPE iotuned_devices_failed gauge\n"
                   "iotuned_devices_failed %u\n",
                excluded, failed_devices);

        fputs("# HELP iotuned_settings Settings (one knob on one disk or vector) by state.\n"
              "# TYPE iotuned_settings gauge\n", f);
        for (size_t s = 0; s < _STATE_MAX; s++)
                /* "changed" is a moment, not a state to alert on: a written value that holds is ok. */
                if (s != STATE_CHANGED)
                        fprintf(f, "iotuned_settings{state=\"%s\"} %u\n", setting_state_to_string(s),
                                counts[s] + (s == STATE_OK ? counts[STATE_CHANGED] : 0));

        fprintf(f,
                "# HELP iotuned_drifts_corrected_total Values someone else changed and iotuned put back.\n"
                "# TYPE iotuned_drifts_corrected_total counter\n"
                "iotuned_drifts_corrected_total %u\n"
                "# HELP iotuned_conflicts_total Conflict episodes: a value reverted repeatedly by another agent.\n"
                "# TYPE iotuned_conflicts_total counter\n"
                "iotuned_conflicts_total %u\n"
                "# HELP iotuned_reload_failures_total Reloads refused because the configuration was invalid.\n"
                "# TYPE iotuned_reload_failures_total counter\n"
                "iotuned_reload_failures_total %u\n"
                "# HELP iotuned_last_reconcile_timestamp_seconds When iotuned last checked every setting.\n"
                "# TYPE iotuned_last_reconcile_timestamp_seconds gauge\n"
                "iotuned_last_reconcile_timestamp_seconds %" PRIu64 ".%06" PRIu64 "\n",
                m->drifts_corrected, m->conflicts, m->reload_failures, m->last_reconcile_usec / 1000000,
                m->last_reconcile_usec % 1000000);
        per_device(f, p);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

int metrics_check_dir(const char *path, uid_t owner, char **ret_reason) {
        _cleanup_free_ char *dir = NULL;
        struct stat st;
        char *slash;

        assert(path);

        dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                return -EINVAL;
        if (slash == dir)
                slash[1] = 0; /* "/metrics.prom": the root directory */
        else
                *slash = 0;
        if (stat(dir, &st) < 0) {
                int r = negative_errno();
                if (r == -ENOENT)
                        return 0; /* write_file_atomic() creates it: root's, 0755 */
                (void) asprintf_safe(ret_reason, "cannot check directory %s: %s", dir, strerror(-r));
                return r;
        }
        if (!S_ISDIR(st.st_mode)) {
                (void) asprintf_safe(ret_reason, "%s is not a directory", dir);
                return -ENOTDIR;
        }
        /* Whoever may write in the directory can swap the file the collector reads, or
         * race the rename: only a directory that only root (the daemon) writes. */
        if (st.st_uid != owner || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                (void) asprintf_safe(ret_reason,
                                     "refusing to write into directory %s (owner uid %u, mode %04o): it must be owned "
                                     "by uid %u and not writable by group or others",
                                     dir, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777), (unsigned) owner);
                return -EPERM;
        }
        return 0;
}

int metrics_write(const char *path, const Config *c, const Plan *p, const MetricsCounters *m, char **ret_reason) {
        _cleanup_free_ char *text = NULL;
        int r;

        assert(path);
        assert(c);
        assert(p);
        assert(m);

        r = metrics_check_dir(path, 0, ret_reason);
        if (r < 0)
                return r;
        r = metrics_format(c, p, m, &text);
        if (r < 0)
                return r;
        return write_file_atomic_full(path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
}
