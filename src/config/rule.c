/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rules: a `match:` of device properties (globs, sizes, transports) and what a
 * match selects (a profile, `exclude`, `set:` values). */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "util.h"

/* Transports a rule can match; probe/device.c produces exactly these. */
static const char *const transports[] = {
        "pcie", "tcp", "rdma", "fc", "loop", "virtio", "sata", "scsi", "usb", "mmc",
        "null", "dm", "md", "zram", "unknown",
};

static void match_done(Match *m) {
        assert(m);

        free(m->kernel);
        free(m->transport);
        free(m->model);
        free(m->serial);
        free(m->firmware);
        free(m->wwn);
        free(m->nqn);
        for (size_t i = 0; i < m->n_udev; i++) {
                free(m->udev[i].key);
                free(m->udev[i].glob);
        }
        free(m->udev);
}

void rule_done(Rule *r) {
        assert(r);

        free(r->name);
        mark_done(&r->mark);
        match_done(&r->match);
        free(r->profile);
        mark_done(&r->profile_mark);
        for (size_t i = 0; i < _KNOB_MAX; i++)
                value_done(&r->set[i]);
        irq_policy_done(&r->set_irq);
        value_done(&r->set_nvme_apply);
}

/* Why a pattern can never match anything, or NULL. fnmatch(3) takes an unclosed
 * '[' literally, and no kernel name, model or udev value contains one by accident:
 * such a pattern is a typo, and a rule that silently matches nothing is worse
 * than an error. */
static const char *glob_never_matches(const char *g) {
        assert(g);

        if (!g[0])
                return "an empty pattern matches nothing";
        for (const char *s = g; *s; s++) {
                if (*s == '\\') {
                        if (!s[1])
                                return "it ends in a lone '\\'";
                        s++;
                } else if (*s == '[') {
                        const char *e = s + 1;
                        if (*e == '!' || *e == '^')
                                e++;
                        if (*e == ']')
                                e++; /* a leading ']' is a member */
                        for (; *e && *e != ']'; e++)
                                if (e[0] == '[' && (e[1] == ':' || e[1] == '.' || e[1] == '=')) {
                                        const char *close = strchr(e + 2, e[1]);
                                        if (!close || close[1] != ']')
                                                return "'[' opens a set that is never closed with ']'";
                                        e = close + 1;
                                }
                        if (!*e)
                                return "'[' opens a set that is never closed with ']'";
                        s = e;
                }
        }
        return NULL;
}

static int check_glob(const YNode *n, const char *what, Diag *d) {
        const char *why;

        assert(n);
        assert(what);
        assert(d);

        why = glob_never_matches(n->scalar);
        if (why)
                return diag_add(d, &n->mark, "invalid pattern '%s' for '%s': %s", n->scalar, what, why);
        return 0;
}

static int dup_glob(const YNode *n, const char *what, char **ret, Diag *d) {
        assert(what);
        assert(n);
        assert(ret);
        assert(d);

        if (node_expect_string(n, what, d) < 0)
                return -EINVAL;
        if (!streq(what, "name") && !streq(what, "transport") && check_glob(n, what, d) < 0)
                return -EINVAL;
        free(*ret);
        *ret = strdup(n->scalar);
        return *ret ? 0 : -ENOMEM;
}

static int parse_size_range(const YNode *n, Match *m, Diag *d) {
        /* `size: { min: 100G, max: 4T }` (either bound optional) */
        uint64_t lo = 0, hi = UINT64_MAX;

        assert(n);
        assert(m);
        assert(d);

        if (node_expect_kind(n, YNODE_MAPPING, "size", d) < 0)
                return -EINVAL;
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                uint64_t v;
                if (!streq(p->key->scalar, "min") && !streq(p->key->scalar, "max")) {
                        static const char *const keys[] = { "min", "max" };
                        node_unknown_key(p, "size", keys, 2, d);
                        return -EINVAL;
                }
                if (node_expect_string(p->value, p->key->scalar, d) < 0)
                        return -EINVAL;
                if (parse_size(p->value->scalar, &v) < 0)
                        return diag_add(d, &p->value->mark,
                                        "invalid size '%s': expected bytes with an optional K, M, G, T or P suffix",
                                        p->value->scalar);
                if (streq(p->key->scalar, "min"))
                        lo = v;
                else
                        hi = v;
        }
        if (lo > hi)
                return diag_add(d, &n->mark, "size range is empty: min is larger than max");
        m->has_size = true;
        m->size_min = lo;
        m->size_max = hi;
        return 0;
}

static int parse_match(const YNode *n, Match *m, Diag *d) {
        static const char *const keys[] = { "kernel", "transport", "model", "serial", "firmware", "wwn",
                                            "nqn", "rotational", "numa_node", "size", "udev" };
        int r = 0;

        assert(n);
        assert(m);
        assert(d);

        if (node_expect_kind(n, YNODE_MAPPING, "match", d) < 0)
                return -EINVAL;
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                const char *key = p->key->scalar;
                int q = 0;

                if (streq(key, "kernel"))
                        q = dup_glob(p->value, key, &m->kernel, d);
                else if (streq(key, "model"))
                        q = dup_glob(p->value, key, &m->model, d);
                else if (streq(key, "serial"))
                        q = dup_glob(p->value, key, &m->serial, d);
                else if (streq(key, "firmware"))
                        q = dup_glob(p->value, key, &m->firmware, d);
                else if (streq(key, "wwn"))
                        q = dup_glob(p->value, key, &m->wwn, d);
                else if (streq(key, "nqn"))
                        q = dup_glob(p->value, key, &m->nqn, d);
                else if (streq(key, "transport")) {
                        q = dup_glob(p->value, key, &m->transport, d);
                        if (q == 0) {
                                bool ok = false;
                                for (size_t j = 0; j < ELEMENTSOF(transports); j++)
                                        ok = ok || streq(transports[j], m->transport);
                                if (!ok)
                                        q = diag_add(d, &p->value->mark,
                                                     "unknown transport '%s': expected pcie, tcp, rdma, fc, loop, virtio, "
                                                     "sata, scsi, usb, mmc, null, dm, md, zram or unknown",
                                                     m->transport);
                        }
                } else if (streq(key, "rotational")) {
                        bool b;
                        q = node_parse_bool(p->value, key, &b, d);
                        if (q == 0)
                                m->rotational = b ? TRI_TRUE : TRI_FALSE;
                } else if (streq(key, "numa_node")) {
                        int v;
                        if (node_expect_string(p->value, key, d) < 0)
                                q = -EINVAL;
                        else if (safe_atoi(p->value->scalar, &v) < 0 || v < -1 || v > 1023)
                                q = diag_add(d, &p->value->mark,
                                             "invalid numa_node '%s': expected a node number, or -1 for none",
                                             p->value->scalar);
                        else {
                                m->has_numa_node = true;
                                m->numa_node = v;
                        }
                } else if (streq(key, "size"))
                        q = parse_size_range(p->value, m, d);
                else if (streq(key, "udev")) {
                        if (node_expect_kind(p->value, YNODE_MAPPING, "udev", d) < 0)
                                q = -EINVAL;
                        else {
                                m->udev = calloc(p->value->n_pairs ?: 1, sizeof(UdevMatch));
                                if (!m->udev)
                                        return -ENOMEM;
                                for (size_t j = 0; j < p->value->n_pairs; j++) {
                                        const YPair *u = &p->value->pairs[j];
                                        if (node_expect_string(u->value, u->key->scalar, d) < 0 ||
                                            check_glob(u->value, u->key->scalar, d) < 0) {
                                                q = -EINVAL;
                                                continue;
                                        }
                                        m->udev[m->n_udev].key = strdup(u->key->scalar);
                                        m->udev[m->n_udev].glob = strdup(u->value->scalar);
                                        m->n_udev++;
                                        if (!m->udev[m->n_udev - 1].key || !m->udev[m->n_udev - 1].glob)
                                                return -ENOMEM;
                                }
                        }
                } else {
                        node_unknown_key(p, "match", keys, ELEMENTSOF(keys), d);
                        q = -EINVAL;
                }
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        r = q;
        }
        return r;
}

int rule_parse(const YNode *n, Rule *rule, Diag *d) {
        static const char *const keys[] = { "name", "match", "profile", "exclude", "set" };
        bool has_match = false;
        int r = 0;

        assert(n);
        assert(rule);
        assert(d);

        rule->match.rotational = TRI_UNSET;
        rule->set_irq.keep_irqbalance_away = -1;
        if (mark_copy(&rule->mark, &n->mark) < 0)
                return -ENOMEM;
        if (node_expect_kind(n, YNODE_MAPPING, "rule", d) < 0) {
                if (asprintf_safe(&rule->name, "%s:%u", n->mark.file, n->mark.line) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }

        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                const char *key = p->key->scalar;
                int q = 0;

                if (streq(key, "name"))
                        q = dup_glob(p->value, key, &rule->name, d);
                else if (streq(key, "match")) {
                        has_match = true;
                        q = parse_match(p->value, &rule->match, d);
                } else if (streq(key, "profile")) {
                        q = node_parse_profile_name(p->value, "profile", &rule->profile, d);
                        if (q == 0 && mark_copy(&rule->profile_mark, &p->value->mark) < 0)
                                return -ENOMEM;
                } else if (streq(key, "exclude"))
                        q = node_parse_bool(p->value, key, &rule->exclude, d);
                else if (streq(key, "set")) {
                        if (node_expect_kind(p->value, YNODE_MAPPING, "set", d) < 0)
                                q = -EINVAL;
                        else
                                for (size_t j = 0; j < p->value->n_pairs; j++) {
                                        const YPair *s = &p->value->pairs[j];
                                        bool handled;
                                        int t = values_parse_sections(s->value, s->key->scalar, rule->set, &rule->set_irq,
                                                                      &rule->set_nvme_apply, d, &handled);
                                        if (t == -ENOMEM)
                                                return t;
                                        if (!handled) {
                                                static const char *const sections[] = { "queue", "irq", "nvme", "pcie" };
                                                node_unknown_key(s, "set", sections, ELEMENTSOF(sections), d);
                                                t = -EINVAL;
                                        }
                                        if (t < 0)
                                                q = t;
                                }
                } else {
                        node_unknown_key(p, "rule", keys, ELEMENTSOF(keys), d);
                        q = -EINVAL;
                }
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        r = q;
        }

        /* Named before any check can return: a rule is kept (and later checked for
         * its profile) even when it has errors, and is always named in messages. */
        if (!rule->name && asprintf_safe(&rule->name, "%s:%u", n->mark.file, n->mark.line) < 0)
                return -ENOMEM;
        if (!has_match)
                r = diag_add(d, &n->mark, "rule has no 'match:' (use 'match: {}' to match every device)");
        if (rule->exclude && rule->profile)
                r = diag_add(d, &n->mark, "rule has both 'profile' and 'exclude: true'; choose one");
        else if (!rule->exclude && !rule->profile && r == 0)
                r = diag_add(d, &n->mark, "rule needs 'profile: NAME' or 'exclude: true'");
        if (rule->exclude) {
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        if (rule->set[k].value)
                                return diag_add(d, &rule->set[k].origin, "an excluding rule cannot 'set' values");
                if (rule->set_irq.placement != IRQ_PLACEMENT_UNSET || rule->set_irq.keep_irqbalance_away >= 0 ||
                    rule->set_nvme_apply.value)
                        return diag_add(d, &n->mark, "an excluding rule cannot 'set' values");
        }
        return r;
}
