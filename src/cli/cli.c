/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iotunectl's steps shared by its verbs: set-up, loading the configuration,
 * naming a bad device, printing a plan. The pipeline itself is the Tuner's. */
#include <assert.h>
#include <json-c/json.h>
#include <string.h>

#include "cli.h"
#include "escape.h"
#include "log.h"
#include "plan-json.h"
#include "util.h"

int cli_init(Cli *c) {
        assert(c);

        int r = tuner_init(&c->tuner, c->root, c->config_dir);
        /* A one-shot command reports what each controller says of itself. */
        c->tuner.identify_all = true;
        return r;
}

void cli_done(Cli *c) {
        assert(c);

        tuner_done(&c->tuner);
}

int cli_load_config(Cli *c, Config **ret, Diag *ret_diag) {
        Diag diag = {};
        int r;

        assert(c);
        assert(ret);

        r = tuner_load_config(&c->tuner, ret, &diag);
        if (r == -ENOMEM) {
                diag_done(&diag);
                return log_oom();
        }
        if (r < 0) {
                if (ret_diag) {
                        *ret_diag = diag;
                        return r;
                }
                log_error("The configuration is invalid (%zu error%s); nothing was applied:", diag.n,
                          diag.n == 1 ? "" : "s");
                diag_print(&diag, stderr);
        }
        diag_done(&diag);
        return r;
}

int cli_config_exit(int r) {
        return r == -ENOMEM ? EXIT_FAILED : EXIT_CONFIG;
}

int cli_lookup_error(const char *name, int r) {
        assert(name);

        switch (r) {
        case -EISDIR:
                log_error("%s is a partition; partitions share their disk's queue, tune the disk instead.", esc(name));
                break;
        case -ENODEV:
        case -ENOENT:
                log_error("No such block disk: %s (see lsblk -d).", esc(name));
                break;
        case -ENOTBLK:
                log_error("%s is not a block device.", esc(name));
                break;
        case -EINVAL:
                log_error("Invalid device name '%s': give a kernel name (nvme0n1) or a /dev path.", esc(name));
                break;
        default:
                log_error_errno(r, "Cannot look up %s: %m", esc(name));
        }
        return EXIT_NO_DEVICE;
}

bool plan_has_state(const Plan *p, SettingState st) {
        assert(p);

        for (size_t i = 0; i < p->n; i++) {
                if (st == STATE_FAILED && p->devices[i]->error)
                        return true;
                for (size_t k = 0; k < p->devices[i]->n_settings; k++)
                        if (p->devices[i]->settings[k].state == st)
                                return true;
        }
        return false;
}

void cli_print_plan(Cli *c, const char *command, const Plan *p, bool dry_run, bool show_ok) {
        assert(c);
        assert(command);
        assert(p);

        if (c->json) {
                json_object *j = report_plan_document(command, p, dry_run);
                if (!j) {
                        log_oom();
                        return;
                }
                output_json_print(j);
                json_object_put(j);
                return;
        }
        if (!c->quiet)
                output_plan_table(p, dry_run, show_ok || c->all);
        output_plan_summary(p, command, dry_run);
}
