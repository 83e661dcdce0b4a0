/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The main file and its drop-ins: global settings, discovery, rules; merged in
 * order into the Config (a later file overrides, rules are appended). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "util.h"

const char *const discovery_class_names[_DISCOVERY_MAX] = {
        [DISCOVERY_LOOP] = "loop",
        [DISCOVERY_DM] = "dm",
        [DISCOVERY_MD] = "md",
        [DISCOVERY_ZRAM] = "zram",
};

/* Absolute, and no "." or ".." component, no empty one ("//"), no trailing "/". */
static bool path_is_normalized(const char *p) {
        assert(p);

        if (p[0] != '/')
                return false;
        for (const char *s = p + 1;;) {
                size_t n = strcspn(s, "/");
                if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
                if (!s[n])
                        return true;
                s += n + 1;
        }
}

void file_config_done(FileConfig *f) {
        assert(f);

        free(f->default_profile);
        free(f->metrics_textfile);
        mark_done(&f->default_profile_mark);
        for (size_t i = 0; i < f->n_rules; i++)
                rule_done(&f->rules[i]);
        free(f->rules);
}

int main_file_parse(const YNode *root, FileConfig *fc, Diag *d) {
        static const char *const keys[] = { "default_profile", "rules", "discovery", "reassert",
                                            "restore_on_stop", "metrics" };
        int r = 0;

        assert(fc);
        assert(d);

        fc->restore_on_stop = -1;
        for (size_t i = 0; i < _DISCOVERY_MAX; i++)
                fc->discover[i] = -1;
        if (!root)
                return 0;
        if (node_expect_kind(root, YNODE_MAPPING, "configuration", d) < 0)
                return -EINVAL;

        for (size_t i = 0; i < root->n_pairs; i++) {
                const YPair *p = &root->pairs[i];
                const char *key = p->key->scalar;
                int q = 0;

                if (streq(key, "default_profile")) {
                        q = node_parse_profile_name(p->value, key, &fc->default_profile, d);
                        if (q == 0 && mark_copy(&fc->default_profile_mark, &p->value->mark) < 0)
                                return -ENOMEM;
                } else if (streq(key, "rules")) {
                        fc->rules_set = true;
                        if (ynode_is_null(p->value) && p->value->kind == YNODE_SCALAR)
                                continue; /* `rules:` alone: an empty list */
                        if (node_expect_kind(p->value, YNODE_SEQUENCE, "rules", d) < 0) {
                                r = -EINVAL;
                                continue;
                        }
                        fc->rules = calloc(p->value->n_items ?: 1, sizeof(Rule));
                        if (!fc->rules)
                                return -ENOMEM;
                        for (size_t j = 0; j < p->value->n_items; j++) {
                                int t = rule_parse(p->value->items[j], &fc->rules[fc->n_rules++], d);
                                if (t == -ENOMEM)
                                        return t;
                                if (t < 0)
                                        q = t;
                        }
                } else if (streq(key, "discovery")) {
                        if (node_expect_kind(p->value, YNODE_MAPPING, "discovery", d) < 0) {
                                r = -EINVAL;
                                continue;
                        }
                        for (size_t j = 0; j < p->value->n_pairs; j++) {
                                const YPair *c = &p->value->pairs[j];
                                size_t k;
                                bool b;
                                for (k = 0; k < _DISCOVERY_MAX; k++)
                                        if (streq(discovery_class_names[k], c->key->scalar))
                                                break;
                                if (k == _DISCOVERY_MAX) {
                                        node_unknown_key(c, "discovery", discovery_class_names, _DISCOVERY_MAX, d);
                                        q = -EINVAL;
                                } else if (node_parse_bool(c->value, c->key->scalar, &b, d) < 0)
                                        q = -EINVAL;
                                else
                                        fc->discover[k] = b;
                        }
                } else if (streq(key, "reassert")) {
                        const YNode *iv;
                        if (node_expect_kind(p->value, YNODE_MAPPING, "reassert", d) < 0) {
                                r = -EINVAL;
                                continue;
                        }
                        for (size_t j = 0; j < p->value->n_pairs; j++)
                                if (!streq(p->value->pairs[j].key->scalar, "interval")) {
                                        static const char *const rk[] = { "interval" };
                                        node_unknown_key(&p->value->pairs[j], "reassert", rk, 1, d);
                                        q = -EINVAL;
                                }
                        iv = ynode_get(p->value, "interval");
                        if (iv && node_expect_string(iv, "interval", d) >= 0) {
                                uint64_t u;
                                if (parse_duration_usec(iv->scalar, &u) < 0 || u < MIN_REASSERT_USEC ||
                                    u > MAX_REASSERT_USEC)
                                        q = diag_add(d, &iv->mark,
                                                     "invalid interval '%s': expected a duration from 100ms to 1h, "
                                                     "e.g. 5s or 500ms",
                                                     iv->scalar);
                                else
                                        fc->reassert_usec = u;
                        } else if (iv)
                                q = -EINVAL;
                } else if (streq(key, "metrics")) {
                        /* `metrics: { textfile: /var/lib/prometheus/node-exporter/iotuned.prom }`;
                         * `textfile: ""` turns it off again in a later drop-in. */
                        const YNode *tf;
                        static const char *const mk[] = { "textfile" };
                        if (node_expect_kind(p->value, YNODE_MAPPING, "metrics", d) < 0) {
                                r = -EINVAL;
                                continue;
                        }
                        for (size_t j = 0; j < p->value->n_pairs; j++)
                                if (!streq(p->value->pairs[j].key->scalar, "textfile")) {
                                        node_unknown_key(&p->value->pairs[j], "metrics", mk, 1, d);
                                        q = -EINVAL;
                                }
                        tf = ynode_get(p->value, "textfile");
                        if (tf && tf->kind == YNODE_SCALAR && !isempty(tf->scalar) && tf->scalar[0] == '/' &&
                            str_endswith(tf->scalar, ".prom") && !path_is_normalized(tf->scalar))
                                /* root writes this file: a path with ".." can point anywhere
                                 * the prefix seems not to */
                                q = diag_add(d, &tf->mark,
                                             "invalid textfile '%s': expected a normalized absolute path, without "
                                             "'.' or '..' components, '//' or a trailing '/'",
                                             tf->scalar);
                        else if (tf && (tf->kind != YNODE_SCALAR ||
                                   (!isempty(tf->scalar) && (tf->scalar[0] != '/' || !str_endswith(tf->scalar, ".prom")))))
                                q = diag_add(d, &tf->mark,
                                             "invalid textfile '%s': expected an absolute path ending in .prom "
                                             "(node_exporter's textfile collector reads only those), or \"\" for off",
                                             tf->kind == YNODE_SCALAR ? tf->scalar : "");
                        else if (tf) {
                                free(fc->metrics_textfile);
                                fc->metrics_textfile = strdup(tf->scalar ?: "");
                                if (!fc->metrics_textfile)
                                        return -ENOMEM;
                        }
                } else if (streq(key, "restore_on_stop")) {
                        bool b;
                        q = node_parse_bool(p->value, key, &b, d);
                        if (q == 0)
                                fc->restore_on_stop = b;
                } else {
                        node_unknown_key(p, "configuration", keys, ELEMENTSOF(keys), d);
                        q = -EINVAL;
                }
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        r = q;
        }
        return r;
}

int main_file_merge(Config *c, FileConfig *fc, Rule **all_rules, size_t *n_all) {
        assert(c);
        assert(all_rules);
        assert(n_all);
        assert(fc);

        if (fc->default_profile) {
                free(c->default_profile);
                c->default_profile = TAKE_PTR(fc->default_profile);
                mark_done(&c->default_profile_mark);
                c->default_profile_mark = fc->default_profile_mark;
                fc->default_profile_mark = (Mark) {};
        }
        for (size_t i = 0; i < _DISCOVERY_MAX; i++)
                if (fc->discover[i] >= 0)
                        c->discover[i] = fc->discover[i];
        if (fc->reassert_usec)
                c->reassert_usec = fc->reassert_usec;
        if (fc->restore_on_stop >= 0)
                c->restore_on_stop = fc->restore_on_stop;
        if (fc->metrics_textfile) {
                free(c->metrics_textfile);
                c->metrics_textfile = isempty(fc->metrics_textfile) ? NULL : TAKE_PTR(fc->metrics_textfile);
        }
        if (fc->rules_set) {
                /* A later file's rules are tried before an earlier file's (later wins);
                 * `rules: []` drops everything read so far. */
                Rule *n;
                if (fc->n_rules == 0) {
                        for (size_t i = 0; i < *n_all; i++)
                                rule_done(&(*all_rules)[i]);
                        *n_all = 0;
                        return 0;
                }
                n = realloc(*all_rules, (*n_all + fc->n_rules) * sizeof(Rule));
                if (!n)
                        return -ENOMEM;
                memmove(n + fc->n_rules, n, *n_all * sizeof(Rule));
                memcpy(n, fc->rules, fc->n_rules * sizeof(Rule));
                *all_rules = n;
                *n_all += fc->n_rules;
                free(fc->rules);
                fc->rules = NULL;
                fc->n_rules = 0;
        }
        return 0;
}

int config_parse_main_file(const char *path, Config *into, Diag *d) {
        _cleanup_(ynode_freep) YNode *root = NULL;
        FileConfig fc = {};
        int r;

        assert(path);
        assert(into);
        assert(d);

        r = ynode_parse_file(path, &root, d);
        if (r < 0)
                return r;
        r = main_file_parse(root, &fc, d);
        if (r == 0)
                r = main_file_merge(into, &fc, &into->rules, &into->n_rules);
        file_config_done(&fc);
        return r;
}
