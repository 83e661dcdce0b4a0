/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "config.h"
#include "cpuset.h"
#include "util.h"
#include "yaml-node.h"

#define MAIN_CONFIG "iotuned.yaml"
#define DROPIN_DIR "iotuned.yaml.d"
#define PROFILE_DIR "profiles"
#define DEFAULT_PROFILE "mixed"
/* Drift check interval: short enough that irqbalance's 10 s rebalance or a udev
 * rule's revert is corrected well within one of its own periods. */
#define DEFAULT_REASSERT_USEC (5ULL * 1000000ULL)
#define MIN_REASSERT_USEC (100ULL * 1000ULL)
#define MAX_REASSERT_USEC (3600ULL * 1000000ULL)

const char *const discovery_class_names[_DISCOVERY_MAX] = {
        [DISCOVERY_LOOP] = "loop",
        [DISCOVERY_DM] = "dm",
        [DISCOVERY_MD] = "md",
        [DISCOVERY_ZRAM] = "zram",
};

/* Transports a rule can match; probe/device.c produces exactly these. */
static const char *const transports[] = {
        "pcie", "tcp", "rdma", "fc", "loop", "virtio", "sata", "scsi", "usb", "mmc",
        "null", "dm", "md", "zram", "unknown",
};

/* ---- paths ------------------------------------------------------------------- */

void config_paths_done(ConfigPaths *p) {
        p->dirs = strv_free(p->dirs);
}

int config_paths_default(const char *root, const char *config_dir, ConfigPaths *ret) {
        static const char *const std[] = { IOTUNED_ETC_DIR, IOTUNED_RUN_DIR, IOTUNED_VENDOR_DIR };
        ConfigPaths p = { .builtin = true };

        if (config_dir) {
                if (strv_extend(&p.dirs, config_dir) < 0)
                        return -ENOMEM;
        } else
                for (size_t i = 0; i < ELEMENTSOF(std); i++) {
                        char *d = path_join(root && !streq(root, "/") ? root : "", std[i]);
                        if (!d || strv_push(&p.dirs, d) < 0) {
                                config_paths_done(&p);
                                return -ENOMEM;
                        }
                }
        *ret = p;
        return 0;
}

static void *memdup_or_null(const void *p, size_t size) {
        void *c;
        if (size == 0)
                return NULL;
        c = malloc(size);
        return c ? memcpy(c, p, size) : NULL;
}

/* ---- small frees ------------------------------------------------------------- */

static void value_done(Value *v) {
        free(v->value);
        v->value = NULL;
        mark_done(&v->origin);
}

static Profile *profile_free(Profile *p) {
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
DEFINE_TRIVIAL_CLEANUP_FUNC(Profile *, profile_free);

static void match_done(Match *m) {
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

static void rule_done(Rule *r) {
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

static int cmp_profile_name(const void *a, const void *b) {
        return strcmp((*(Profile *const *) a)->name, (*(Profile *const *) b)->name);
}

static int cmp_name_profile(const void *key, const void *b) {
        return strcmp(key, (*(Profile *const *) b)->name);
}

static Profile *find_profile_mut(const Config *c, const char *name) {
        Profile **p;

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
        return find_profile_mut(c, name);
}

/* ---- typed accessors on the YAML tree (each adds a diagnostic on mismatch) ----- */

static bool expect_kind(const YNode *n, YNodeKind kind, const char *what, Diag *d) {
        if (n->kind == kind)
                return true;
        diag_add(d, &n->mark, "'%s' must be %s, got %s", what, ynode_kind_name(kind), ynode_kind_name(n->kind));
        return false;
}

static bool expect_string(const YNode *n, const char *what, Diag *d) {
        if (!expect_kind(n, YNODE_SCALAR, what, d))
                return false;
        if (ynode_is_null(n)) {
                diag_add(d, &n->mark, "'%s' must not be empty", what);
                return false;
        }
        return true;
}

static void unknown_key(const YPair *p, const char *where, const char *const *keys, size_t n_keys, Diag *d) {
        char expected[512] = "";
        size_t off = 0;
        for (size_t i = 0; i < n_keys && off < sizeof(expected); i++)
                off += snprintf(expected + off, sizeof(expected) - off, "%s%s", i ? ", " : "", keys[i]);
        diag_add(d, &p->key->mark, "unknown key '%s' in %s; expected one of: %s", p->key->scalar, where, expected);
}

static bool valid_profile_name(const char *s) {
        if (!s[0] || strlen(s) > 64 || !(islower((unsigned char) s[0]) || isdigit((unsigned char) s[0])))
                return false;
        for (const char *p = s; *p; p++)
                if (!(islower((unsigned char) *p) || isdigit((unsigned char) *p) || *p == '-' || *p == '_'))
                        return false;
        return true;
}

static int parse_profile_name(const YNode *n, const char *what, char **ret, Diag *d) {
        char *c;
        if (!expect_string(n, what, d))
                return -EINVAL;
        if (!valid_profile_name(n->scalar))
                return diag_add(d, &n->mark, "invalid profile name '%s' for '%s': expected lowercase letters, digits, '-' and '_'",
                                n->scalar, what);
        c = strdup(n->scalar);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int parse_bool_node(const YNode *n, const char *what, bool *ret, Diag *d) {
        int b;
        if (!expect_string(n, what, d))
                return -EINVAL;
        b = parse_boolean(n->scalar);
        if (b >= 0 && n->quoted)
                return diag_add(d, &n->mark, "'%s' is a quoted string; write %s without quotes for a boolean", what,
                                b ? "true" : "false");
        if (b < 0)
                return diag_add(d, &n->mark, "invalid value '%s' for '%s': expected true or false", n->scalar, what);
        *ret = b;
        return 0;
}

int config_parse_knob_value(const Knob *k, const char *value, char **ret) {
        return k->parse(value, ret);
}

/* `coalescing: { threshold: 8, time_us: 100 }`, the long form of "threshold=8,time_us=100". */
static int coalescing_mapping_text(const YNode *n, char **ret, Diag *d) {
        static const char *const keys[] = { "threshold", "time_us" };
        _cleanup_free_ char *text = NULL;
        int r = 0;

        if (n->n_pairs == 0)
                return diag_add(d, &n->mark, "empty coalescing mapping: expected threshold and/or time_us");
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                char *j = NULL;
                if (!streq(p->key->scalar, "threshold") && !streq(p->key->scalar, "time_us")) {
                        unknown_key(p, "coalescing", keys, ELEMENTSOF(keys), d);
                        r = -EINVAL;
                        continue;
                }
                if (!expect_string(p->value, p->key->scalar, d)) {
                        r = -EINVAL;
                        continue;
                }
                if (asprintf_safe(&j, "%s%s%s=%s", text ?: "", text ? "," : "", p->key->scalar, p->value->scalar) < 0)
                        return -ENOMEM;
                free(text);
                text = j;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(text);
        return 0;
}

/* `nvme: { apply: reboot|rebind }`: how new queue counts may take effect. */
static int parse_nvme_apply(const YNode *n, Value *v, Diag *d) {
        if (!expect_string(n, "apply", d))
                return -EINVAL;
        if (!streq(n->scalar, "reboot") && !streq(n->scalar, "rebind"))
                return diag_add(d, &n->mark,
                                "invalid value '%s' for apply: expected reboot (write the modprobe.d drop-in and wait "
                                "for the next boot) or rebind (also rebind idle controllers now)",
                                n->scalar);
        value_done(v);
        v->value = strdup(n->scalar);
        if (!v->value || mark_copy(&v->origin, &n->mark) < 0)
                return -ENOMEM;
        return 0;
}

/* A `queue:` or `nvme:` section of knobs, in a profile or a rule's `set:`. */
static int parse_knob_section(const YNode *sec, const char *section, Value values[_KNOB_MAX], Value *nvme_apply,
                              Diag *d) {
        int r = 0;

        if (!expect_kind(sec, YNODE_MAPPING, section, d))
                return -EINVAL;
        for (size_t i = 0; i < sec->n_pairs; i++) {
                const YPair *p = &sec->pairs[i];
                const Knob *k = knob_by_name(p->key->scalar);
                _cleanup_free_ char *mapped = NULL;
                const char *text;
                char *canon = NULL;
                int q;

                if (nvme_apply && streq(p->key->scalar, "apply")) {
                        q = parse_nvme_apply(p->value, nvme_apply, d);
                        if (q == -ENOMEM)
                                return q;
                        if (q < 0)
                                r = q;
                        continue;
                }
                if (!k || !streq(k->section, section)) {
                        const char *names[_KNOB_MAX + 1];
                        size_t n = 0;
                        for (size_t j = 0; j < _KNOB_MAX; j++)
                                if (streq(knob_table[j].section, section))
                                        names[n++] = knob_table[j].name;
                        if (nvme_apply)
                                names[n++] = "apply";
                        unknown_key(p, section, names, n, d);
                        r = -EINVAL;
                        continue;
                }
                if (k->id == KNOB_NVME_COALESCING && p->value->kind == YNODE_MAPPING) {
                        q = coalescing_mapping_text(p->value, &mapped, d);
                        if (q == -ENOMEM)
                                return q;
                        if (q < 0) {
                                r = q;
                                continue;
                        }
                } else if (p->value->kind != YNODE_SCALAR) {
                        diag_add(d, &p->value->mark, "invalid value for %s: expected %s, got %s", k->name,
                                 k->expected, ynode_kind_name(p->value->kind));
                        r = -EINVAL;
                        continue;
                } else if (ynode_is_null(p->value)) {
                        diag_add(d, &p->value->mark, "missing value for %s: expected %s", k->name, k->expected);
                        r = -EINVAL;
                        continue;
                }
                text = mapped ?: p->value->scalar;
                q = k->parse(text, &canon);
                if (q == -ENOMEM)
                        return q;
                if (q == -ERANGE) {
                        diag_add(d, &p->value->mark, "value '%s' for %s is out of range: expected %s", text, k->name,
                                 k->expected);
                        r = -EINVAL;
                        continue;
                }
                if (q < 0) {
                        diag_add(d, &p->value->mark, "invalid value '%s' for %s: expected %s", text, k->name,
                                 k->expected);
                        r = -EINVAL;
                        continue;
                }
                value_done(&values[k->id]);
                values[k->id].value = canon;
                if (mark_copy(&values[k->id].origin, &p->value->mark) < 0)
                        return -ENOMEM;
        }
        return r;
}

/* `irq: { placement: queue-local, cpus: "2-7", keep_irqbalance_away: true }` */
static int parse_irq_section(const YNode *sec, IrqPolicy *p, Diag *d) {
        static const char *const keys[] = { "placement", "cpus", "keep_irqbalance_away" };
        const YNode *pl = NULL, *cpus = NULL;
        int r = 0;

        if (!expect_kind(sec, YNODE_MAPPING, "irq", d))
                return -EINVAL;
        for (size_t i = 0; i < sec->n_pairs; i++) {
                const YPair *kv = &sec->pairs[i];
                const char *key = kv->key->scalar;
                if (streq(key, "placement"))
                        pl = kv->value;
                else if (streq(key, "cpus"))
                        cpus = kv->value;
                else if (streq(key, "keep_irqbalance_away")) {
                        bool b;
                        if (parse_bool_node(kv->value, key, &b, d) < 0)
                                r = -EINVAL;
                        else
                                p->keep_irqbalance_away = b;
                } else {
                        unknown_key(kv, "irq", keys, ELEMENTSOF(keys), d);
                        r = -EINVAL;
                }
        }
        if (pl) {
                if (!expect_string(pl, "placement", d))
                        return -EINVAL;
                p->placement = irq_placement_from_string(pl->scalar);
                if (p->placement == IRQ_PLACEMENT_UNSET)
                        return diag_add(d, &pl->mark,
                                        "invalid placement '%s': expected queue-local, node-local, spread, cpus or leave",
                                        pl->scalar);
                if (mark_copy(&p->origin, &pl->mark) < 0)
                        return -ENOMEM;
        }
        if (cpus) {
                CpuSet s = {};
                if (!expect_string(cpus, "cpus", d))
                        return -EINVAL;
                if (cpuset_parse(cpus->scalar, &s) < 0 || cpuset_count(&s) == 0) {
                        cpuset_done(&s);
                        return diag_add(d, &cpus->mark, "invalid cpus '%s': expected a non-empty cpulist such as 2-7,10",
                                        cpus->scalar);
                }
                free(p->cpus);
                r = cpuset_format(&s, &p->cpus) < 0 ? -ENOMEM : r;
                cpuset_done(&s);
                if (r == -ENOMEM)
                        return r;
                if (!pl) {
                        p->placement = IRQ_PLACEMENT_CPUS; /* `cpus:` alone means placement: cpus */
                        if (mark_copy(&p->origin, &cpus->mark) < 0)
                                return -ENOMEM;
                } else if (p->placement != IRQ_PLACEMENT_CPUS)
                        return diag_add(d, &cpus->mark, "'cpus' only goes with placement: cpus (placement is %s)",
                                        irq_placement_to_string(p->placement));
        } else if (p->placement == IRQ_PLACEMENT_CPUS)
                return diag_add(d, &pl->mark, "placement: cpus needs a 'cpus: \"LIST\"' key");
        return r;
}

/* The sections a profile (and a rule's `set:`) may have. Only sections whose knobs
 * exist are accepted: a key we would silently ignore is worse than an error. */
static int parse_knob_sections(const YNode *pair_value, const char *key, Value values[_KNOB_MAX], IrqPolicy *irq,
                               Value *nvme_apply, Diag *d, bool *handled) {
        *handled = streq(key, "queue") || streq(key, "irq") || streq(key, "nvme");
        if (streq(key, "irq"))
                return parse_irq_section(pair_value, irq, d);
        if (!*handled)
                return 0;
        return parse_knob_section(pair_value, key, values, streq(key, "nvme") ? nvme_apply : NULL, d);
}

/* ---- profiles ---------------------------------------------------------------- */

static int parse_profile(const YNode *root, const char *path, const char *basename_name, Profile **ret, Diag *d) {
        static const char *const keys[] = { "name", "description", "extends", "queue", "irq", "nvme" };
        _cleanup_(profile_freep) Profile *p = NULL;
        int r = 0;

        p = calloc(1, sizeof(Profile));
        if (!p)
                return -ENOMEM;
        p->irq.keep_irqbalance_away = p->irq_resolved.keep_irqbalance_away = -1;
        p->path = strdup(path);
        p->name = strdup(basename_name);
        if (!p->path || !p->name)
                return -ENOMEM;

        if (root) {
                if (!expect_kind(root, YNODE_MAPPING, "profile", d))
                        return -EINVAL;
                for (size_t i = 0; i < root->n_pairs; i++) {
                        const YPair *kv = &root->pairs[i];
                        const char *key = kv->key->scalar;
                        bool handled;

                        if (streq(key, "name")) {
                                if (!expect_string(kv->value, "name", d))
                                        r = -EINVAL;
                                else if (!streq(kv->value->scalar, basename_name))
                                        r = diag_add(d, &kv->value->mark,
                                                     "profile name '%s' does not match its file name (expected '%s')",
                                                     kv->value->scalar, basename_name);
                        } else if (streq(key, "description")) {
                                if (!expect_string(kv->value, "description", d))
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
                                if (parse_profile_name(kv->value, "extends", &p->extends, d) < 0)
                                        r = -EINVAL;
                                else if (mark_copy(&p->extends_mark, &kv->value->mark) < 0)
                                        return -ENOMEM;
                        } else {
                                int q = parse_knob_sections(kv->value, key, p->knobs, &p->irq, &p->nvme_apply, d, &handled);
                                if (q == -ENOMEM)
                                        return q;
                                if (q < 0)
                                        r = q;
                                if (!handled) {
                                        unknown_key(kv, "profile", keys, ELEMENTSOF(keys), d);
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
        Profile **p = bsearch(name, c->profiles_by_name, c->n_profiles, sizeof(Profile *), cmp_name_profile);
        return p ? p - c->profiles_by_name : -1;
}

/* Check every `extends:` reference: the parent exists, the chain never comes back
 * to where it started (each profile of a cycle is reported at its own line) and is
 * at most CONFIG_MAX_EXTENDS_CHAIN profiles long. Linear in the number of profiles
 * (plus the lookups): every profile is walked once and its chain length kept.
 * Works on indexes into profiles_by_name; reports in file order. */
static int check_extends(Config *c, Diag *d) {
        enum { NEW, ON_PATH, DONE, CYCLE, BAD };
        size_t n = c->n_profiles;
        _cleanup_free_ ssize_t *parent = calloc(n ?: 1, sizeof(ssize_t));
        _cleanup_free_ size_t *path = calloc(n ?: 1, sizeof(size_t));
        _cleanup_free_ unsigned *depth = calloc(n ?: 1, sizeof(unsigned));
        _cleanup_free_ unsigned char *state = calloc(n ?: 1, 1);
        int r = 0;

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
static int resolve_profile(Config *c, Profile *p) {
        Profile *parent = p->extends ? find_profile_mut(c, p->extends) : NULL;
        int r;

        /* A parent is resolved first through its child; resolving it again would
         * copy its values a second time over the first (and lose those). */
        if (p->resolved_done)
                return 0;
        if (parent && !parent->resolved_done) {
                r = resolve_profile(c, parent);
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

/* Absolute, and no "." or ".." component, no empty one ("//"), no trailing "/". */
static bool path_is_normalized(const char *p) {
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

/* ---- rules ------------------------------------------------------------------- */

/* Why a pattern can never match anything, or NULL. fnmatch(3) takes an unclosed
 * '[' literally, and no kernel name, model or udev value contains one by accident:
 * such a pattern is a typo, and a rule that silently matches nothing is worse
 * than an error. */
static const char *glob_never_matches(const char *g) {
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
        const char *why = glob_never_matches(n->scalar);
        if (why)
                return diag_add(d, &n->mark, "invalid pattern '%s' for '%s': %s", n->scalar, what, why);
        return 0;
}

static int dup_glob(const YNode *n, const char *what, char **ret, Diag *d) {
        if (!expect_string(n, what, d))
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

        if (!expect_kind(n, YNODE_MAPPING, "size", d))
                return -EINVAL;
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                uint64_t v;
                if (!streq(p->key->scalar, "min") && !streq(p->key->scalar, "max")) {
                        static const char *const keys[] = { "min", "max" };
                        unknown_key(p, "size", keys, 2, d);
                        return -EINVAL;
                }
                if (!expect_string(p->value, p->key->scalar, d))
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

        if (!expect_kind(n, YNODE_MAPPING, "match", d))
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
                        q = parse_bool_node(p->value, key, &b, d);
                        if (q == 0)
                                m->rotational = b ? TRI_TRUE : TRI_FALSE;
                } else if (streq(key, "numa_node")) {
                        int v;
                        if (!expect_string(p->value, key, d))
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
                        if (!expect_kind(p->value, YNODE_MAPPING, "udev", d))
                                q = -EINVAL;
                        else {
                                m->udev = calloc(p->value->n_pairs ?: 1, sizeof(UdevMatch));
                                if (!m->udev)
                                        return -ENOMEM;
                                for (size_t j = 0; j < p->value->n_pairs; j++) {
                                        const YPair *u = &p->value->pairs[j];
                                        if (!expect_string(u->value, u->key->scalar, d) ||
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
                        unknown_key(p, "match", keys, ELEMENTSOF(keys), d);
                        q = -EINVAL;
                }
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        r = q;
        }
        return r;
}

static int parse_rule(const YNode *n, Rule *rule, Diag *d) {
        static const char *const keys[] = { "name", "match", "profile", "exclude", "set" };
        bool has_match = false;
        int r = 0;

        rule->match.rotational = TRI_UNSET;
        rule->set_irq.keep_irqbalance_away = -1;
        if (mark_copy(&rule->mark, &n->mark) < 0)
                return -ENOMEM;
        if (!expect_kind(n, YNODE_MAPPING, "rule", d)) {
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
                        q = parse_profile_name(p->value, "profile", &rule->profile, d);
                        if (q == 0 && mark_copy(&rule->profile_mark, &p->value->mark) < 0)
                                return -ENOMEM;
                } else if (streq(key, "exclude"))
                        q = parse_bool_node(p->value, key, &rule->exclude, d);
                else if (streq(key, "set")) {
                        if (!expect_kind(p->value, YNODE_MAPPING, "set", d))
                                q = -EINVAL;
                        else
                                for (size_t j = 0; j < p->value->n_pairs; j++) {
                                        const YPair *s = &p->value->pairs[j];
                                        bool handled;
                                        int t = parse_knob_sections(s->value, s->key->scalar, rule->set, &rule->set_irq,
                                                                      &rule->set_nvme_apply, d, &handled);
                                        if (t == -ENOMEM)
                                                return t;
                                        if (!handled) {
                                                static const char *const sections[] = { "queue", "irq", "nvme" };
                                                unknown_key(s, "set", sections, ELEMENTSOF(sections), d);
                                                t = -EINVAL;
                                        }
                                        if (t < 0)
                                                q = t;
                                }
                } else {
                        unknown_key(p, "rule", keys, ELEMENTSOF(keys), d);
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

/* One main-config or drop-in file. Rules land in `*rules` in file order; `*reset`
 * says the file set `rules: []`, clearing rules from files read before it. */
typedef struct FileConfig {
        char *default_profile;
        Mark default_profile_mark;
        Rule *rules;
        size_t n_rules;
        bool rules_set;
        int discover[_DISCOVERY_MAX]; /* -1 unset */
        uint64_t reassert_usec;       /* 0 unset */
        int restore_on_stop;          /* -1 unset */
        char *metrics_textfile;       /* NULL unset, "" = off */
} FileConfig;

static void file_config_done(FileConfig *f) {
        free(f->default_profile);
        free(f->metrics_textfile);
        mark_done(&f->default_profile_mark);
        for (size_t i = 0; i < f->n_rules; i++)
                rule_done(&f->rules[i]);
        free(f->rules);
}

static int parse_main(const YNode *root, FileConfig *fc, Diag *d) {
        static const char *const keys[] = { "default_profile", "rules", "discovery", "reassert",
                                            "restore_on_stop", "metrics" };
        int r = 0;

        fc->restore_on_stop = -1;
        for (size_t i = 0; i < _DISCOVERY_MAX; i++)
                fc->discover[i] = -1;
        if (!root)
                return 0;
        if (!expect_kind(root, YNODE_MAPPING, "configuration", d))
                return -EINVAL;

        for (size_t i = 0; i < root->n_pairs; i++) {
                const YPair *p = &root->pairs[i];
                const char *key = p->key->scalar;
                int q = 0;

                if (streq(key, "default_profile")) {
                        q = parse_profile_name(p->value, key, &fc->default_profile, d);
                        if (q == 0 && mark_copy(&fc->default_profile_mark, &p->value->mark) < 0)
                                return -ENOMEM;
                } else if (streq(key, "rules")) {
                        fc->rules_set = true;
                        if (ynode_is_null(p->value) && p->value->kind == YNODE_SCALAR)
                                continue; /* `rules:` alone: an empty list */
                        if (!expect_kind(p->value, YNODE_SEQUENCE, "rules", d)) {
                                r = -EINVAL;
                                continue;
                        }
                        fc->rules = calloc(p->value->n_items ?: 1, sizeof(Rule));
                        if (!fc->rules)
                                return -ENOMEM;
                        for (size_t j = 0; j < p->value->n_items; j++) {
                                int t = parse_rule(p->value->items[j], &fc->rules[fc->n_rules++], d);
                                if (t == -ENOMEM)
                                        return t;
                                if (t < 0)
                                        q = t;
                        }
                } else if (streq(key, "discovery")) {
                        if (!expect_kind(p->value, YNODE_MAPPING, "discovery", d)) {
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
                                        unknown_key(c, "discovery", discovery_class_names, _DISCOVERY_MAX, d);
                                        q = -EINVAL;
                                } else if (parse_bool_node(c->value, c->key->scalar, &b, d) < 0)
                                        q = -EINVAL;
                                else
                                        fc->discover[k] = b;
                        }
                } else if (streq(key, "reassert")) {
                        const YNode *iv;
                        if (!expect_kind(p->value, YNODE_MAPPING, "reassert", d)) {
                                r = -EINVAL;
                                continue;
                        }
                        for (size_t j = 0; j < p->value->n_pairs; j++)
                                if (!streq(p->value->pairs[j].key->scalar, "interval")) {
                                        static const char *const rk[] = { "interval" };
                                        unknown_key(&p->value->pairs[j], "reassert", rk, 1, d);
                                        q = -EINVAL;
                                }
                        iv = ynode_get(p->value, "interval");
                        if (iv && expect_string(iv, "interval", d)) {
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
                        if (!expect_kind(p->value, YNODE_MAPPING, "metrics", d)) {
                                r = -EINVAL;
                                continue;
                        }
                        for (size_t j = 0; j < p->value->n_pairs; j++)
                                if (!streq(p->value->pairs[j].key->scalar, "textfile")) {
                                        unknown_key(&p->value->pairs[j], "metrics", mk, 1, d);
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
                        q = parse_bool_node(p->value, key, &b, d);
                        if (q == 0)
                                fc->restore_on_stop = b;
                } else {
                        unknown_key(p, "configuration", keys, ELEMENTSOF(keys), d);
                        q = -EINVAL;
                }
                if (q == -ENOMEM)
                        return q;
                if (q < 0)
                        r = q;
        }
        return r;
}

/* ---- file collection with systemd precedence -------------------------------- */

typedef struct ConfFile {
        char *name;        /* basename, the override key */
        char *path;        /* shown in marks; BUILTIN_PREFIX/... for embedded */
        const char *text;  /* embedded contents, or NULL to read `path` */
        bool masked;
} ConfFile;

typedef struct ConfFiles {
        ConfFile *items;
        size_t n;
} ConfFiles;

static void conf_files_done(ConfFiles *f) {
        for (size_t i = 0; i < f->n; i++) {
                free(f->items[i].name);
                free(f->items[i].path);
        }
        free(f->items);
}

/* A symbolic link that resolves to /dev/null, however it is spelled
 * ("/dev/null", "../../dev/null", a link to a link to it), masks the name. */
static bool is_masked(const char *path) {
        _cleanup_free_ char *target = NULL;
        struct stat st;

        if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode))
                return false;
        target = realpath(path, NULL);
        return target && streq(target, "/dev/null");
}

/* A directory configuration is read from: root's (see ynode_check_owner()). Each
 * directory once per load (`checked`), so a bad /etc/iotuned is one error, not one
 * per role. */
static int check_dir(const char *path, char ***checked, Diag *d) {
        struct stat st;
        if (strv_contains(*checked, path))
                return 0;
        if (strv_extend(checked, path) < 0)
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return 0; /* it was just read; gone meanwhile: nothing read from it */
        return ynode_check_owner(path, &st, d);
}

static int conf_files_add(ConfFiles *f, const char *name, const char *path, const char *text, bool masked) {
        ConfFile *n;
        for (size_t i = 0; i < f->n; i++)
                if (streq(f->items[i].name, name))
                        return 0; /* a more important directory already has this name */
        n = realloc(f->items, (f->n + 1) * sizeof(ConfFile));
        if (!n)
                return -ENOMEM;
        f->items = n;
        n[f->n] = (ConfFile) { .name = strdup(name), .path = strdup(path), .text = text, .masked = masked };
        if (!n[f->n].name || !n[f->n].path) {
                free(n[f->n].name);
                free(n[f->n].path);
                return -ENOMEM;
        }
        f->n++;
        return 0;
}

static int cmp_conf_file(const void *a, const void *b) {
        return strcmp(((const ConfFile *) a)->name, ((const ConfFile *) b)->name);
}

/* Collect the *.yaml files of `subdir` (or the single file `single`) over all directories.
 * Hidden files (".name") are skipped, as systemd does; "*.yml" files are an error (a
 * likely typo that would otherwise be silently ignored); so is a file where the
 * directory should be. A directory something is read from, and for a subdirectory
 * the configuration directory above it, must pass ynode_check_owner(). -EINVAL
 * (with the diagnostic) when there are more than CONFIG_MAX_FILES files. */
static int collect(const ConfigPaths *paths, const char *subdir, const char *single, ConfFiles *out,
                   char ***checked, Diag *d) {
        int r;

        for (char **dir = paths->dirs; dir && *dir; dir++) {
                _cleanup_free_ char *base = subdir ? path_join(*dir, subdir) : strdup(*dir);
                bool dir_checked = false;
                DIR *dh;
                struct dirent *de;

                if (!base)
                        return -ENOMEM;
                if (single) {
                        _cleanup_free_ char *p = path_join(base, single);
                        struct stat st;
                        if (!p)
                                return -ENOMEM;
                        if (lstat(p, &st) < 0) {
                                if (errno == ENOTDIR)
                                        diag_add_file(d, base, "not a directory");
                                continue;
                        }
                        r = check_dir(base, checked, d);
                        if (r == -ENOMEM)
                                return r;
                        r = conf_files_add(out, single, p, NULL, is_masked(p));
                        if (r < 0)
                                return r;
                        continue;
                }
                dh = opendir(base);
                if (!dh) {
                        struct stat st;
                        int e = errno;
                        /* (a configuration directory that is a file was reported as
                         * such with the main file: stat() fails with ENOTDIR then) */
                        if (e == ENOTDIR) {
                                if (stat(base, &st) == 0)
                                        diag_add_file(d, base, "not a directory; expected a directory of *.yaml files");
                        } else if (e != ENOENT)
                                diag_add_file(d, base, "cannot read directory: %s", strerror(e));
                        continue;
                }
                while ((de = readdir(dh))) {
                        _cleanup_free_ char *p = NULL;
                        if (de->d_name[0] == '.')
                                continue;
                        if (str_endswith(de->d_name, ".yml")) {
                                p = path_join(base, de->d_name);
                                if (!p) {
                                        closedir(dh);
                                        return -ENOMEM;
                                }
                                diag_add_file(d, p, "only *.yaml files are read; rename it to %.*s.yaml (or move it "
                                              "away)", (int) (strlen(de->d_name) - 4), de->d_name);
                                continue;
                        }
                        if (!str_endswith(de->d_name, ".yaml"))
                                continue;
                        if (!dir_checked) {
                                dir_checked = true;
                                if (check_dir(*dir, checked, d) == -ENOMEM ||
                                    check_dir(base, checked, d) == -ENOMEM) {
                                        closedir(dh);
                                        return -ENOMEM;
                                }
                        }
                        p = path_join(base, de->d_name);
                        if (!p || conf_files_add(out, de->d_name, p, NULL, is_masked(p)) < 0) {
                                closedir(dh);
                                return -ENOMEM;
                        }
                        if (out->n > CONFIG_MAX_FILES) {
                                closedir(dh);
                                return diag_add_file(d, base, "more than %u files in %s/ (over all configuration "
                                                     "directories); refusing the configuration",
                                                     CONFIG_MAX_FILES, subdir);
                        }
                }
                closedir(dh);
        }

        if (paths->builtin)
                for (size_t i = 0; i < builtin_files_count; i++) {
                        const char *rel = builtin_files[i].path, *name = strrchr(rel, '/');
                        _cleanup_free_ char *shown = NULL;
                        name = name ? name + 1 : rel;
                        if (single ? !streq(rel, single)
                                   : !(subdir && str_startswith(rel, subdir) && rel[strlen(subdir)] == '/' &&
                                       !strchr(rel + strlen(subdir) + 1, '/')))
                                continue;
                        shown = path_join(BUILTIN_PREFIX, rel);
                        if (!shown || conf_files_add(out, name, shown, builtin_files[i].contents, false) < 0)
                                return -ENOMEM;
                }

        if (out->n > CONFIG_MAX_FILES)
                return diag_add(d, NULL, "more than %u files in %s/ (built-in ones included); refusing the "
                                "configuration", CONFIG_MAX_FILES, subdir);
        if (out->n > 1)
                qsort(out->items, out->n, sizeof(ConfFile), cmp_conf_file);
        return 0;
}

static int parse_conf_file(const ConfFile *f, YNode **ret, Diag *d) {
        if (f->text)
                return ynode_parse_string(f->text, strlen(f->text), f->path, ret, d);
        return ynode_parse_file(f->path, ret, d);
}

/* ---- the loader -------------------------------------------------------------- */

static int merge_file(Config *c, FileConfig *fc, Rule **all_rules, size_t *n_all) {
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

int config_load(const ConfigPaths *paths, Config **ret, Diag *d) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfFiles mains = {}, dropins = {}, profiles = {};
        char **checked_dirs = NULL;
        size_t diag_before = d->n + d->n_dropped;
        int r = 0;

        c = calloc(1, sizeof(Config));
        if (!c)
                return -ENOMEM;
        c->reassert_usec = DEFAULT_REASSERT_USEC;
        c->restore_on_stop = true;

        r = collect(paths, NULL, MAIN_CONFIG, &mains, &checked_dirs, d);
        if (r >= 0)
                r = collect(paths, DROPIN_DIR, NULL, &dropins, &checked_dirs, d);
        if (r >= 0)
                r = collect(paths, PROFILE_DIR, NULL, &profiles, &checked_dirs, d);
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
                        q = parse_conf_file(&set->items[i], &root, d);
                        if (q == -ENOMEM) {
                                r = q;
                                goto finish;
                        }
                        if (q == 0) {
                                /* Merge even a file with errors: the load fails anyway, and
                                 * its references still get checked, so one run shows all. */
                                q = parse_main(root, &fc, d);
                                if (q != -ENOMEM)
                                        q = merge_file(c, &fc, &c->rules, &c->n_rules);
                                if (q != -ENOMEM && c->n_rules > CONFIG_MAX_RULES) {
                                        /* this file's rules went first (see merge_file()) */
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
                if (!valid_profile_name(pname)) {
                        diag_add_file(d, profiles.items[i].path,
                                      "invalid profile file name: expected lowercase letters, digits, '-' and '_' before .yaml");
                        continue;
                }
                q = parse_conf_file(&profiles.items[i], &root, d);
                if (q == 0)
                        q = parse_profile(root, profiles.items[i].path, pname, &p, d);
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
                qsort(c->profiles_by_name, c->n_profiles, sizeof(Profile *), cmp_profile_name);
        r = check_extends(c, d);
        if (r == -ENOMEM)
                goto finish;
        if (r == 0)
                for (size_t i = 0; i < c->n_profiles; i++) {
                        r = resolve_profile(c, c->profiles[i]);
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

int config_parse_main_file(const char *path, Config *into, Diag *d) {
        _cleanup_(ynode_freep) YNode *root = NULL;
        FileConfig fc = {};
        int r;

        r = ynode_parse_file(path, &root, d);
        if (r < 0)
                return r;
        r = parse_main(root, &fc, d);
        if (r == 0)
                r = merge_file(into, &fc, &into->rules, &into->n_rules);
        file_config_done(&fc);
        return r;
}
