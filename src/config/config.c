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

static Config *config_new(void) {
        Config *c;

        c = calloc(1, sizeof(Config));
        if (!c)
                return NULL;
        c->reassert_usec = DEFAULT_REASSERT_USEC;
        c->restore_on_stop = true;
        return c;
}

/* The main file, the drop-ins and the profiles, each set in the order it is read. */
static int collect_files(const ConfigPaths *paths, ConfFiles *mains, ConfFiles *dropins, ConfFiles *profiles,
                         Diag *d) {
        char **checked_dirs = NULL;
        int r;

        r = conf_files_collect(paths, NULL, MAIN_CONFIG, mains, &checked_dirs, d);
        if (r >= 0)
                r = conf_files_collect(paths, DROPIN_DIR, NULL, dropins, &checked_dirs, d);
        if (r >= 0)
                r = conf_files_collect(paths, PROFILE_DIR, NULL, profiles, &checked_dirs, d);
        strv_free(checked_dirs);
        return r < 0 ? r : 0;
}

/* The main file or one drop-in, merged into `c`: 0 also when it has errors (they are in
 * `d`), -ENOMEM, or -EINVAL when the rules of all the files so far are too many. */
static int load_main_file(Config *c, const ConfFile *f, Diag *d) {
        _cleanup_(ynode_freep) YNode *root = NULL;
        FileConfig fc = {};
        int q;

        if (f->masked)
                return strv_extend(&c->masked, f->path) < 0 ? -ENOMEM : 0;
        if (strv_extend(&c->files, f->path) < 0)
                return -ENOMEM;
        q = conf_file_parse(f, &root, d);
        if (q == -ENOMEM)
                return q;
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
                        return -EINVAL;
                }
        }
        file_config_done(&fc);
        return q == -ENOMEM ? q : 0;
}

/* Main file first, then drop-ins in name order. */
static int load_main_files(Config *c, const ConfFiles *mains, const ConfFiles *dropins, Diag *d) {
        for (size_t pass = 0; pass < 2; pass++) {
                const ConfFiles *set = pass == 0 ? mains : dropins;
                for (size_t i = 0; i < set->n; i++) {
                        int r = load_main_file(c, &set->items[i], d);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* One profile file, added to c->profiles when it is valid: 0 also when it is not (the
 * errors are in `d`), or -ENOMEM. */
static int load_profile_file(Config *c, const ConfFile *f, Diag *d) {
        _cleanup_(ynode_freep) YNode *root = NULL;
        _cleanup_free_ char *pname = NULL;
        Profile *p = NULL, **n;
        int q;

        if (f->masked)
                return strv_extend(&c->masked, f->path) < 0 ? -ENOMEM : 0;
        pname = strndup(f->name, strlen(f->name) - strlen(".yaml"));
        if (!pname || strv_extend(&c->files, f->path) < 0)
                return -ENOMEM;
        if (!profile_name_valid(pname)) {
                diag_add_file(d, f->path,
                              "invalid profile file name: expected lowercase letters, digits, '-' and '_' before .yaml");
                return 0;
        }
        q = conf_file_parse(f, &root, d);
        if (q == 0)
                q = profile_parse(root, f->path, pname, &p, d);
        if (q == -ENOMEM)
                return q;
        if (q < 0)
                return 0;
        n = realloc(c->profiles, (c->n_profiles + 1) * sizeof(Profile *));
        if (!n) {
                profile_free(p);
                return -ENOMEM;
        }
        c->profiles = n;
        c->profiles[c->n_profiles++] = p;
        return 0;
}

static int load_profile_files(Config *c, const ConfFiles *profiles, Diag *d) {
        for (size_t i = 0; i < profiles->n; i++) {
                int r = load_profile_file(c, &profiles->items[i], d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* c->profiles_by_name: the profiles sorted by name, for config_find_profile(). */
static int index_profiles(Config *c) {
        c->profiles_by_name = memdup_or_null(c->profiles, c->n_profiles * sizeof(Profile *));
        if (c->n_profiles && !c->profiles_by_name)
                return -ENOMEM;
        if (c->n_profiles > 1)
                qsort(c->profiles_by_name, c->n_profiles, sizeof(Profile *), profile_cmp_name);
        return 0;
}

/* Every `extends:` checked, then resolved: 0 also when a reference is wrong (reported in
 * `d`, and nothing resolved), or a profile_resolve() error. */
static int resolve_profiles(Config *c, Diag *d) {
        int r;

        r = profiles_check_extends(c, d);
        if (r == -ENOMEM)
                return r;
        if (r != 0)
                return 0;
        for (size_t i = 0; i < c->n_profiles; i++) {
                r = profile_resolve(c, c->profiles[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* References, checked once everything is known: each one wrong is reported in `d`;
 * -ENOMEM, else 0. */
static int check_references(Config *c, Diag *d) {
        if (!c->default_profile) {
                c->default_profile = strdup(DEFAULT_PROFILE);
                if (!c->default_profile)
                        return -ENOMEM;
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
        return 0;
}

int config_load(const ConfigPaths *paths, Config **ret, Diag *d) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfFiles mains = {}, dropins = {}, profiles = {};
        size_t diag_before;
        int r;

        assert(paths);
        assert(ret);
        assert(d);

        diag_before = d->n + d->n_dropped;

        c = config_new();
        if (!c)
                return -ENOMEM;

        r = collect_files(paths, &mains, &dropins, &profiles, d);
        if (r >= 0)
                r = load_main_files(c, &mains, &dropins, d);
        if (r >= 0)
                r = load_profile_files(c, &profiles, d);
        if (r >= 0)
                r = index_profiles(c);
        if (r >= 0)
                r = resolve_profiles(c, d);
        if (r >= 0)
                r = check_references(c, d);
        if (r >= 0)
                r = d->n + d->n_dropped > diag_before ? -EINVAL : 0;

        conf_files_done(&mains);
        conf_files_done(&dropins);
        conf_files_done(&profiles);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}
