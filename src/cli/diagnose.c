/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* diagnose: what the kernel's counters, the drive and the other writers say about
 * each disk (tuner_diagnose()), with the running daemon's drift counts; as a
 * list of findings per disk, most severe first, or as JSON. Reads only. */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>

#include "cli.h"
#include "diagnose.h"
#include "escape.h"
#include "log.h"
#include "plan-json.h"
#include "status.h"
#include "util.h"

/* The daemon's view: how often each of the disk's knobs drifted, whether it is in
 * conflict, and who writes it, as iotuned counted it since it tuned the disk. */
static int daemon_findings(const Status *st, DiagnoseDevice *dd) {
        const char *name = dd->plan->device->name;

        for (size_t i = 0; st && i < st->n_devices; i++) {
                const StatusDevice *d = &st->devices[i];
                if (!streq(d->device, name))
                        continue;
                for (size_t k = 0; k < d->n_settings; k++) {
                        const StatusSetting *e = &d->settings[k];
                        Finding *f;
                        if (!e->drifts && !e->conflict)
                                continue;
                        f = finding_add(&dd->findings, name, e->conflict ? "conflict" : "drift",
                                        e->conflict ? FINDING_WARNING : FINDING_NOTICE, e->object ?: e->knob, NULL,
                                        "%s drifted %u time%s since iotuned tuned it%s%s%s", e->object ?: e->knob,
                                        e->drifts, e->drifts == 1 ? "" : "s",
                                        e->conflict ? "; in conflict, iotuned holds off" : "",
                                        e->writer ? "; written by " : "", e->writer ?: "");
                        if (!f || finding_value(f, "drifts", e->drifts) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static void print_device(Cli *c, const DiagnoseReport *rep, const DiagnoseDevice *dd) {
        const DevicePlan *p = dd->plan;
        int wk = 4, wn = 4;

        printf("%s: profile %s (rule %s)", esc(p->device->name), esc(p->profile ?: "-"), esc(p->rule ?: "-"));
        if (dd->has_load)
                printf("; over %.1f s: %.0f IOPS, queue depth %.1f, await %.2f ms, utilisation %.0f%%", rep->seconds,
                       dd->load.iops, dd->load.queue_depth, dd->load.await_ms, dd->load.utilisation * 100);
        printf("\n");
        for (size_t i = 0; i < dd->findings.n; i++) {
                const Finding *f = &dd->findings.items[i];
                if (f->severity == FINDING_INFO && !c->all)
                        continue;
                wk = MAX(wk, (int) strlen(f->kind));
                wn = MAX(wn, (int) strlen(f->knob ?: "-"));
        }
        bool any = false;
        for (size_t i = 0; i < dd->findings.n; i++) {
                const Finding *f = &dd->findings.items[i];
                char cell[64];
                if (f->severity == FINDING_INFO && !c->all)
                        continue;
                any = true;
                output_row("  %s  %-*s  %-*s  %s",
                           output_state_cell(finding_severity_to_string(f->severity), 8, cell, sizeof(cell)), wk,
                           esc(f->kind), wn, esc(f->knob ?: "-"), esc(f->summary));
        }
        if (!any)
                printf("  nothing found%s\n", c->all ? "" : " (--all also shows what was measured)");
}

static json_object *report_json(const DiagnoseReport *rep, bool daemon) {
        json_object *doc = report_document_new("diagnose"), *devs = json_object_new_array();

        if (!doc || !devs) {
                json_object_put(doc);
                json_object_put(devs);
                return NULL;
        }
        json_object_object_add(doc, "seconds", json_object_new_double(rep->seconds));
        json_object_object_add(doc, "daemon_status", json_object_new_boolean(daemon));
        for (size_t i = 0; i < rep->n; i++) {
                const DiagnoseDevice *dd = &rep->items[i];
                json_object *d = json_object_new_object();
                json_object_object_add(d, "device", json_object_new_string(dd->plan->device->name));
                json_object_object_add(d, "profile",
                                       dd->plan->profile ? json_object_new_string(dd->plan->profile) : NULL);
                json_object_object_add(d, "rule", dd->plan->rule ? json_object_new_string(dd->plan->rule) : NULL);
                json_object_object_add(
                        d, "worst",
                        json_object_new_string(finding_severity_to_string(finding_list_worst(&dd->findings))));
                json_object_object_add(d, "findings", report_findings_json(&dd->findings));
                json_object_array_add(devs, d);
        }
        json_object_object_add(doc, "devices", devs);
        return doc;
}

int cli_diagnose(Cli *c, char **devices) {
        _cleanup_(config_freep) Config *cfg = NULL;
        DiagnoseOptions o = {.interval_usec = DIAGNOSE_INTERVAL_DEFAULT_USEC, .health = true};
        DiagnoseReport rep = {};
        Status st = {};
        FindingSeverity worst = FINDING_INFO;
        const char *bad = NULL;
        bool daemon;
        int r;

        assert(c);

        if (c->interval && (parse_duration_usec(c->interval, &o.interval_usec) < 0 || o.interval_usec < 100000 ||
                            o.interval_usec > 60000000)) {
                log_error("Invalid --interval '%s': expected a duration from 100 ms to 60 s, e.g. 2s.",
                          esc(c->interval));
                return EXIT_USAGE;
        }
        r = cli_load_config(c, &cfg, NULL);
        if (r < 0)
                return cli_config_exit(r);
        if (!c->json && !c->quiet)
                fprintf(stderr, "Sampling for %.1f s...\n", (double) o.interval_usec / 1e6);
        r = tuner_diagnose(&c->tuner, cfg, devices, &o, &rep, &bad);
        if (r < 0 && bad)
                return cli_lookup_error(bad, r);
        if (r < 0) {
                log_error_errno(r, "Diagnosing failed: %m");
                return EXIT_FAILED;
        }
        daemon = cli_read_status(c, &st, true) >= 0;
        for (size_t i = 0; i < rep.n; i++) {
                r = daemon_findings(daemon ? &st : NULL, &rep.items[i]);
                if (r < 0) {
                        status_done(&st);
                        diagnose_report_done(&rep);
                        return log_oom(), EXIT_FAILED;
                }
                /* The daemon's findings join the measured ones. */
                finding_list_sort(&rep.items[i].findings);
                worst = MAX(worst, finding_list_worst(&rep.items[i].findings));
        }
        if (daemon)
                status_done(&st);

        if (c->json) {
                json_object *j = report_json(&rep, daemon);
                if (!j) {
                        diagnose_report_done(&rep);
                        return log_oom(), EXIT_FAILED;
                }
                output_json_print(j);
                json_object_put(j);
        } else {
                for (size_t i = 0; i < rep.n; i++) {
                        if (i)
                                printf("\n");
                        print_device(c, &rep, &rep.items[i]);
                }
                if (rep.n == 0)
                        printf("No disk to diagnose.\n");
                else if (!daemon)
                        printf("\n(iotuned is not running: no drift counts.)\n");
        }
        diagnose_report_done(&rep);
        return worst == FINDING_CRITICAL ? EXIT_FAILED : worst == FINDING_WARNING ? EXIT_DRIFT : EXIT_OK;
}
