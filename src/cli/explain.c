/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* explain: one disk's facts, the rules tried in order, and its plan with the file,
 * line and column every desired value comes from. */
#include <assert.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "escape.h"
#include "log.h"
#include "nvme-feature.h"
#include "plan-json.h"
#include "util.h"

static void explain_nvme(const Device *d) {
        const NvmeCtrl *n = d->nvme;
        NvmeQueueMap m;

        assert(d);

        printf("  controller:  %s (%s%s%s, %s), NUMA node %d\n", esc(n->name), esc(n->transport ?: "?"),
               n->address ? " " : "", esc(n->address ?: ""), esc(n->state ?: "?"), n->numa_node);
        if (n->identified) {
                printf("    APST:      %s%s; %u power state%s\n", n->apsta ? "supported" : "not supported",
                       n->apsta ? (n->has_pm_qos ? ", driven by the kernel" : ", not driven by the kernel (quirk)") : "",
                       n->npss + 1, n->npss ? "s" : "");
                if (n->granted_sq)
                        printf("    queues:    %u I/O submission / %u completion queues granted (Get Features 0x07)\n",
                               n->granted_sq, n->granted_cq);
        } else
                printf("    identify:  %s\n", esc(n->identify_error ?: "not answered"));
        if (n->sqsize)
                printf("    depth:     %u entries per I/O queue in use (min of CAP.MQES+1 and nvme.io_queue_depth)\n",
                       n->sqsize + 1);
        if (nvme_queue_map_from_queues(d->queues, d->n_queues, d->io_poll, &m) == 0 && m.known)
                printf("    maps:      %u default, %u read, %u poll queue%s%s\n", m.n_default, m.n_read, m.n_poll,
                       m.n_poll == 1 ? "" : "s", m.n_poll ? " (io_poll=1)" : "");
}

int cli_explain(Cli *c, const char *name) {
        _cleanup_(config_freep) Config *cfg = NULL;
        _cleanup_(device_plan_freep) DevicePlan *dp = NULL;
        char *names[] = { (char *) name, NULL };
        int targets[_KNOB_MAX];
        json_object *j = NULL, *rules = NULL;
        DeviceList named = {};
        const char *bad = NULL;
        const Device *d;
        Plan pl = {};
        int r, wk = 4, wx = 7, wc = 7, ws = 5;

        assert(c);
        assert(name);

        r = cli_load_config(c, &cfg, NULL);
        if (r < 0)
                return cli_config_exit(r);
        r = tuner_lookup(&c->tuner, names, &named, &bad);
        if (r < 0)
                return cli_lookup_error(name, r);
        r = tuner_plan(&c->tuner, cfg, names, &named, &pl, targets);
        if (r >= 0) {
                dp = TAKE_PTR(pl.devices[0]);
                pl.n = 0;
                plan_done(&pl);
                /* A dry run that never rebinds: explain writes nothing. */
                r = tuner_reconcile_device(&c->tuner, dp, RECONCILE_DRY_RUN, targets, false);
        }
        if (r < 0)
                return log_error_errno(r, "Cannot plan %s: %m", esc(name)), EXIT_FAILED;
        d = dp->device;

        if (c->json) {
                Plan one = { .devices = &dp, .n = 1 };
                j = report_plan_document("explain", &one, true);
                rules = json_object_new_array();
                if (!j || !rules) {
                        json_object_put(j);
                        json_object_put(rules);
                        return log_oom(), EXIT_FAILED;
                }
        } else {
                printf("%s  (%s%s%s)\n", esc(d->name), esc(d->transport), d->model ? ", " : "", esc(d->model ?: ""));
                printf("  syspath:     %s\n", esc(d->syspath));
                printf("  serial:      %s   firmware: %s   wwn: %s\n", esc(d->serial ?: "-"), esc(d->firmware ?: "-"),
                       esc(d->wwn ?: "-"));
                printf("  rotational:  %s   size: %" PRIu64 " bytes   NUMA node: %d\n", d->rotational ? "yes" : "no",
                       d->size_bytes, d->numa_node);
                if (d->has_mq)
                        printf("  queues:      %zu hardware queue%s, tag depth %u\n", d->n_queues,
                               d->n_queues == 1 ? "" : "s", d->nr_tags);
                else
                        printf("  queues:      bio-based (no blk-mq queue)%s\n",
                               d->multipath_head ? "; NVMe multipath head: tune its nvmeXcYnZ paths" : "");
                for (size_t q = 0; q < d->n_queues; q++)
                        printf("    mq/%u: CPUs %s\n", d->queues[q].index, esc(d->queues[q].cpu_list ?: "(none)"));
                if (d->multipath_head_name)
                        printf("  multipath:   hidden path of %s\n", esc(d->multipath_head_name));
                if (d->nqn)
                        printf("  NQN:         %s\n", esc(d->nqn));
                if (d->nvme)
                        explain_nvme(d);
                printf("\nRules, in the order they are tried:\n");
        }

        if (!streq(dp->rule, "IOTUNED_PROFILE"))
                for (size_t i = 0; i < cfg->n_rules; i++) {
                        _cleanup_free_ char *why = NULL;
                        const Rule *rule = &cfg->rules[i];
                        bool m = rule_matches(rule, d, &why);
                        if (j) {
                                json_object *e = json_object_new_object();
                                json_object_object_add(e, "rule", json_object_new_string(rule->name));
                                json_object_object_add(e, "matched", json_object_new_boolean(m));
                                json_object_object_add(e, "why", why ? json_object_new_string(why) : NULL);
                                json_object_object_add(e, "origin", report_mark_json(&rule->mark));
                                json_object_array_add(rules, e);
                        } else
                                printf("  %-5s %s (%s:%u): %s\n", m ? "MATCH" : "no", esc(rule->name), esc(rule->mark.file),
                                       rule->mark.line, esc(why ?: ""));
                        if (m)
                                break;
                }

        if (j) {
                json_object_object_add(j, "rules", rules);
                output_json_print(j);
                json_object_put(j);
                return dp->error ? EXIT_FAILED : EXIT_OK;
        }

        if (streq(dp->rule, "IOTUNED_PROFILE"))
                printf("  (skipped: the udev property IOTUNED_PROFILE pins the profile)\n");
        if (dp->excluded) {
                printf("\nResult: excluded by rule %s; iotuned leaves %s alone.\n", esc(dp->rule), esc(d->name));
                return EXIT_OK;
        }
        if (dp->error) {
                printf("\nResult: %s\n", esc(dp->error));
                return EXIT_FAILED;
        }
        printf("\nResult: profile %s (rule %s: %s)\n", esc(dp->profile), esc(dp->rule), esc(dp->reason ?: ""));
        printf("IRQ placement: %s%s%s%s\n\n", irq_placement_to_string(dp->irq_placement),
               dp->keep_irqbalance_away ? ", irqbalance kept away from pinned vectors" : "",
               dp->irq_note ? "; " : "", esc(dp->irq_note ?: ""));
        /* Column widths follow the content, as in the plan table. */
        for (size_t k = 0; k < dp->n_settings; k++) {
                const Setting *s = &dp->settings[k];
                char lb[128];
                wk = MAX(wk, (int) strlen(output_setting_label(s, lb, sizeof(lb))));
                wx = MAX(wx, (int) strlen(esc(s->effective ?: s->desired)));
                wc = MAX(wc, (int) strlen(esc(s->observed ?: "-")));
                ws = MAX(ws, (int) strlen(s->state == STATE_CHANGED ? "would-change" : setting_state_to_string(s->state)));
        }
        output_row("  %-*s  %-*s  %-*s  %-*s  %s", wk, "KNOB", wx, "DESIRED", wc, "CURRENT", ws, "STATE", "FROM");
        for (size_t k = 0; k < dp->n_settings; k++) {
                const Setting *s = &dp->settings[k];
                char lb[128], st[64];
                output_row("  %-*s  %-*s  %-*s  %s  %s:%u:%u%s%s", wk, output_setting_label(s, lb, sizeof(lb)), wx,
                           esc(s->effective ?: s->desired), wc, esc(s->observed ?: "-"),
                           output_state_cell(s->state == STATE_CHANGED ? "would-change" : setting_state_to_string(s->state),
                                             ws, st, sizeof(st)),
                           esc(s->origin.file ?: "-"), s->origin.line, s->origin.column, s->note ? "  # " : "",
                           esc(s->note ?: ""));
        }
        return EXIT_OK;
}

