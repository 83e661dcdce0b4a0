/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The loader: collects the files, parses them, merges the main file and its
 * drop-ins, resolves the profiles and checks what refers to what; nothing is
 * returned unless all of it is valid. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "util.h"

static void *memdup_or_null(const void *p, size_t size) {
        void *c;

        assert(p || size == 0);

        if (size == 0)
                return NULL;
        c = malloc(size);
        return c ? memcpy(c, p, size) : NULL;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->default_profile);
        free(c->metrics_textfile);
        mark_done(&c->default_profile_mark);
        for (size_t i = 0; i < c->n_rules; i++)
                rule_done(&c->rules[i]);
        free(c->rules);
        for (size_t i = 0; i < c->n_profiles; i++)
                profile_free(c->profiles[i]);
        free(c->profiles);
        free(c->profiles_by_name);
        strv_free(c->files);
        strv_free(c->masked);
        free(c);
        return NULL;
}

int config_load(const ConfigPaths *paths, Config **ret, Diag *d) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfFiles mains = {}, dropins = {}, profiles = {};
        char **checked_dirs = NULL;
        size_t diag_before;
        int r = 0;

        assert(paths);
        assert(ret);
        assert(d);

        diag_before = d->n + d->n_dropped;

        c = calloc(1, sizeof(Config));
        if (!c)
                return -ENOMEM;
        c->reassert_usec = DEFAULT_REASSERT_USEC;
        c->restore_on_stop = true;

        r = conf_files_collect(paths, NULL, MAIN_CONFIG, &mains, &checked_dirs, d);
        if (r >= 0)
                r = conf_files_collect(paths, DROPIN_DIR, NULL, &dropins, &checked_dirs, d);
        if (r >= 0)
                r = conf_files_collect(paths, PROFILE_DIR, NULL, &profiles, &checked_dirs, d);
        checked_dirs = strv_free(checked_dirs);
        if (r < 0)
                goto finish;

        /* Main file first, then drop-ins in name order. */
        for (size_t pass = 0; pass < 2; pass++) {
                ConfFiles *set = pass == 0 ? &mains : &dropins;
                for (size_t i = 0; i < set->n; i++) {
                        _cleanup_(ynode_freep) YNode *root = NULL;
                        FileConfig fc = {};
                        int q;

                        if (set->items[i].masked) {
                                if (strv_extend(&c->masked, set->items[i].path) < 0) {
                                        r = -ENOMEM;
                                        goto finish;
                                }
                                continue;
                        }
                        if (strv_extend(&c->files, set->items[i].path) < 0) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        q = conf_file_parse(&set->items[i], &root, d);
                        if (q == -ENOMEM) {
                                r = q;
                                goto finish;
                        }
                        if (q == 0) {
                                /* Merge even a file with errors: the load fails anyway, and
                                 * its references still get checked, so one run shows all. */
                                q = main_file_parse(root, &fc, d);
                                if (q != -ENOMEM)
                                        q = main_file_merge(c, &fc, &c->rules, &c->n_rules);
                                if (q != -ENOMEM && c->n_rules > CONFIG_MAX_RULES) {
                                        /* this file's rules went first (see main_file_merge()) */
                                        diag_add(d, &c->rules[0].mark,
                                                 "more than %u rules in all (%zu with this file's); refusing the "
                                                 "configuration",
                                                 CONFIG_MAX_RULES, c->n_rules);
                                        file_config_done(&fc);
                                        r = -EINVAL;
                                        goto finish;
                                }
                        }
                        file_config_done(&fc);
                        if (q == -ENOMEM) {
                                r = q;
                                goto finish;
                        }
                }
        }

        for (size_t i = 0; i < profiles.n; i++) {
                _cleanup_(ynode_freep) YNode *root = NULL;
                _cleanup_free_ char *pname = NULL;
                Profile *p = NULL, **n;
                int q;

                if (profiles.items[i].masked) {
                        if (strv_extend(&c->masked, profiles.items[i].path) < 0) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        continue;
                }
                pname = strndup(profiles.items[i].name, strlen(profiles.items[i].name) - strlen(".yaml"));
                if (!pname || strv_extend(&c->files, profiles.items[i].path) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                if (!profile_name_valid(pname)) {
                        diag_add_file(d, profiles.items[i].path,
                                      "invalid profile file name: expected lowercase letters, digits, '-' and '_' before .yaml");
                        continue;
                }
                q = conf_file_parse(&profiles.items[i], &root, d);
                if (q == 0)
                        q = profile_parse(root, profiles.items[i].path, pname, &p, d);
                if (q == -ENOMEM) {
                        r = q;
                        goto finish;
                }
                if (q < 0)
                        continue;
                n = realloc(c->profiles, (c->n_profiles + 1) * sizeof(Profile *));
                if (!n) {
                        profile_free(p);
                        r = -ENOMEM;
                        goto finish;
                }
                c->profiles = n;
                c->profiles[c->n_profiles++] = p;
        }

        c->profiles_by_name = memdup_or_null(c->profiles, c->n_profiles * sizeof(Profile *));
        if (c->n_profiles && !c->profiles_by_name) {
                r = -ENOMEM;
                goto finish;
        }
        if (c->n_profiles > 1)
                qsort(c->profiles_by_name, c->n_profiles, sizeof(Profile *), profile_cmp_name);
        r = profiles_check_extends(c, d);
        if (r == -ENOMEM)
                goto finish;
        if (r == 0)
                for (size_t i = 0; i < c->n_profiles; i++) {
                        r = profile_resolve(c, c->profiles[i]);
                        if (r < 0)
                                goto finish;
                }

        /* References, checked once everything is known. */
        if (!c->default_profile) {
                c->default_profile = strdup(DEFAULT_PROFILE);
                if (!c->default_profile) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        if (!config_find_profile(c, c->default_profile)) {
                if (c->default_profile_mark.file)
                        diag_add(d, &c->default_profile_mark, "default_profile '%s' is not a known profile",
                                 c->default_profile);
                else
                        diag_add(d, NULL, "the built-in default profile '%s' is masked or missing; set default_profile",
                                 c->default_profile);
        }
        for (size_t i = 0; i < c->n_rules; i++) {
                const Rule *rule = &c->rules[i];
                if (rule->profile && !config_find_profile(c, rule->profile))
                        diag_add(d, &rule->profile_mark, "rule '%s' uses unknown profile '%s'", rule->name,
                                 rule->profile);
        }

        r = d->n + d->n_dropped > diag_before ? -EINVAL : 0;
finish:
        conf_files_done(&mains);
        conf_files_done(&dropins);
        conf_files_done(&profiles);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}
