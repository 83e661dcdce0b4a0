/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status: the daemon's view, from the state file it rewrites atomically on every
 * change (status.h reads it as untrusted input). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "escape.h"
#include "fileio.h"
#include "log.h"
#include "rootfs.h"
#include "status.h"
#include "util.h"

/* One line per NVMe controller behind the tuned disks: identity, queue maps, APST. */
static void status_nvme_controllers(const Status *st) {
        _cleanup_strv_free_ char **seen = NULL;

        assert(st);

        for (size_t i = 0; i < st->n_devices; i++) {
                const StatusNvme *n = st->devices[i].nvme;
                if (!n || !n->controller || strv_contains(seen, n->controller) || strv_extend(&seen, n->controller) < 0)
                        continue;
                if (strv_length(seen) == 1)
                        printf("\nNVMe controllers:\n");
                printf("  %-8s %s, %s, firmware %s", esc(n->controller), esc(n->address ?: n->transport ?: "?"),
                       esc(n->model ?: "?"), esc(n->firmware ?: "?"));
                if (n->has_maps)
                        printf("; queues %u default, %u read, %u poll", n->maps_default, n->maps_read, n->maps_poll);
                if (n->apst_supported >= 0)
                        printf("; APST %s", n->apst_supported ? "supported" : "not supported");
                printf("\n");
        }
}

/* One line per NVMe multipath path disk, under its head: the controller it goes
 * through and its state. A path that is not live is lost for now, not failed. */
static void status_multipath_paths(const Status *st) {
        bool any = false;

        assert(st);

        for (size_t i = 0; i < st->n_devices; i++) {
                const StatusDevice *d = &st->devices[i];
                const StatusPath *p = d->path;
                if (!p)
                        continue;
                if (!any)
                        printf("\nNVMe multipath paths:\n");
                any = true;
                printf("  %-8s %-12s via %-8s %s", esc(p->head), esc(d->device), esc(p->controller ?: "?"),
                       esc(p->state ?: "unknown"));
                if (p->ana_state)
                        printf(", ANA %s", esc(p->ana_state));
                if (p->state && !streq(p->state, "live"))
                        printf(" (path lost for now: not a failure)");
                printf("\n");
        }
}

int cli_read_status(Cli *c, Status *ret, bool quiet) {
        const char *root = c->tuner.root;
        _cleanup_free_ char *path = NULL, *text = NULL, *error = NULL;
        Status st = {};
        int r;

        assert(c);
        assert(ret);

        if (asprintf_safe(&path, "%s%s/status.json", root, IOTUNED_RUN_DIR) < 0)
                return log_oom();
        /* Untrusted: not a link, a regular file (a FIFO would block), bounded, and
         * under --root found inside the root. */
        r = root_read_regular_file(root, IOTUNED_RUN_DIR "/status.json", STATUS_FILE_MAX, &text);
        if (r == -ENOENT) {
                if (!quiet)
                        log_error("iotuned is not running (no %s). 'iotunectl plan' shows what it would do.",
                                  esc(path));
                return -ESRCH;
        }
        if (r < 0) {
                if (!quiet)
                        log_error("Cannot read %s: %s", esc(path), file_strerror(r));
                return r;
        }
        r = status_parse(text, &st, &error);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                if (!quiet)
                        log_error("%s: %s", esc(path), esc(error));
                return r;
        }
        if (st.pid <= 0 || (kill(st.pid, 0) < 0 && errno == ESRCH)) {
                if (!quiet)
                        log_error("iotuned is not running (%s is left over from pid %d).", esc(path), st.pid);
                status_done(&st);
                return -ESRCH;
        }
        *ret = st;
        return 0;
}

int cli_status(Cli *c) {
        Status st = {};
        char **summaries = NULL;
        int r, ex = EXIT_OK, wd = 6, wp = 7, wr = 4, ws = 8;

        assert(c);

        r = cli_read_status(c, &st, false);
        if (r == -ESRCH)
                return EXIT_NOT_RUNNING;
        if (r < 0)
                return EXIT_FAILED;

        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                if (d->error)
                        ex = EXIT_FAILED;
                for (size_t k = 0; k < d->n_settings; k++)
                        if (d->settings[k].state == STATE_FAILED)
                                ex = EXIT_FAILED;
                        else if (d->settings[k].state == STATE_DRIFTED && ex == EXIT_OK)
                                ex = EXIT_DRIFT;
        }

        if (c->json) {
                output_json_print(st.root);
                status_done(&st);
                return ex;
        }

        printf("iotuned is running (pid %d): %zu device%s", st.pid, st.n_devices, st.n_devices == 1 ? "" : "s");
        if (st.has_drifts_corrected)
                printf(", %u drift%s corrected", st.drifts_corrected, st.drifts_corrected == 1 ? "" : "s");
        if (st.conflicts)
                printf(", %u conflict%s", st.conflicts, st.conflicts == 1 ? "" : "s");
        if (st.irqbalance_state)
                printf("\nirqbalance: %s", esc(st.irqbalance_state));
        printf("\n\n");
        /* Column widths follow the content, as in the plan table. */
        summaries = calloc(st.n_devices + 1, sizeof(char *));
        if (!summaries) {
                status_done(&st);
                return log_oom(), EXIT_FAILED;
        }
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                unsigned counts[_STATE_MAX] = {};
                char summary[256] = "";
                size_t off = 0;

                /* "changed" (written by iotuned and holding) stays apart from "ok"
                 * (already as desired), as in --json */
                for (size_t k = 0; k < d->n_settings; k++)
                        counts[d->settings[k].state]++;
                for (size_t s = 0; s < _STATE_MAX; s++)
                        if (counts[s] && off < sizeof(summary))
                                off += snprintf(summary + off, sizeof(summary) - off, "%s%u %s", off ? ", " : "",
                                                counts[s], setting_state_to_string(s));
                if (d->excluded)
                        snprintf(summary, sizeof(summary), "excluded");
                if (d->error)
                        str_escape_buf(d->error, summary, sizeof(summary));
                summaries[i] = strdup(summary);
                if (!summaries[i]) {
                        strv_free(summaries);
                        status_done(&st);
                        return log_oom(), EXIT_FAILED;
                }
                wd = MAX(wd, (int) strlen(esc(d->device)));
                wp = MAX(wp, (int) strlen(esc(d->profile ?: "-")));
                wr = MAX(wr, (int) strlen(esc(d->rule ?: "-")));
                ws = MAX(ws, (int) strlen(summary));
        }
        output_row("%-*s  %-*s  %-*s  %-*s  %s", wd, "DEVICE", wp, "PROFILE", wr, "RULE", ws, "SETTINGS", "DRIFTS");
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                uint64_t drifts = 0;

                for (size_t k = 0; k < d->n_settings; k++)
                        drifts += d->settings[k].drifts;
                output_row("%-*s  %-*s  %-*s  %-*s  %" PRIu64, wd, esc(d->device), wp, esc(d->profile ?: "-"), wr,
                           esc(d->rule ?: "-"), ws, summaries[i], drifts);
        }
        strv_free(summaries);
        status_nvme_controllers(&st);
        status_multipath_paths(&st);
        /* Anything not as desired, spelled out. */
        for (size_t i = 0; i < st.n_devices; i++) {
                const StatusDevice *d = &st.devices[i];
                for (size_t k = 0; k < d->n_settings; k++) {
                        const StatusSetting *e = &d->settings[k];
                        if (e->state == STATE_OK || e->state == STATE_CHANGED || e->state == STATE_UNSUPPORTED ||
                            e->state == STATE_MANAGED)
                                continue;
                        printf("  %s %s: %s (desired %s, observed %s)%s%s\n", esc(d->device), esc(e->object ?: e->knob),
                               setting_state_to_string(e->state), esc(e->effective ?: "-"), esc(e->observed ?: "-"), e->note ? ": " : "",
                               esc(e->note ?: ""));
                }
                /* Who fights iotuned over a knob, where it was found. */
                for (size_t k = 0; k < d->n_settings; k++) {
                        const StatusSetting *e = &d->settings[k];
                        if (e->conflict || e->writer)
                                printf("  %s %s: %s%u drift%s%s%s%s\n", esc(d->device), esc(e->object ?: e->knob),
                                       e->conflict ? "in conflict (" : "", e->drifts, e->drifts == 1 ? "" : "s",
                                       e->conflict ? ")" : "", e->writer ? "; written by " : "",
                                       esc(e->writer ?: ""));
                }
                for (size_t k = 0; k < d->n_findings; k++) {
                        const StatusFinding *f = &d->findings[k];
                        if (streq(f->severity, "info"))
                                continue;
                        printf("  %s %s: %s\n", esc(d->device), esc(f->kind), esc(f->summary));
                }
        }
        status_done(&st);
        return ex;
}
