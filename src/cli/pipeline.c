/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* plan, apply, verify and restore: the Tuner's pipeline in one mode each. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"
#include "irqbalance.h"
#include "log.h"
#include "originals.h"
#include "util.h"

/* After an apply: vectors just pinned while irqbalance runs will move unless the
 * daemon keeps irqbalance away from them. */
static void note_irqbalance(Cli *c, const Plan *plan) {
        IrqBalance b = {};
        bool pinned = false;

        assert(c);
        assert(plan);

        for (size_t i = 0; i < plan->n && !pinned; i++)
                for (size_t k = 0; k < plan->devices[i]->n_settings && !pinned; k++)
                        pinned = plan->devices[i]->keep_irqbalance_away && plan->devices[i]->settings[k].irq >= 0 &&
                                 plan->devices[i]->settings[k].state == STATE_CHANGED;
        if (pinned && irqbalance_find(c->tuner.root, &b) == 0) {
                printf("note: irqbalance (pid %d) is running and will move the vectors just pinned; "
                       "iotuned (the daemon) keeps it away from them.\n", b.pid);
                irqbalance_done(&b);
        }
}

static int run_pipeline(Cli *c, char **devices, ReconcileMode mode, const char *command, bool show_ok) {
        _cleanup_(config_freep) Config *cfg = NULL;
        _cleanup_strv_free_ char **lost = NULL;
        const char *bad = NULL;
        Plan plan = {};
        int r, ex = EXIT_OK;

        assert(c);
        assert(command);

        r = cli_load_config(c, &cfg, NULL);
        if (r < 0)
                return cli_config_exit(r);
        r = tuner_run(&c->tuner, cfg, devices, mode, &plan, &lost, &bad);
        if (r < 0 && bad)
                return cli_lookup_error(bad, r);
        if (r < 0) {
                log_error_errno(r, "Planning failed: %m");
                return EXIT_FAILED;
        }
        for (char **l = lost; l && *l; l++)
                log_error("%s", esc(*l));

        cli_print_plan(c, command, &plan, mode == RECONCILE_DRY_RUN, show_ok);
        if (mode == RECONCILE_APPLY && !c->json)
                note_irqbalance(c, &plan);

        if (lost || plan_has_state(&plan, STATE_FAILED))
                ex = EXIT_FAILED;
        else if (mode == RECONCILE_VERIFY && plan_has_state(&plan, STATE_DRIFTED))
                ex = EXIT_DRIFT;
        plan_done(&plan);
        return ex;
}

int cli_plan(Cli *c, char **devices) {
        assert(c);
        return run_pipeline(c, devices, RECONCILE_DRY_RUN, "plan", true);
}

int cli_apply(Cli *c, char **devices) {
        assert(c);
        return run_pipeline(c, devices, RECONCILE_APPLY, "apply", false);
}

int cli_verify(Cli *c, char **devices) {
        assert(c);
        return run_pipeline(c, devices, RECONCILE_VERIFY, "verify", false);
}

int cli_restore(Cli *c, char **devices) {
        const char *originals_dir = c->tuner.originals_dir, *dropin = c->tuner.modprobe_dropin;
        _cleanup_strv_free_ char **names = NULL, **gone = NULL;
        Plan plan = {};
        int r, ex = EXIT_OK;

        assert(c);

        r = originals_list(originals_dir, &names);
        if (r < 0) {
                log_error_errno(r, "Cannot read %s: %m", esc(originals_dir));
                return EXIT_FAILED;
        }
        for (char **d = devices; d && *d; d++)
                if (!strv_contains(names, *d)) {
                        log_error("No recorded original values for %s in %s.", esc(*d), esc(originals_dir));
                        return EXIT_NO_DEVICE;
                }

        r = tuner_restore(&c->tuner, devices, NULL, &plan, &gone);
        if (r < 0) {
                log_error_errno(r, "Restoring failed: %m");
                return EXIT_FAILED;
        }
        cli_print_plan(c, "restore", &plan, false, false);
        if (!c->json)
                for (char **g = gone; g && *g; g++)
                        printf("%s: gone or replaced since it was tuned; its record was dropped\n", esc(*g));
        if (strv_length(devices) == 0 && access(dropin, F_OK) == 0) {
                /* The NVMe queue counts are not runtime values: their drop-in goes, and the
                 * driver's defaults come back when it next probes the controllers. */
                if (unlink(dropin) < 0) {
                        log_error_errno(errno, "Cannot remove %s: %m", esc(dropin));
                        ex = EXIT_FAILED;
                } else if (!c->json)
                        printf("removed %s: the nvme driver's own queue counts return at the next boot\n", dropin);
        }
        if (plan_has_state(&plan, STATE_FAILED))
                ex = EXIT_FAILED;
        plan_done(&plan);
        return ex;
}
