/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Profiles: one file each, `extends` chains checked for loops and length, and
 * each resolved to the values it ends up with (and where each was written). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"

Profile *profile_free(Profile *p) {
        if (!p)
                return NULL;
        free(p->name);
        free(p->description);
        free(p->path);
        free(p->extends);
        mark_done(&p->extends_mark);
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                value_done(&p->knobs[i]);
                value_done(&p->resolved[i]);
        }
        irq_policy_done(&p->irq);
        irq_policy_done(&p->irq_resolved);
        value_done(&p->nvme_apply);
        value_done(&p->nvme_apply_resolved);
        free(p);
        return NULL;
}

int profile_cmp_name(const void *a, const void *b) {
        assert(a);
        assert(b);

        return strcmp((*(Profile *const *) a)->name, (*(Profile *const *) b)->name);
}

static int cmp_name_profile(const void *key, const void *b) {
        assert(key);
        assert(b);

        return strcmp(key, (*(Profile *const *) b)->name);
}

static Profile *find_profile_mut(const Config *c, const char *name) {
        Profile **p;

        assert(name);
        assert(c);

        if (!c->profiles_by_name) {
                /* A Config built by hand (tests); config_load() always builds the index. */
                for (size_t i = 0; i < c->n_profiles; i++)
                        if (streq(c->profiles[i]->name, name))
                                return c->profiles[i];
                return NULL;
        }
        p = bsearch(name, c->profiles_by_name, c->n_profiles, sizeof(Profile *), cmp_name_profile);
        return p ? *p : NULL;
}

const Profile *config_find_profile(const Config *c, const char *name) {
        assert(c);
        assert(name);

        return find_profile_mut(c, name);
}

int profile_parse(const YNode *root, const char *path, const char *basename_name, Profile **ret, Diag *d) {
        static const char *const keys[] = { "name", "description", "extends", "queue", "irq", "nvme", "pcie" };
        _cleanup_(profile_freep) Profile *p = NULL;
        int r = 0;

        assert(basename_name);
        assert(ret);
        assert(path);
        assert(d);

        p = calloc(1, sizeof(Profile));
        if (!p)
                return -ENOMEM;
        p->irq.keep_irqbalance_away = p->irq_resolved.keep_irqbalance_away = -1;
        p->path = strdup(path);
        p->name = strdup(basename_name);
        if (!p->path || !p->name)
                return -ENOMEM;

        if (root) {
                if (node_expect_kind(root, YNODE_MAPPING, "profile", d) < 0)
                        return -EINVAL;
                for (size_t i = 0; i < root->n_pairs; i++) {
                        const YPair *kv = &root->pairs[i];
                        const char *key = kv->key->scalar;
                        bool handled;

                        if (streq(key, "name")) {
                                if (node_expect_string(kv->value, "name", d) < 0)
                                        r = -EINVAL;
                                else if (!streq(kv->value->scalar, basename_name))
                                        r = diag_add(d, &kv->value->mark,
                                                     "profile name '%s' does not match its file name (expected '%s')",
                                                     kv->value->scalar, basename_name);
                        } else if (streq(key, "description")) {
                                if (node_expect_string(kv->value, "description", d) < 0)
                                        r = -EINVAL;
                                else {
                                        free(p->description);
                                        p->description = strdup(kv->value->scalar);
                                        if (!p->description)
                                                return -ENOMEM;
                                }
                        } else if (streq(key, "extends")) {
                                free(p->extends);
                                p->extends = NULL;
                                if (node_parse_profile_name(kv->value, "extends", &p->extends, d) < 0)
                                        r = -EINVAL;
                                else if (mark_copy(&p->extends_mark, &kv->value->mark) < 0)
                                        return -ENOMEM;
                        } else {
                                int q = values_parse_sections(kv->value, key, p->knobs, &p->irq, &p->nvme_apply, d, &handled);
                                if (q == -ENOMEM)
                                        return q;
                                if (q < 0)
                                        r = q;
                                if (!handled) {
                                        node_unknown_key(kv, "profile", keys, ELEMENTSOF(keys), d);
                                        r = -EINVAL;
                                }
                        }
                }
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* Position of a profile in profiles_by_name, -1 if there is none of that name. */
static ssize_t profile_index(const Config *c, const char *name) {
        Profile **p;

        assert(c);
        assert(name);

        p = bsearch(name, c->profiles_by_name, c->n_profiles, sizeof(Profile *), cmp_name_profile);
        return p ? p - c->profiles_by_name : -1;
}

/* Check every `extends:` reference: the parent exists, the chain never comes back
 * to where it started (each profile of a cycle is reported at its own line) and is
 * at most CONFIG_MAX_EXTENDS_CHAIN profiles long. Linear in the number of profiles
 * (plus the lookups): every profile is walked once and its chain length kept.
 * Works on indexes into profiles_by_name; reports in file order. */
int profiles_check_extends(Config *c, Diag *d) {
        enum { NEW, ON_PATH, DONE, CYCLE, BAD };
        _cleanup_free_ ssize_t *parent = NULL;
        _cleanup_free_ size_t *path = NULL;
        _cleanup_free_ unsigned *depth = NULL;
        _cleanup_free_ unsigned char *state = NULL;
        size_t n;
        int r = 0;

        assert(c);
        assert(d);

        n = c->n_profiles;
        parent = calloc(n ?: 1, sizeof(ssize_t));
        path = calloc(n ?: 1, sizeof(size_t));
        depth = calloc(n ?: 1, sizeof(unsigned));
        state = calloc(n ?: 1, 1);
        if (!parent || !path || !depth || !state)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const Profile *p = c->profiles_by_name[i];
                parent[i] = p->extends ? profile_index(c, p->extends) : -1;
                if (p->extends && parent[i] < 0)
                        state[i] = BAD; /* reported below, in file order */
        }
        for (size_t i = 0; i < n; i++) {
                size_t len = 0, k;
                ssize_t j = (ssize_t) i;
                unsigned base;

                while (j >= 0 && state[j] == NEW) {
                        state[j] = ON_PATH;
                        path[len++] = (size_t) j;
                        j = parent[j];
                }
                if (j >= 0 && state[j] == ON_PATH) {
                        /* path[k..len) is a cycle; what leads into it is not checked further */
                        for (k = 0; path[k] != (size_t) j; k++)
                                ;
                        for (size_t m = k; m < len; m++)
                                state[path[m]] = CYCLE;
                        for (size_t m = 0; m < k; m++)
                                state[path[m]] = BAD;
                        continue;
                }
                if (j >= 0 && state[j] != DONE) {
                        for (size_t m = 0; m < len; m++)
                                state[path[m]] = BAD;
                        continue;
                }
                base = j >= 0 ? depth[j] : 0;
                while (len > 0) {
                        k = path[--len];
                        depth[k] = ++base;
                        state[k] = DONE;
                }
        }
        for (size_t i = 0; i < n; i++) {
                Profile *p = c->profiles[i];
                ssize_t x = profile_index(c, p->name);
                char chain[1024];
                size_t off;

                if (!p->extends)
                        continue;
                if (parent[x] < 0) {
                        r = diag_add(d, &p->extends_mark, "profile '%s' extends unknown profile '%s'", p->name,
                                     p->extends);
                        continue;
                }
                if (state[x] == CYCLE) {
                        off = snprintf(chain, sizeof(chain), "%s", p->name);
                        for (ssize_t y = parent[x]; off < sizeof(chain); y = parent[y]) {
                                off += snprintf(chain + off, sizeof(chain) - off, " -> %s",
                                                c->profiles_by_name[y]->name);
                                if (y == x)
                                        break;
                        }
                        r = diag_add(d, &p->extends_mark, "'extends' cycle: %s", chain);
                        continue;
                }
                /* Reported once, where the chain first gets too long. */
                if (state[x] == DONE && depth[x] == CONFIG_MAX_EXTENDS_CHAIN + 1) {
                        const Profile *top = p;
                        while (top->extends)
                                top = c->profiles_by_name[profile_index(c, top->extends)];
                        r = diag_add(d, &p->extends_mark,
                                     "'extends' chain too long: profile '%s' is number %u in a chain that starts at "
                                     "'%s'; at most %u profiles may form one chain",
                                     p->name, CONFIG_MAX_EXTENDS_CHAIN + 1, top->name, CONFIG_MAX_EXTENDS_CHAIN);
                }
        }
        return r;
}

/* Fill `resolved` from the profile and its ancestors (no cycles: check_extends ran). */
int profile_resolve(Config *c, Profile *p) {
        Profile *parent;
        int r;

        assert(c);
        assert(p);

        parent = p->extends ? find_profile_mut(c, p->extends) : NULL;
        /* A parent is resolved first through its child; resolving it again would
         * copy its values a second time over the first (and lose those). */
        if (p->resolved_done)
                return 0;
        if (parent && !parent->resolved_done) {
                r = profile_resolve(c, parent);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < _KNOB_MAX; k++) {
                const Value *src = p->knobs[k].value ? &p->knobs[k] : parent ? &parent->resolved[k] : NULL;
                if (!src || !src->value || p->resolved[k].value)
                        continue;
                p->resolved[k].value = strdup(src->value);
                if (!p->resolved[k].value || mark_copy(&p->resolved[k].origin, &src->origin) < 0)
                        return -ENOMEM;
        }
        {
                const Value *src = p->nvme_apply.value ? &p->nvme_apply : parent ? &parent->nvme_apply_resolved : NULL;
                if (src && src->value) {
                        p->nvme_apply_resolved.value = strdup(src->value);
                        if (!p->nvme_apply_resolved.value ||
                            mark_copy(&p->nvme_apply_resolved.origin, &src->origin) < 0)
                                return -ENOMEM;
                }
        }
        /* irq: placement (with its cpus) and keep_irqbalance_away inherit separately. */
        r = irq_policy_copy(&p->irq_resolved,
                            p->irq.placement != IRQ_PLACEMENT_UNSET || !parent ? &p->irq : &parent->irq_resolved);
        if (r < 0)
                return r;
        p->irq_resolved.keep_irqbalance_away = p->irq.keep_irqbalance_away >= 0 ? p->irq.keep_irqbalance_away
                                               : parent ? parent->irq_resolved.keep_irqbalance_away
                                                        : -1;
        p->resolved_done = true;
        return 0;
}
