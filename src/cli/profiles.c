/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration verbs: profiles (list, show) and check-config. */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "escape.h"
#include "log.h"
#include "plan-json.h"
#include "util.h"

static void print_profile_json(json_object *arr, const Profile *p, bool with_knobs) {
        json_object *o = json_object_new_object();

        assert(arr);
        assert(p);

        json_object_object_add(o, "name", json_object_new_string(p->name));
        json_object_object_add(o, "description", p->description ? json_object_new_string(p->description) : NULL);
        json_object_object_add(o, "extends", p->extends ? json_object_new_string(p->extends) : NULL);
        json_object_object_add(o, "path", json_object_new_string(p->path));
        if (with_knobs) {
                /* One object per profile section, each knob under the section it is written in. */
                json_object *queue = json_object_new_object(), *nvme = json_object_new_object(),
                            *pcie = json_object_new_object();
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        const char *sec = knob_table[k].section;
                        json_object *e;
                        if (!p->resolved[k].value)
                                continue;
                        e = json_object_new_object();
                        json_object_object_add(e, "value", json_object_new_string(p->resolved[k].value));
                        json_object_object_add(e, "origin", report_mark_json(&p->resolved[k].origin));
                        json_object_object_add(streq(sec, "nvme") ? nvme : streq(sec, "pcie") ? pcie : queue,
                                               knob_table[k].name, e);
                }
                if (p->nvme_apply_resolved.value) {
                        json_object *e = json_object_new_object();
                        json_object_object_add(e, "value", json_object_new_string(p->nvme_apply_resolved.value));
                        json_object_object_add(e, "origin", report_mark_json(&p->nvme_apply_resolved.origin));
                        json_object_object_add(nvme, "apply", e);
                }
                json_object_object_add(o, "queue", queue);
                json_object_object_add(o, "nvme", nvme);
                json_object_object_add(o, "pcie", pcie);
                {
                        json_object *irq = json_object_new_object();
                        const IrqPolicy *ip = &p->irq_resolved;
                        json_object_object_add(irq, "placement",
                                               ip->placement == IRQ_PLACEMENT_UNSET
                                                       ? NULL
                                                       : json_object_new_string(irq_placement_to_string(ip->placement)));
                        json_object_object_add(irq, "cpus", ip->cpus ? json_object_new_string(ip->cpus) : NULL);
                        json_object_object_add(irq, "keep_irqbalance_away",
                                               ip->keep_irqbalance_away < 0 ? NULL
                                                                            : json_object_new_boolean(ip->keep_irqbalance_away));
                        json_object_object_add(irq, "origin", report_mark_json(&ip->origin));
                        json_object_object_add(o, "irq", irq);
                }
        }
        json_object_array_add(arr, o);
}

int cli_profiles(Cli *c, const char *action, const char *name) {
        _cleanup_(config_freep) Config *cfg = NULL;
        const Profile *p;
        int r;

        assert(c);

        r = cli_load_config(c, &cfg, NULL);
        if (r < 0)
                return cli_config_exit(r);

        if (!action || streq(action, "list")) {
                if (c->json) {
                        json_object *j = report_document_new("profiles"), *arr = json_object_new_array();
                        for (size_t i = 0; i < cfg->n_profiles; i++)
                                print_profile_json(arr, cfg->profiles[i], false);
                        json_object_object_add(j, "profiles", arr);
                        output_json_print(j);
                        json_object_put(j);
                        return EXIT_OK;
                }
                output_row("%-16s %-12s %-44s %s", "PROFILE", "EXTENDS", "FILE", "DESCRIPTION");
                for (size_t i = 0; i < cfg->n_profiles; i++) {
                        p = cfg->profiles[i];
                        output_row("%-16s %-12s %-44s %s", esc(p->name), esc(p->extends ?: "-"), esc(p->path),
                               esc(p->description ?: ""));
                }
                return EXIT_OK;
        }

        /* show NAME */
        p = config_find_profile(cfg, name);
        if (!p) {
                log_error("No profile named '%s' (iotunectl profiles list).", esc(name));
                return EXIT_NO_DEVICE;
        }
        if (c->json) {
                json_object *j = report_document_new("profiles-show"), *arr = json_object_new_array();
                print_profile_json(arr, p, true);
                json_object_object_add(j, "profile", json_object_get(json_object_array_get_idx(arr, 0)));
                json_object_put(arr);
                output_json_print(j);
                json_object_put(j);
                return EXIT_OK;
        }
        printf("# %s: %s\n# file: %s\n", esc(p->name), esc(p->description ?: ""), esc(p->path));
        if (p->extends)
                printf("# extends: %s\n", esc(p->extends));
        for (const char *const *sec = (const char *const[]) { "queue", "nvme", "pcie", NULL }; *sec; sec++) {
                bool header = false;
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        if (!p->resolved[k].value || !streq(knob_table[k].section, *sec))
                                continue;
                        if (!header)
                                printf("%s:\n", *sec);
                        header = true;
                        printf("  %-15s %-10s # %s:%u:%u\n", knob_table[k].name, esc(p->resolved[k].value),
                               esc(p->resolved[k].origin.file), p->resolved[k].origin.line, p->resolved[k].origin.column);
                }
                if (streq(*sec, "nvme") && p->nvme_apply_resolved.value)
                        printf("%s  %-15s %-10s # %s:%u:%u\n", header ? "" : "nvme:\n", "apply",
                               esc(p->nvme_apply_resolved.value), esc(p->nvme_apply_resolved.origin.file),
                               p->nvme_apply_resolved.origin.line, p->nvme_apply_resolved.origin.column);
        }
        if (p->irq_resolved.placement != IRQ_PLACEMENT_UNSET || p->irq_resolved.keep_irqbalance_away >= 0) {
                printf("irq:\n");
                if (p->irq_resolved.placement != IRQ_PLACEMENT_UNSET)
                        printf("  %-15s %-10s # %s:%u:%u\n", "placement",
                               irq_placement_to_string(p->irq_resolved.placement), esc(p->irq_resolved.origin.file ?: "-"),
                               p->irq_resolved.origin.line, p->irq_resolved.origin.column);
                if (p->irq_resolved.cpus)
                        printf("  %-15s \"%s\"\n", "cpus", esc(p->irq_resolved.cpus));
                if (p->irq_resolved.keep_irqbalance_away >= 0)
                        printf("  %-15s %s\n", "keep_irqbalance_away",
                               p->irq_resolved.keep_irqbalance_away ? "true" : "false");
        }
        return EXIT_OK;
}

/* "a, b, c" of the configuration directories, for a message; NULL on OOM. */
static char *join_dirs(char **dirs) {
        size_t n = 1;
        char *s;

        for (char **d = dirs; d && *d; d++)
                n += strlen(*d) + 2;
        s = malloc(n);
        if (!s)
                return NULL;
        s[0] = 0;
        for (char **d = dirs; d && *d; d++) {
                if (d != dirs)
                        strcat(s, ", ");
                strcat(s, *d);
        }
        return s;
}

int cli_check_config(Cli *c, const char *candidate) {
        _cleanup_(config_freep) Config *cfg = NULL;
        Diag diag = {};
        int r, ex;

        assert(c);

        if (candidate) {
                const char *why = NULL;
                assert(c->as);
                r = config_paths_set_candidate(&c->tuner.paths, c->root, c->as, candidate, &why);
                if (r == -ENOMEM)
                        return log_oom(), EXIT_FAILED;
                if (r < 0) {
                        _cleanup_free_ char *dirs = join_dirs(c->tuner.paths.dirs);
                        log_error("--as %s: %s. Configuration is read from %s here: PATH is DIR/iotuned.yaml, "
                                  "DIR/iotuned.yaml.d/NAME.yaml or DIR/profiles/NAME.yaml for one of them.",
                                  esc(c->as), why, dirs ? esc(dirs) : "(out of memory)");
                        return EXIT_USAGE;
                }
        }
        r = cli_load_config(c, &cfg, c->json ? &diag : NULL);
        ex = r < 0 ? cli_config_exit(r) : EXIT_OK;

        if (c->json) {
                json_object *j = report_document_new("check-config"), *files = json_object_new_array(),
                            *masked = json_object_new_array(), *errors = json_object_new_array();
                json_object_object_add(j, "valid", json_object_new_boolean(ex == EXIT_OK));
                if (candidate) {
                        json_object *cj = json_object_new_object();
                        json_object_object_add(cj, "file", json_object_new_string(candidate));
                        json_object_object_add(cj, "as", json_object_new_string(c->as));
                        json_object_object_add(j, "candidate", cj);
                } else
                        json_object_object_add(j, "candidate", NULL);
                for (size_t i = 0; i < diag.n; i++) {
                        json_object *e = report_mark_json(&diag.items[i].mark);
                        if (!e) {
                                e = json_object_new_object();
                                json_object_object_add(e, "file", NULL);
                        }
                        json_object_object_add(e, "message", json_object_new_string(diag.items[i].message));
                        json_object_array_add(errors, e);
                }
                diag_done(&diag);
                json_object_object_add(j, "errors", errors);
                if (cfg) {
                        for (char **f = cfg->files; f && *f; f++)
                                json_object_array_add(files, json_object_new_string(*f));
                        for (char **f = cfg->masked; f && *f; f++)
                                json_object_array_add(masked, json_object_new_string(*f));
                        json_object_object_add(j, "default_profile", json_object_new_string(cfg->default_profile));
                        json_object_object_add(j, "rules", json_object_new_int((int) cfg->n_rules));
                        json_object_object_add(j, "profiles", json_object_new_int((int) cfg->n_profiles));
                }
                json_object_object_add(j, "files", files);
                json_object_object_add(j, "masked", masked);
                output_json_print(j);
                json_object_put(j);
                return ex;
        }
        if (ex != EXIT_OK || c->quiet)
                return ex;
        if (candidate)
                printf("With %s as %s:\n", esc(candidate), esc(c->as));
        printf("Configuration is valid: %zu rule%s, %zu profile%s, default profile %s.\n", cfg->n_rules,
               cfg->n_rules == 1 ? "" : "s", cfg->n_profiles, cfg->n_profiles == 1 ? "" : "s", esc(cfg->default_profile));
        printf("Files, in the order they were read:\n");
        for (char **f = cfg->files; f && *f; f++)
                printf("  %s\n", esc(*f));
        for (char **f = cfg->masked; f && *f; f++)
                printf("  %s (masked)\n", esc(*f));
        return EXIT_OK;
}

